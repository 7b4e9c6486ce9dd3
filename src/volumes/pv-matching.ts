// Matching a claim to a static PV: component-helpers storage/volume pv_helpers.go (FindMatchingVolume and friends).

import { matchLabelSelector } from '../cluster/label-selector.ts';
import { parseValue } from '../cluster/quantity.ts';
import {
  type NodeSelector,
  namespaceOf,
  type ObjectReference,
  objectKey,
  type PersistentVolume,
  type PersistentVolumeClaim,
} from '../cluster/types.ts';
import { claimClass, pvClass, volumeModeOf } from '../cluster/volume-annotations.ts';
import { ANN_BOUND_BY_CONTROLLER } from './constants.ts';
import { matchNodeSelectorTerms, pvNodeAffinityMatches } from './node-affinity.ts';

export { claimClass, pvClass } from '../cluster/volume-annotations.ts';

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

/** The claim's store and assume-cache key, `namespace/name`. */
export function claimKey(pvc: { metadata: { namespace?: string; name: string } }): string {
  return objectKey('PersistentVolumeClaim', pvc);
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
  return volumeModeOf(pvc) !== volumeModeOf(pv);
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
    namespace: namespaceOf(pvc),
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
  readonly pvc: PersistentVolumeClaim;
  readonly request: number;
  readonly className: string;
  /** `namespace/name` as a PV's claimRef names it: the PV cache's by-claim index key. */
  readonly claimRefKey: string;
  readonly volumeMode: string;
  readonly attributesClass: string;
  /** Requested access modes as a bit set (see accessModeBits); -1 when one is not a known mode. */
  readonly accessModes: number;
  /** Per PV shape id (see pvShape): 1 when the shape offers what the claim asks, 2 when not; filled as read. */
  readonly accepts: number[];
}

const ACCESS_MODE_BITS = new Map([
  ['ReadWriteOnce', 1],
  ['ReadOnlyMany', 2],
  ['ReadWriteMany', 4],
  ['ReadWriteOncePod', 8],
]);

/** Access modes as a bit set; -1 when one is not a known mode (then only the lists can be compared). */
export function accessModeBits(modes: readonly string[] | undefined): number {
  let bits = 0;
  for (const mode of modes ?? []) {
    const bit = ACCESS_MODE_BITS.get(mode);
    if (bit === undefined) return -1;
    bits |= bit;
  }
  return bits;
}

const matchInputs = new WeakMap<PersistentVolumeClaim, ClaimMatchInput>();

/** Memoised per claim object (claims are replaced, never mutated, by updates and assumptions). */
export function claimMatchInput(pvc: PersistentVolumeClaim): ClaimMatchInput {
  let input = matchInputs.get(pvc);
  if (!input) {
    input = {
      pvc,
      request: requestedStorage(pvc),
      className: claimClass(pvc),
      claimRefKey: `${pvc.metadata.namespace ?? ''}/${pvc.metadata.name}`,
      volumeMode: volumeModeOf(pvc),
      attributesClass: pvc.spec.volumeAttributesClassName ?? '',
      accessModes: accessModeBits(pvc.spec.accessModes),
      accepts: [],
    };
    matchInputs.set(pvc, input);
  }
  return input;
}

/** A PV's volume mode, attributes class and access modes, the fields a claim without selector compares. */
interface PVShape {
  volumeMode: string;
  attributesClass: string;
  accessModes: number;
}

/** Shapes by id, process-wide: few distinct ones exist, so a free PV's row keeps a small integer instead. */
const shapes: PVShape[] = [];
const shapeIds = new Map<string, number>();

/** The shape id of these fields; -1 when an access mode is unknown (only the lists can be compared then). */
export function pvShape(volumeMode: string, attributesClass: string, accessModes: number): number {
  if (accessModes < 0) return -1;
  const key = `${volumeMode}\0${attributesClass}\0${accessModes}`;
  let id = shapeIds.get(key);
  if (id === undefined) {
    id = shapes.length;
    shapes.push({ volumeMode, attributesClass, accessModes });
    shapeIds.set(key, id);
  }
  return id;
}

/**
 * Whether a PV of this shape passes the claim's volume mode, attributes class and access mode checks; memoised on the
 * claim's input. The claim's access modes must be known (accessModes >= 0) and the shape valid.
 */
