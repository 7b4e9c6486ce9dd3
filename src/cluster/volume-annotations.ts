// The volume annotations and storage-class rule shared by the scheduler side (volumes/) and the simulated PV
// controller and provisioner (cluster/state-file), kept at the lowest layer so both read them the same way.
import type { PersistentVolume, PersistentVolumeClaim } from './types.ts';

export const ANN_BIND_COMPLETED = 'pv.kubernetes.io/bind-completed';
export const ANN_BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';
export const ANN_SELECTED_NODE = 'volume.kubernetes.io/selected-node';
export const ANN_BETA_STORAGE_CLASS = 'volume.beta.kubernetes.io/storage-class';

/** GetPersistentVolumeClaimClass: the beta annotation wins over spec.storageClassName, even when empty. */
export function claimClass(pvc: PersistentVolumeClaim): string {
  const ann = pvc.metadata.annotations;
  if (ann && Object.hasOwn(ann, ANN_BETA_STORAGE_CLASS)) return ann[ANN_BETA_STORAGE_CLASS];
  return pvc.spec.storageClassName ?? '';
}

/** GetPersistentVolumeClass, the same rule for a volume. */
export function pvClass(pv: PersistentVolume): string {
  const ann = pv.metadata.annotations;
  if (ann && Object.hasOwn(ann, ANN_BETA_STORAGE_CLASS)) return ann[ANN_BETA_STORAGE_CLASS];
  return pv.spec.storageClassName ?? '';
}
