// A pod's claims and their classification (upstream volume_binding.go podHasPVCs, binder.go GetPodVolumeClaims).
import { ephemeralClaimName } from '../cache/pod-usage.ts';
import type { PersistentVolumeClaim, Pod, StorageClass } from '../cluster/types.ts';
import { ANN_BIND_COMPLETED, VOLUME_BINDING_WAIT } from './constants.ts';
import { claimClass } from './pv-matching.ts';

export interface PodClaimRef {
  /** The claim's name: `claimName`, or `<pod>-<volume>` for a generic ephemeral volume. */
  name: string;
  ephemeral: boolean;
}

/** The pod's claim references, in volume order (other volume types are not claims). */
export function podClaimRefs(pod: Pod): PodClaimRef[] {
  const out: PodClaimRef[] = [];
  for (const v of pod.spec.volumes ?? []) {
    if (v.persistentVolumeClaim) out.push({ name: v.persistentVolumeClaim.claimName, ephemeral: false });
    else if (v.ephemeral) out.push({ name: ephemeralClaimName(pod, v.name), ephemeral: true });
  }
  return out;
}

export function hasClaims(pod: Pod): boolean {
  return (pod.spec.volumes ?? []).some((v) => v.persistentVolumeClaim !== undefined || v.ephemeral !== undefined);
}

/** ephemeral.VolumeIsForPod: the claim must be controlled by the pod; returns the error text, if any. */
export function ephemeralOwnershipError(pod: Pod, pvc: PersistentVolumeClaim): string | undefined {
  const owned = (pvc.metadata.ownerReferences ?? []).some((r) => r.controller === true && r.uid === pod.metadata.uid);
  if (pvc.metadata.namespace !== pod.metadata.namespace || !owned) {
    return `PVC ${pvc.metadata.namespace}/${pvc.metadata.name} was not created for pod ${pod.metadata.namespace}/${pod.metadata.name} (pod is not owner)`;
  }
  return undefined;
}

/**
 * podHasPVCs: the first claim that makes the pod unschedulable everywhere, as upstream words it.
 * `lookup` gets a claim name in the pod's namespace.
 */
export function podClaimsError(
  pod: Pod,
  lookup: (name: string) => PersistentVolumeClaim | undefined,
): string | undefined {
  for (const ref of podClaimRefs(pod)) {
    const pvc = lookup(ref.name);
    if (!pvc) {
      return ref.ephemeral
        ? `waiting for ephemeral volume controller to create the persistentvolumeclaim "${ref.name}"`
        : `persistentvolumeclaim "${ref.name}" not found`;
    }
    if (pvc.status?.phase === 'Lost') {
      return `persistentvolumeclaim "${pvc.metadata.name}" bound to non-existent persistentvolume "${pvc.spec.volumeName ?? ''}"`;
    }
    if (pvc.metadata.deletionTimestamp) return `persistentvolumeclaim "${pvc.metadata.name}" is being deleted`;
    if (ref.ephemeral) {
      const err = ephemeralOwnershipError(pod, pvc);
      if (err) return err;
    }
  }
  return undefined;
}

/** isPVCFullyBound. */
export function isClaimFullyBound(pvc: PersistentVolumeClaim): boolean {
  return !!pvc.spec.volumeName && Object.hasOwn(pvc.metadata.annotations ?? {}, ANN_BIND_COMPLETED);
}

export class ClaimError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClaimError';
  }
}

/**
 * IsDelayBindingMode: class "" or missing → immediate; a class without volumeBindingMode is an error.
 */
export function isDelayBindingMode(
  pvc: PersistentVolumeClaim,
  getClass: (name: string) => StorageClass | undefined,
): boolean {
  const name = claimClass(pvc);
  if (name === '') return false;
  const sc = getClass(name);
  if (!sc) return false;
  if (!sc.volumeBindingMode) throw new ClaimError(`VolumeBindingMode not set for StorageClass "${name}"`);
  return sc.volumeBindingMode === VOLUME_BINDING_WAIT;
}

export interface PodVolumeClaims {
  boundClaims: PersistentVolumeClaim[];
  /** Unbound claims of WaitForFirstConsumer classes with no volumeName: the scheduler binds them. */
  unboundClaimsDelayBinding: PersistentVolumeClaim[];
  /** Everything else that is unbound, pre-bound claims included: the PV controller should have bound them. */
  unboundClaimsImmediate: PersistentVolumeClaim[];
}

/**
 * GetPodVolumeClaims, reading claims through `lookup` (the PVC assume cache). Throws ClaimError for a missing claim,
 * a foreign ephemeral claim or a class without binding mode.
 */
export function getPodVolumeClaims(
  pod: Pod,
  lookup: (name: string) => PersistentVolumeClaim | undefined,
  getClass: (name: string) => StorageClass | undefined,
): PodVolumeClaims {
  const out: PodVolumeClaims = { boundClaims: [], unboundClaimsDelayBinding: [], unboundClaimsImmediate: [] };
  for (const ref of podClaimRefs(pod)) {
    const pvc = lookup(ref.name);
    if (!pvc) {
      const key = `${pod.metadata.namespace}/${ref.name}`;
      throw new ClaimError(`error getting PVC "${key}": could not find v1.PersistentVolumeClaim "${key}"`);
    }
    if (ref.ephemeral) {
      const err = ephemeralOwnershipError(pod, pvc);
      if (err) throw new ClaimError(err);
    }
    if (isClaimFullyBound(pvc)) {
      out.boundClaims.push(pvc);
    } else if (isDelayBindingMode(pvc, getClass) && !pvc.spec.volumeName) {
      out.unboundClaimsDelayBinding.push(pvc);
    } else {
      out.unboundClaimsImmediate.push(pvc);
    }
  }
  return out;
}