export function shapeAccepted(input: ClaimMatchInput, shape: number): boolean {
  let verdict = input.accepts[shape];
  if (verdict === undefined) {
    const s = shapes[shape];
    const ok =
      s.volumeMode === input.volumeMode &&
      s.attributesClass === input.attributesClass &&
      (input.accessModes & ~s.accessModes) === 0;
    verdict = ok ? 1 : 2;
    input.accepts[shape] = verdict;
  }
  return verdict === 1;
}

/**
 * Why FindMatchingVolume passed over a PV for a claim on a node, one code per check in upstream's order. The first
 * two are the excluded set: chosen for another claim of the pod, or held back for a pod nominated to a node.
 */
export type PVRefusal =
  | 'ChosenForAnotherClaim'
  | 'HeldForNominatedPod'
  | 'ClaimedByAnotherClaim'
  | 'TooSmall'
  | 'VolumeModeMismatch'
  | 'VolumeAttributesClassMismatch'
  | 'BeingDeleted'
  | 'PreBoundNodeAffinityMismatch'
  | 'NotAvailable'
  | 'SelectorMismatch'
  | 'StorageClassMismatch'
  | 'NodeAffinityMismatch'
  | 'AccessModesMismatch';

/** The default of optional collectors: the hot path pays one call to an empty function, never an allocation. */
export function ignore(): void {}

/** Told of every PV the scan passes over, with the check that refused it (explain's per-PV detail). */
export type RefusalCollector = (pv: PersistentVolume, refusal: PVRefusal) => void;

/**
 * PV names a claim may not take (chosen for another claim of the pod, held for nominated pods): a Set will do.
 * `hasPV`, when there, answers for a PV object without its name being read (filter's per-node walk).
 */
export type PVNames = Pick<ReadonlySet<string>, 'size' | 'has'> &
  Iterable<string> & { hasPV?(pv: PersistentVolume): boolean };

/**
 * FindMatchingVolume in the scheduler path (node set, delayBinding true), over `candidates`: a PV pre-bound to the
 * claim decides alone (it is returned when its affinity holds, otherwise there is no match); else the smallest
 * Available PV that passes every check, the first one winning ties. Throws SelectorError on an invalid claim selector.
 * `refuse`, when given, hears of every PV skipped and why (the filter's indexed path never passes one).
 */
export function findMatchingVolume(
  input: ClaimMatchInput,
  candidates: Iterable<PersistentVolume>,
  nodeLabels: Readonly<Record<string, string>> | undefined,
  excluded: PVNames,
  refuse: RefusalCollector = ignore,
): PersistentVolume | undefined {
  const { pvc, request, className } = input;
  const selector = pvc.spec.selector;
  let smallest: PersistentVolume | undefined;
  let smallestQty = 0;
  for (const pv of candidates) {
    let why: PVRefusal | undefined;
    const boundToClaim = isVolumeBoundToClaim(pv, pvc);
    const qty = pvCapacity(pv);
    if (excluded.has(pv.metadata.name)) why = 'ChosenForAnotherClaim';
    else if (pv.spec.claimRef && !boundToClaim) why = 'ClaimedByAnotherClaim';
    else if (qty < request) why = 'TooSmall';
    else if (volumeModeMismatches(pvc, pv)) why = 'VolumeModeMismatch';
    else if (volumeAttributesClassMismatches(pvc, pv)) why = 'VolumeAttributesClassMismatch';
    else if (pv.metadata.deletionTimestamp) why = 'BeingDeleted';
    else if (boundToClaim) {
      // A pre-bound PV (user or earlier assumption) is the only candidate for its claim.
      if (pvNodeAffinityMatches(pv, nodeLabels)) return pv;
      refuse(pv, 'PreBoundNodeAffinityMismatch');
      return undefined;
    } else if (pv.status?.phase !== 'Available') why = 'NotAvailable';
    else if (selector && !matchLabelSelector(selector, pv.metadata.labels)) why = 'SelectorMismatch';
    else if (pvClass(pv) !== className) why = 'StorageClassMismatch';
    else if (!pvNodeAffinityMatches(pv, nodeLabels)) why = 'NodeAffinityMismatch';
    else if (!accessModesSatisfied(pvc, pv)) why = 'AccessModesMismatch';
    if (why !== undefined) {
      refuse(pv, why);
      continue;
    }
    if (smallest === undefined || smallestQty > qty) {
      smallest = pv;
      smallestQty = qty;
    }
  }
  return smallest;
}

