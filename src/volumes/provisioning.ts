// Whether a node can provision the claims no static PV satisfies (binder.go checkVolumeProvisions and
// hasEnoughCapacity): the class must provision, allow the node's topology and, for CSI drivers that publish
// storage capacity, some CSIStorageCapacity reachable from the node must fit the request.

import { selectorMatchesSafely } from '../cluster/label-selector.ts';
import { parseValue } from '../cluster/quantity.ts';
import type { CSIDriver, CSIStorageCapacity, PersistentVolumeClaim, StorageClass } from '../cluster/types.ts';
import { hasProvisioner } from '../cluster/volume-annotations.ts';
import type { CapacityAccept, CapacityRowQuery } from './capacity-index.ts';
import { CAPACITY_ROW_UNDECIDED, capacityFits } from './capacity-rows.ts';
import { matchTopologySelectorTerms } from './node-affinity.ts';
import { claimClass, claimKey, claimMatchInput, ignore } from './pv-matching.ts';

export interface DynamicProvision {
  pvc: PersistentVolumeClaim;
  /** The capacity object that admitted the claim; undefined when no capacity check applied. */
  nodeCapacity?: CSIStorageCapacity;
}

export interface ProvisioningSources {
  storageClass(name: string): StorageClass | undefined;
  csiDriver(name: string): CSIDriver | undefined;
  /**
   * The first CSIStorageCapacity of a class, in the order a scan of the class would see them, that `accept` takes
   * among those whose nodeTopology could match the node's labels (see CapacityIndex).
   */
  findCapacity<C>(
    className: string,
    nodeLabels: Readonly<Record<string, string>> | undefined,
    accept: CapacityAccept<C>,
    context: C,
  ): CSIStorageCapacity | undefined;
  /**
   * The same answer for the query's claim on its node (NodeInfo.ordinal), read from the node's dense
   * row (see CapacityIndex.findForNode), when the sources keep rows.
   */
  findCapacityForNode?(
    className: string,
    query: CapacityRowQuery,
  ): CSIStorageCapacity | undefined | typeof CAPACITY_ROW_UNDECIDED;
}

export class ProvisioningError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProvisioningError';
  }
}

export interface ProvisionCheck {
  satisfied: boolean;
  sufficientStorage: boolean;
  provisions: DynamicProvision[];
  /** Not enough storage only because of joint accounting: upstream's per-claim check admits every claim. */
  jointOnly?: boolean;
}

/** How a capacity object is checked: upstream's per-claim check, or joint (see JointAccounting). */
export type CapacityAccountingMode = 'joint' | 'upstream';

/**
 * Joint accounting (our one deliberate departure from upstream): the claims of a pod that a capacity object admits
 * must fit it together, after what provisions in flight already took from it. maximumVolumeSize still limits each
 * claim alone.
 */
export interface JointAccounting {
  /** Bytes provisions in flight owe the capacity object (the pod's own claims left out). */
  inFlight(capacity: CSIStorageCapacity): number;
  /** None of the pod's claims is in flight: inFlight is every provision in flight (what the dense rows keep). */
  noOwnInFlight?: boolean;
}

/** A capacity object's quantities in bytes, null when unset: parsed once per object, read with one lookup. */
interface CapacityFacts {
  /** `capacity`. */
  published: number | null;
  /** `maximumVolumeSize` when set (more precise), else `capacity`. */
  limit: number | null;
  hasMaximumVolumeSize: boolean;
}

const factsOf = new WeakMap<CSIStorageCapacity, CapacityFacts>();

export function facts(capacity: CSIStorageCapacity): CapacityFacts {
  let f = factsOf.get(capacity);
  if (f === undefined) {
    const published = capacity.capacity === undefined ? null : parseValue(capacity.capacity);
    const max = capacity.maximumVolumeSize;
    f = { published, limit: max === undefined ? published : parseValue(max), hasMaximumVolumeSize: max !== undefined };
    factsOf.set(capacity, f);
  }
  return f;
}

/** The published capacity in bytes, null when unset. Memoised per object (score reads it for every node). */
export function capacityBytes(capacity: CSIStorageCapacity): number | null {
  return facts(capacity).published;
}

/** capacitySufficient: maximumVolumeSize when set (more precise), else capacity; neither → not sufficient. */
export function capacitySufficient(capacity: CSIStorageCapacity, sizeInBytes: number): boolean {
  const { limit } = facts(capacity);
  return capacityFits(Number.NaN, limit ?? Number.NaN, false, sizeInBytes, 0, false);
}

/**
 * Joint: the claim alone within maximumVolumeSize (when set), and the claim plus what is already owed within the
 * capacity (when set). With neither set nothing is known to be free, as upstream.
 */
export function jointSufficient(capacity: CSIStorageCapacity, sizeInBytes: number, owedBytes: number): boolean {
  const { published, limit, hasMaximumVolumeSize } = facts(capacity);
  return capacityFits(published ?? Number.NaN, limit ?? Number.NaN, hasMaximumVolumeSize, sizeInBytes, owedBytes, true);
}

