// What the PV controller writes when it completes a binding (pv_controller.go bindVolumeToClaim / bindClaimToVolume
// and the status updates after them), as pure functions: each returns the updated copy, or undefined when nothing
// would change, so running them again is harmless.
import {
  DEFAULT_NAMESPACE,
  namespaceOf,
  type ObjectReference,
  type PersistentVolume,
  type PersistentVolumeClaim,
} from '../types.ts';
import { ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER } from '../volume-annotations.ts';

export function claimKey(ref: { namespace?: string; name?: string }): string {
  return `${ref.namespace || DEFAULT_NAMESPACE}/${ref.name}`;
}

export function claimReference(claim: PersistentVolumeClaim): ObjectReference {
  return {
    kind: 'PersistentVolumeClaim',
    namespace: namespaceOf(claim),
    name: claim.metadata.name,
    uid: claim.metadata.uid,
    apiVersion: 'v1',
    resourceVersion: claim.metadata.resourceVersion,
  };
}

/** The claim this PV is reserved for, by name, namespace and (when set) uid. */
export function volumeReservedFor(pv: PersistentVolume, claim: PersistentVolumeClaim): boolean {
  const ref = pv.spec.claimRef;
  if (!ref?.name || ref.name !== claim.metadata.name) return false;
  if ((ref.namespace || DEFAULT_NAMESPACE) !== namespaceOf(claim)) return false;
  return !ref.uid || ref.uid === claim.metadata.uid;
}

/** The PV side: a complete claimRef (the uid filled in), bound-by-controller when we completed it, phase Bound. */
export function bindVolume(pv: PersistentVolume, claim: PersistentVolumeClaim): PersistentVolume | undefined {
  const ref = pv.spec.claimRef;
  const complete = ref?.uid === claim.metadata.uid && volumeReservedFor(pv, claim);
  if (complete && pv.status?.phase === 'Bound') return undefined;
  const annotations = { ...pv.metadata.annotations };
  if (!complete) annotations[ANN_BOUND_BY_CONTROLLER] ??= 'yes';
  return {
    ...pv,
    metadata: { ...pv.metadata, annotations },
    spec: { ...pv.spec, claimRef: complete ? ref : claimReference(claim) },
    status: { ...pv.status, phase: 'Bound' },
  };
}

/** The claim side: volumeName (bound-by-controller when we set it), bind-completed, status Bound with the PV's size. */
export function bindClaim(claim: PersistentVolumeClaim, pv: PersistentVolume): PersistentVolumeClaim | undefined {
  const annotations = { ...claim.metadata.annotations };
  const named = claim.spec.volumeName === pv.metadata.name;
  if (named && annotations[ANN_BIND_COMPLETED] && claim.status?.phase === 'Bound') return undefined;
  if (!named) annotations[ANN_BOUND_BY_CONTROLLER] ??= 'yes';
  annotations[ANN_BIND_COMPLETED] ??= 'yes';
  const status: PersistentVolumeClaim['status'] = { ...claim.status, phase: 'Bound' };
  if (pv.spec.capacity) status.capacity = { ...pv.spec.capacity };
  if (pv.spec.accessModes) status.accessModes = [...pv.spec.accessModes];
  return {
    ...claim,
    metadata: { ...claim.metadata, annotations },
    spec: { ...claim.spec, volumeName: pv.metadata.name },
    status,
  };
}