/** What FindMatchingVolume answers from the PVs a claim is (pre)bound to, or UNDECIDED when none of them decides. */
export const UNDECIDED: unique symbol = Symbol('undecided');

/**
 * FindMatchingVolume's loop over PVs that carry a claimRef (the PV cache's by-claim index): the first one bound to
 * the claim that passes the size, volume mode, attributes class and deletion checks decides: itself when its
 * affinity holds on the node, else no PV. The others are skipped as upstream skips them.
 */
export function findPreBoundVolume(
  input: ClaimMatchInput,
  pvs: Iterable<PersistentVolume>,
  nodeLabels: Readonly<Record<string, string>> | undefined,
  excluded: PVNames,
): PersistentVolume | undefined | typeof UNDECIDED {
  const { pvc, request, className } = input;
  for (const pv of pvs) {
    if (pvClass(pv) !== className) continue; // not among ListPVs(class)
    if (excluded.has(pv.metadata.name)) continue;
    if (!isVolumeBoundToClaim(pv, pvc)) continue;
    if (pvCapacity(pv) < request) continue;
    if (volumeModeMismatches(pvc, pv)) continue;
    if (volumeAttributesClassMismatches(pvc, pv)) continue;
    if (pv.metadata.deletionTimestamp) continue;
    return pvNodeAffinityMatches(pv, nodeLabels) ? pv : undefined;
  }
  return UNDECIDED;
}

/**
 * A free PV (no claimRef, Available, not being deleted: see the PV cache's topology index) with the fields the
 * matching loop reads copied flat out of the object, so a node's walk touches one small record per PV instead of
 * the PV's nested metadata, spec, status and affinity. Refreshed in place on every change of the PV.
 */
export interface FreePV {
  pv: PersistentVolume;
  /** When the PV entered the index: among PVs of equal capacity the earlier one is chosen (a scan's first). */
  seq: number;
  name: string;
  capacity: number;
  volumeMode: string;
  attributesClass: string;
  labels: Readonly<Record<string, string>> | undefined;
  /** Offered access modes as a bit set; -1 when one is not a known mode. */
  accessModes: number;
  /** pvShape of the three fields above. */
  shape: number;
  /** The required node affinity; undefined when there is none (every node matches). */
  affinity: NodeSelector | undefined;
  /**
   * Set when the affinity is one term with one valid `In` requirement on this label key: a node whose value for the
   * key found the PV in the topology bucket of that key matches it.
   */
  impliedByKey: string | undefined;
}

export function freePV(pv: PersistentVolume): FreePV {
  const slot: FreePV = {
    pv,
    seq: 0,
    name: '',
    capacity: 0,
    volumeMode: '',
    attributesClass: '',
    labels: undefined,
    accessModes: 0,
    shape: -1,
    affinity: undefined,
    impliedByKey: undefined,
  };
  refreshFreePV(slot, pv);
  return slot;
}

export function refreshFreePV(slot: FreePV, pv: PersistentVolume): void {
  slot.pv = pv;
  slot.name = pv.metadata.name;
  slot.capacity = pvCapacity(pv);
  slot.volumeMode = volumeModeOf(pv);
  slot.attributesClass = pv.spec.volumeAttributesClassName ?? '';
  slot.labels = pv.metadata.labels;
  slot.accessModes = accessModeBits(pv.spec.accessModes);
  slot.shape = pvShape(slot.volumeMode, slot.attributesClass, slot.accessModes);
  const required = pv.spec.nodeAffinity?.required;
  slot.affinity = required ?? undefined;
  slot.impliedByKey = undefined;
  const terms = required?.nodeSelectorTerms;
  if (terms?.length === 1 && (terms[0].matchFields?.length ?? 0) === 0 && terms[0].matchExpressions?.length === 1) {
    const req = terms[0].matchExpressions[0];
    if (req.operator === 'In' && (req.values?.length ?? 0) > 0) slot.impliedByKey = req.key;
  }
}

/**
 * FindMatchingVolume's checks of one free PV of at least the requested size found in a topology bucket (`bucketKey`,
 * the label key the node was looked up by) or among the unindexed ones (undefined). The checks that only skip a PV
 * come before the selector, as in upstream, so an invalid selector throws SelectorError exactly when some PV gets
 * that far. The class, phase, claimRef and deletion checks hold by construction of the index.
 */