/** nodeHasAccess: a nil nodeTopology reaches no node; `{}` reaches all. */
export function nodeHasAccess(
  nodeLabels: Readonly<Record<string, string>> | undefined,
  capacity: CSIStorageCapacity,
): boolean {
  if (!capacity.nodeTopology) return false;
  return selectorMatchesSafely(capacity.nodeTopology, nodeLabels);
}

/** nodeHasAccess as findCapacity's accept function, with the node's labels as its context. */
export function nodeHasAccessOf(
  capacity: CSIStorageCapacity,
  nodeLabels: Readonly<Record<string, string>> | undefined,
  reached: boolean,
): boolean {
  return reached || nodeHasAccess(nodeLabels, capacity);
}

/**
 * One claim's capacity check on one node: what findCapacity's accept function reads. checkVolumeProvisions makes one
 * per node and refills it per claim, so the per-node walk allocates no closure per claim.
 */
interface CapacityCheck {
  nodeLabels: Readonly<Record<string, string>> | undefined;
  /** The claim's request, in bytes. */
  size: number;
  /** Bytes nominated pods would provision from a capacity object. */
  taken: ReadonlyMap<CSIStorageCapacity, number> | undefined;
  /** Joint accounting, undefined for upstream's per-claim check. */
  joint: JointAccounting | undefined;
  /** Joint: what the pod's earlier claims took per capacity object. */
  pod: ReadonlyMap<CSIStorageCapacity, number>;
  /** The node's NodeInfo.ordinal, -1 when unknown: with it the check may read the node's dense capacity row. */
  ordinal: number;
}

function admits(c: CSIStorageCapacity, check: CapacityCheck, reached: boolean): boolean {
  const taken = check.taken?.get(c) ?? 0;
  const sufficient = check.joint
    ? jointSufficient(c, check.size, taken + check.joint.inFlight(c) + (check.pod.get(c) ?? 0))
    : capacitySufficient(c, check.size + taken);
  return sufficient && (reached || nodeHasAccess(check.nodeLabels, c));
}

/** The arithmetic behind a claim's capacity verdict (explain shows it), in bytes. */
export interface CapacityArithmetic {
  accounting: CapacityAccountingMode;
  /** The capacity object that admitted the claim, else the first of the class reaching the node. */
  capacity: CSIStorageCapacity;
  /** This claim's request. */
  requested: number;
  /** The published `capacity`; null when unset. */
  published: number | null;
  /** `maximumVolumeSize`; null when unset. */
  maximumVolumeSize: number | null;
  /** What pods nominated to the node would provision from it. */
  nominated: number;
  /** Provisions in flight against it (joint accounting; 0 with upstream's). */
  inFlight: number;
  /** The pod's earlier claims admitted on it (joint accounting; 0 with upstream's). */
  podBefore: number;
}

/**
 * hasEnoughCapacity: `{ ok, capacity }` with the admitting capacity object when a check applied. `check` carries the
 * node, nominated pods' bytes and joint accounting (see CapacityCheck); its size is set here. With `explain` the
 * arithmetic of the check comes back too.
 */
function hasEnoughCapacity(
  provisioner: string,
  pvc: PersistentVolumeClaim,
  sc: StorageClass,
  sources: ProvisioningSources,
  check: CapacityCheck,
  explain: boolean,
): { ok: boolean; capacity?: CSIStorageCapacity; arithmetic?: CapacityArithmetic } {
  const request = pvc.spec.resources?.requests?.storage;
  if (request === undefined) return UNCHECKED;
  const driver = sources.csiDriver(provisioner);
  // Not a CSI driver, or one that does not publish capacity: nothing to check.
  if (driver?.spec.storageCapacity !== true) return UNCHECKED;
  check.size = claimMatchInput(pvc).request; // the request parsed once per claim object
  const className = sc.metadata.name;
  const { nodeLabels, taken, joint } = check;
  let capacity: CSIStorageCapacity | undefined | typeof CAPACITY_ROW_UNDECIDED = CAPACITY_ROW_UNDECIDED;
  // The row knows what is in flight, not what nominated pods hold nor which in-flight claims are the pod's own.
  if (check.ordinal >= 0 && nodeLabels && !taken && !explain && (!joint || joint.noOwnInFlight === true)) {
    const fromRow = sources.findCapacityForNode;
    if (fromRow) capacity = fromRow.call(sources, className, check);
  }
  if (capacity === CAPACITY_ROW_UNDECIDED) capacity = sources.findCapacity(className, nodeLabels, admits, check);
  if (!explain) return capacity ? { ok: true, capacity } : INSUFFICIENT;
  const result: { ok: boolean; capacity?: CSIStorageCapacity; arithmetic?: CapacityArithmetic } = capacity
    ? { ok: true, capacity }
    : { ok: false };
  const shown = capacity ?? sources.findCapacity(className, nodeLabels, nodeHasAccessOf, nodeLabels);
  if (shown) {
    result.arithmetic = {
      accounting: joint ? 'joint' : 'upstream',
      capacity: shown,
      requested: check.size,
      published: capacityBytes(shown),
      maximumVolumeSize: shown.maximumVolumeSize === undefined ? null : parseValue(shown.maximumVolumeSize),
      nominated: taken?.get(shown) ?? 0,
      inFlight: joint ? joint.inFlight(shown) : 0,
      podBefore: joint ? (check.pod.get(shown) ?? 0) : 0,
    };
  }
  return result;
}

