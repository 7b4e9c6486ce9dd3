// The volume annotations and storage-class rules shared by the scheduler side (volumes/) and the simulated PV
// controller and provisioner (cluster/state-file), kept at the lowest layer so both read them the same way.
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from './types.ts';

export const ANN_BIND_COMPLETED = 'pv.kubernetes.io/bind-completed';
export const ANN_BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';
export const ANN_SELECTED_NODE = 'volume.kubernetes.io/selected-node';
export const ANN_BETA_STORAGE_CLASS = 'volume.beta.kubernetes.io/storage-class';
export const ANN_STORAGE_PROVISIONER = 'volume.kubernetes.io/storage-provisioner';
export const ANN_BETA_STORAGE_PROVISIONER = 'volume.beta.kubernetes.io/storage-provisioner';

/** The provisioner of classes whose volumes are created by hand (local PVs): nothing is ever provisioned. */
const NOT_SUPPORTED_PROVISIONER = 'kubernetes.io/no-provisioner';

/** Whether a class provisions volumes dynamically: its provisioner is neither empty nor the no-provisioner. */
export function hasProvisioner(sc: StorageClass): boolean {
  const provisioner = sc.provisioner ?? '';
  return provisioner !== '' && provisioner !== NOT_SUPPORTED_PROVISIONER;
}

/** GetPersistentVolumeClaimClass: the beta annotation wins over spec.storageClassName, even when empty. */
export function claimClass(pvc: PersistentVolumeClaim): string {
  const ann = pvc.metadata.annotations;
  if (ann && Object.hasOwn(ann, ANN_BETA_STORAGE_CLASS)) return ann[ANN_BETA_STORAGE_CLASS];
  return pvc.spec.storageClassName ?? '';
}

/**
 * The API server defaults volumeMode to Filesystem; objects from a file or the wire may leave it out. A known mode
 * comes back as our own constant string, so free PVs' and claims' modes compare by reference in filter's per-node
 * walk instead of reading a string parsed from each object.
 */
export function volumeModeOf(obj: PersistentVolume | PersistentVolumeClaim): string {
  const mode = obj.spec.volumeMode;
  if (mode === undefined || mode === 'Filesystem') return 'Filesystem';
  return mode === 'Block' ? 'Block' : mode;
}

/** GetPersistentVolumeClass, the same rule for a volume. */
export function pvClass(pv: PersistentVolume): string {
  const ann = pv.metadata.annotations;
  if (ann && Object.hasOwn(ann, ANN_BETA_STORAGE_CLASS)) return ann[ANN_BETA_STORAGE_CLASS];
  return pv.spec.storageClassName ?? '';
}