function offerable(
  input: ClaimMatchInput,
  slot: FreePV,
  bucketKey: string | undefined,
  nodeLabels: Readonly<Record<string, string>>,
  excluded: PVNames,
): boolean {
  // Size is the caller's check (a bucket's walk starts at the first PV large enough). Modes first: they compare
  // constants by reference; the excluded names are strings read from the PVs.
  if (slot.volumeMode !== input.volumeMode) return false;
  if (slot.attributesClass !== input.attributesClass) return false;
  if (excluded.size > 0 && (excluded.hasPV ? excluded.hasPV(slot.pv) : excluded.has(slot.name))) return false;
  const selector = input.pvc.spec.selector;
  if (selector && !matchLabelSelector(selector, slot.labels)) return false;
  if (
    slot.affinity !== undefined &&
    (bucketKey === undefined || slot.impliedByKey !== bucketKey) &&
    !matchNodeSelectorTerms(slot.affinity, nodeLabels)
  ) {
    return false;
  }
  if (input.accessModes < 0 || slot.accessModes < 0) return accessModesSatisfied(input.pvc, slot.pv);
  return (input.accessModes & ~slot.accessModes) === 0;
}

/** The smallest offerable PV of `slots` (unordered), `best` (the smallest so far) winning ties. */
export function smallestFreePV(
  input: ClaimMatchInput,
  slots: Iterable<FreePV>,
  bucketKey: string | undefined,
  nodeLabels: Readonly<Record<string, string>>,
  excluded: PVNames,
  best: FreePV | undefined,
): FreePV | undefined {
  let smallest = best;
  for (const slot of slots) {
    if (slot.capacity < input.request || !offerable(input, slot, bucketKey, nodeLabels, excluded)) continue;
    if (smallest === undefined || smallest.capacity > slot.capacity) smallest = slot;
  }
  return smallest;
}

/**
 * The free PVs of one topology bucket, smallest first (earliest indexed first among equals, as a scan in arrival
 * order would pick), their capacities in a flat array beside them. FindMatchingVolume wants the smallest PV that
 * passes, so a walk starts at the first one large enough and ends at the first that passes: the records of PVs
 * too small are never read. A local-storage node's bucket is read for every claim on every filter.
 */
export class FreePVBucket {
  readonly slots: FreePV[] = [];
  readonly #capacities: number[] = [];
  /** Ordinals of the nodes whose rows (see FreePVRows) were built from this bucket: a change makes them stale. */
  readonly readers = new Set<number>();
  readonly #rows: { stale(ordinal: number): void } | undefined;

  constructor(rows?: { stale(ordinal: number): void }) {
    this.#rows = rows;
  }

  /** Tells the rows read from this bucket that it changed (a PV came, went, or changed in place). */
  changed(): void {
    if (this.#rows) for (const o of this.readers) this.#rows.stale(o);
  }

  add(slot: FreePV): void {
    // After every PV smaller than or as large and older than this one.
    let i = this.#lowerBound(slot.capacity);
    while (i < this.slots.length && this.#capacities[i] === slot.capacity && this.slots[i].seq < slot.seq) i++;
    this.slots.splice(i, 0, slot);
    this.#capacities.splice(i, 0, slot.capacity);
    this.changed();
  }

  /** Removes `slot`, found by identity (its capacity may have changed since it was added). */
  delete(slot: FreePV): boolean {
    const i = this.slots.indexOf(slot);
    if (i < 0) return false;
    this.slots.splice(i, 1);
    this.#capacities.splice(i, 1);
    this.changed();
    return true;
  }

  /** The smallest offerable PV of this bucket if smaller than `best` (which wins ties), else `best`. */
  smallest(
    input: ClaimMatchInput,
    bucketKey: string,
    nodeLabels: Readonly<Record<string, string>>,
    excluded: PVNames,
    best: FreePV | undefined,
  ): FreePV | undefined {
    const capacities = this.#capacities;
    for (let i = this.#lowerBound(input.request); i < capacities.length; i++) {
      if (best !== undefined && capacities[i] >= best.capacity) return best;
      const slot = this.slots[i];
      if (offerable(input, slot, bucketKey, nodeLabels, excluded)) return slot;
    }
    return best;
  }

  /** The index of the first PV of at least `bytes`. */
  #lowerBound(bytes: number): number {
    const capacities = this.#capacities;
    let lo = 0;
    let hi = capacities.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (capacities[mid] < bytes) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