const UNCHECKED = Object.freeze({ ok: true });
const INSUFFICIENT = Object.freeze({ ok: false });

/** How the provisioning check judged one claim on a node (explain's detail). */
export interface ProvisionVerdict {
  pvc: PersistentVolumeClaim;
  storageClass: StorageClass;
  verdict: 'NoProvisioner' | 'AllowedTopologiesMismatch' | 'InsufficientCapacity' | 'Provisionable';
  /** The capacity object that admitted the claim, when a capacity check applied and passed. */
  capacity?: CSIStorageCapacity;
  /** The capacity check's arithmetic, when one applied and some capacity of the class reaches the node. */
  arithmetic?: CapacityArithmetic;
}

const NOTHING_TAKEN: ReadonlyMap<CSIStorageCapacity, number> = new Map();

/** How checkVolumeProvisions judges the claims on one node. */
export interface ProvisionCheckOptions {
  /** Bytes that claims of nominated pods would provision from a capacity object (not free for this pod). */
  taken?: ReadonlyMap<CSIStorageCapacity, number>;
  /** Hears the verdict on each claim judged (explain). */
  note?: (verdict: ProvisionVerdict) => void;
  /** Check the pod's claims together and after the provisions in flight; absent: upstream's per-claim check. */
  joint?: JointAccounting;
  /** The node's NodeInfo.ordinal, when known: the check may then read the node's dense capacity row. */
  ordinal?: number;
}

/** checkVolumeProvisions: the first failing claim decides; class problems are errors, not reasons. */
export function checkVolumeProvisions(
  claims: readonly PersistentVolumeClaim[],
  nodeLabels: Readonly<Record<string, string>> | undefined,
  sources: ProvisioningSources,
  options: ProvisionCheckOptions = {},
): ProvisionCheck {
  const { taken, note = ignore, joint, ordinal = -1 } = options;
  const provisions: DynamicProvision[] = [];
  // What the pod's earlier claims took per capacity object (joint); made when a second claim needs it.
  let pod: Map<CSIStorageCapacity, number> | undefined;
  const explain = note !== ignore;
  const check: CapacityCheck = { nodeLabels, size: 0, taken, joint, pod: NOTHING_TAKEN, ordinal };
  for (let index = 0; index < claims.length; index++) {
    const pvc = claims[index];
    const className = claimClass(pvc);
    if (className === '') throw new ProvisioningError(`no class for claim "${claimKey(pvc)}"`);
    const sc = sources.storageClass(className);
    if (!sc) throw new ProvisioningError(`failed to find storage class "${className}"`);
    if (!hasProvisioner(sc)) {
      note({ pvc, storageClass: sc, verdict: 'NoProvisioner' });
      return { satisfied: false, sufficientStorage: true, provisions: [] };
    }
    if (!matchTopologySelectorTerms(sc.allowedTopologies, nodeLabels)) {
      note({ pvc, storageClass: sc, verdict: 'AllowedTopologiesMismatch' });
      return { satisfied: false, sufficientStorage: true, provisions: [] };
    }
    check.pod = pod ?? NOTHING_TAKEN;
    const { ok, capacity, arithmetic } = hasEnoughCapacity(sc.provisioner, pvc, sc, sources, check, explain);
    if (!ok) {
      note(
        arithmetic
          ? { pvc, storageClass: sc, verdict: 'InsufficientCapacity', arithmetic }
          : { pvc, storageClass: sc, verdict: 'InsufficientCapacity' },
      );
      // The claims before this one passed the stricter joint check; upstream's would judge only the rest.
      const perClaim = joint
        ? checkVolumeProvisions(claims.slice(index), nodeLabels, sources, { taken, ordinal })
        : undefined;
      const jointOnly = perClaim?.satisfied === true && perClaim.sufficientStorage;
      return { satisfied: true, sufficientStorage: false, provisions: [], jointOnly };
    }
    if (capacity && joint && index < claims.length - 1) {
      pod ??= new Map();
      pod.set(capacity, (pod.get(capacity) ?? 0) + claimMatchInput(pvc).request);
    }
    // Built only when someone listens: the filter judges ~500 nodes per pod and this is its hottest allocation.
    if (explain) {
      note(
        capacity
          ? { pvc, storageClass: sc, verdict: 'Provisionable', capacity, ...(arithmetic ? { arithmetic } : {}) }
          : { pvc, storageClass: sc, verdict: 'Provisionable' },
      );
    }
    provisions.push(capacity ? { pvc, nodeCapacity: capacity } : { pvc });
  }
  return { satisfied: true, sufficientStorage: true, provisions };
}
