// Matching a claim to a static PV: component-helpers storage/volume pv_helpers.go (FindMatchingVolume and friends).
import { parseValue } from '../cluster/quantity.ts';
import type { ObjectReference, PersistentVolume, PersistentVolumeClaim } from '../cluster/types.ts';
import { ANN_BETA_STORAGE_CLASS, ANN_BOUND_BY_CONTROLLER } from './constants.ts';
import { matchLabelSelector } from './label-selector.ts';
import { pvNodeAffinityMatches } from './node-affinity.ts';

/** The beta annotation wins over spec.storageClassName, even when empty. */
export function claimClass(pvc: PersistentVolumeClaim): string {
  const ann = pvc.metadata.annotations;
  if (ann && Object.hasOwn(ann, ANN_BETA_STORAGE_CLASS)) return ann[ANN_BETA_STORAGE_CLASS];
  return pvc.spec.storageClassName ?? '';
}

export function pvClass(pv: PersistentVolume): string {
  const ann = pv.metadata.annotations;
  if (ann && Object.hasOwn(ann, ANN_BETA_STORAGE_CLASS)) return ann[ANN_BETA_STORAGE_CLASS];
  return pv.spec.storageClassName ?? '';
}

/** Requested storage in bytes (0 when the claim asks for none). */
export function requestedStorage(pvc: PersistentVolumeClaim): number {
  const q = pvc.spec.resources?.requests?.storage;
  return q === undefined ? 0 : parseValue(q);
}

const capacityOf = new WeakMap<PersistentVolume, number>();

/** Capacity in bytes, memoised per object: the matching loop reads it for every candidate. */
export function pvCapacity(pv: PersistentVolume): number {
  let bytes = capacityOf.get(pv);
  if (bytes === undefined) {
    const q = pv.spec.capacity?.storage;
    bytes = q === undefined ? 0 : parseValue(q);
    capacityOf.set(pv, bytes);
  }
  return bytes;
}

export function claimKey(pvc: { metadata: { namespace?: string; name: string } }): string {
  return `${pvc.metadata.namespace ?? 'default'}/${pvc.metadata.name}`;
}

/** IsVolumeBoundToClaim: name and namespace must match; the uid too when the claimRef carries one. */
export function isVolumeBoundToClaim(pv: PersistentVolume, pvc: PersistentVolumeClaim): boolean {
  const ref = pv.spec.claimRef;
  if (!ref) return false;
  if (ref.name !== pvc.metadata.name || (ref.namespace ?? '') !== (pvc.metadata.namespace ?? '')) return false;
  return !ref.uid || ref.uid === pvc.metadata.uid;
}

/** CheckVolumeModeMismatches: nil volumeMode means Filesystem on both sides. */
export function volumeModeMismatches(pvc: PersistentVolumeClaim, pv: PersistentVolume): boolean {
  return (pvc.spec.volumeMode ?? 'Filesystem') !== (pv.spec.volumeMode ?? 'Filesystem');
}

export function volumeAttributesClassMismatches(pvc: PersistentVolumeClaim, pv: PersistentVolume): boolean {
  return (pvc.spec.volumeAttributesClassName ?? '') !== (pv.spec.volumeAttributesClassName ?? '');
}

/** CheckAccessModes: the PV offers every mode the claim asks for. */
export function accessModesSatisfied(pvc: PersistentVolumeClaim, pv: PersistentVolume): boolean {
  const offered = pv.spec.accessModes ?? [];
  return (pvc.spec.accessModes ?? []).every((m) => offered.includes(m));
}

/** reference.GetReference for a claim: the full reference the PV controller expects in claimRef. */
export function claimReference(pvc: PersistentVolumeClaim): ObjectReference {
  return {
    kind: 'PersistentVolumeClaim',
    apiVersion: 'v1',
    namespace: pvc.metadata.namespace ?? 'default',
    name: pvc.metadata.name,
    uid: pvc.metadata.uid,
    resourceVersion: pvc.metadata.resourceVersion,
  };
}

/**
 * GetBindVolumeToClaim: a copy of the PV bound to the claim, with `bound-by-controller` unless the user pre-bound
 * it. `dirty` says whether anything changed.
 */
export function bindVolumeToClaim(
  pv: PersistentVolume,
  pvc: PersistentVolumeClaim,
): { pv: PersistentVolume; dirty: boolean } {
  const preBound = isVolumeBoundToClaim(pv, pvc);
  let dirty = false;
  let out: PersistentVolume = { ...pv, metadata: { ...pv.metadata }, spec: { ...pv.spec } };
  const ref = pv.spec.claimRef;
  if (
    !ref ||
    ref.name !== pvc.metadata.name ||
    ref.namespace !== pvc.metadata.namespace ||
    ref.uid !== pvc.metadata.uid
  ) {
    out.spec.claimRef = claimReference(pvc);
    dirty = true;
  }
  const ann = out.metadata.annotations;
  if (!preBound && !(ann && Object.hasOwn(ann, ANN_BOUND_BY_CONTROLLER))) {
    out = { ...out, metadata: { ...out.metadata, annotations: { ...ann, [ANN_BOUND_BY_CONTROLLER]: 'yes' } } };
    dirty = true;
  }
  return { pv: out, dirty };
}

/** Per-claim values FindMatchingVolume computes once, so the per-PV loop stays cheap. */
export interface ClaimMatchInput {
  pvc: PersistentVolumeClaim;
  request: number;
  className: string;
}

export function claimMatchInput(pvc: PersistentVolumeClaim): ClaimMatchInput {
  return { pvc, request: requestedStorage(pvc), className: claimClass(pvc) };
}

/**
 * FindMatchingVolume in the scheduler path (node set, delayBinding true), over `candidates`: a PV pre-bound to the
 * claim decides alone (it is returned when its affinity holds, otherwise there is no match); else the smallest
 * Available PV that passes every check, the first one winning ties. Throws SelectorError on an invalid claim selector.
 */
export function findMatchingVolume(
  input: ClaimMatchInput,
  candidates: Iterable<PersistentVolume>,
  nodeLabels: Readonly<Record<string, string>> | undefined,
  excluded: ReadonlySet<string>,
): PersistentVolume | undefined {
  const { pvc, request, className } = input;
  const selector = pvc.spec.selector;
  let smallest: PersistentVolume | undefined;
  let smallestQty = 0;
  for (const pv of candidates) {
    if (excluded.has(pv.metadata.name)) continue;
    const boundToClaim = isVolumeBoundToClaim(pv, pvc);
    if (pv.spec.claimRef && !boundToClaim) continue;
    const qty = pvCapacity(pv);
    if (qty < request) continue;
    if (volumeModeMismatches(pvc, pv)) continue;
    if (volumeAttributesClassMismatches(pvc, pv)) continue;
    if (pv.metadata.deletionTimestamp) continue;
    if (boundToClaim) {
      // A pre-bound PV (user or earlier assumption) is the only candidate for its claim.
      return pvNodeAffinityMatches(pv, nodeLabels) ? pv : undefined;
    }
    if (pv.status?.phase !== 'Available') continue;
    if (selector && !matchLabelSelector(selector, pv.metadata.labels)) continue;
    if (pvClass(pv) !== className) continue;
    if (!pvNodeAffinityMatches(pv, nodeLabels)) continue;
    if (!accessModesSatisfied(pvc, pv)) continue;
    if (smallest === undefined || smallestQty > qty) {
      smallest = pv;
      smallestQty = qty;
    }
  }
  return smallest;
}
