// Explain's volume detail for one node: what findPodVolumes decided for each of the pod's claims, told by the binder
// itself through its FindExplainer hook (the same code the filter runs), put into words for operators.
import type { CSIStorageCapacity, Node, PersistentVolume, PersistentVolumeClaim, Pod } from '../cluster/types.ts';
import { volumeModeOf } from '../cluster/volume-annotations.ts';
import { offeredToAnyClaim, type PVAssumeCache } from './assume-cache.ts';
import type { FindExplainer, FindOptions, FindResult, HeldVolumes } from './binder.ts';
import type { PodVolumeClaims } from './claims.ts';
import type { InFlightProvisions } from './in-flight.ts';
import { affinityIndexEntries } from './node-affinity.ts';
import {
  type CapacityAccountingMode,
  type CapacityArithmetic,
  nodeHasAccess,
  type ProvisioningSources,
  type ProvisionVerdict,
} from './provisioning.ts';
import { type ClaimMatchInput, claimClass, claimKey, type PVNames, type PVRefusal, pvClass } from './pv-matching.ts';

export interface RefusedVolume {
  name: string;
  refusal: PVRefusal;
  message: string;
}

export interface CapacityView {
  namespace: string;
  name: string;
  capacity: string | null;
  maximumVolumeSize: string | null;
}

export interface ProvisioningView {
  storageClass: string;
  provisioner: string;
  verdict: ProvisionVerdict['verdict'];
  /** Whether the class's allowedTopologies admit the node (true when it has none); null when not reached. */
  allowedTopologies: boolean | null;
  /** The CSIStorageCapacity that admitted the claim. */
  capacity?: CapacityView;
  /** When no capacity admitted it: those of the class reaching the node, with their sizes. */
  capacitiesReachingNode?: CapacityView[];
  /** The capacity check's arithmetic on the admitting capacity, else the first reaching the node (bytes). */
  capacityArithmetic?: CapacityArithmeticView;
}

/**
 * free = published - nominated - inFlight - podBefore; joint accounting admits the claim when requested <= free (and
 * <= maximumVolumeSize when set). Upstream's check reads only maximumVolumeSize, else published, minus nominated.
 */
export interface CapacityArithmeticView {
  accounting: CapacityAccountingMode;
  capacity: CapacityView;
  published: number | null;
  maximumVolumeSize: number | null;
  nominated: number;
  inFlight: number;
  /** The claims in flight against it (joint accounting): unbound with selected-node, or bound since its last version. */
  inFlightClaims: { claim: string; selectedNode: string; bytes: number; bound: boolean }[];
  /** The pod's earlier claims admitted on it. */
  podBefore: number;
  requested: number;
  /** What is left for this claim; null when the capacity publishes no `capacity`. */
  free: number | null;
}

export interface ClaimExplanation {
  claim: string;
  /** bound: has a PV; selectedNode: provisioning started; static: matched against PVs; then maybe provisioning. */
  phase: 'Bound' | 'SelectedNode' | 'Unbound';
  volume?: { name: string; found: boolean; nodeAffinityMatches: boolean };
  selectedNode?: string;
  /** The PV the filter would bind this claim to on this node. */
  chosenVolume?: string;
  refusedVolumes?: RefusedVolume[];
  /** PVs passed over beyond the cap on listed volumes. */
  refusedVolumesOmitted?: number;
  /**
   * PVs of the class whose node affinity admits other nodes only: refused here, counted rather than listed (so a
   * node's detail costs the PVs of its topology, not the whole class). Listed, chosen and counted PVs make the class.
   */
  volumesOnOtherNodes?: number;
  /** `volumesOnOtherNodes` in words. */
  volumesOnOtherNodesMessage?: string;
  provisioning?: ProvisioningView;
}

function capacityView(c: CSIStorageCapacity): CapacityView {
  return {
    namespace: c.metadata.namespace ?? '',
    name: c.metadata.name,
    capacity: c.capacity === undefined ? null : String(c.capacity),
    maximumVolumeSize: c.maximumVolumeSize === undefined ? null : String(c.maximumVolumeSize),
  };
}

function modes(list: readonly string[] | undefined): string {
  return `[${(list ?? []).join(',')}]`;
}

/** Why the scan passed over `pv` for `pvc`, in words. */
export function refusalMessage(
  refusal: PVRefusal,
  pv: PersistentVolume,
  pvc: PersistentVolumeClaim,
  assumed: boolean,
): string {
  switch (refusal) {
    case 'ChosenForAnotherClaim':
      return 'already chosen for another claim of this pod';
    case 'HeldForNominatedPod':
      return 'held back for a pod nominated to a node (preemption)';
    case 'ClaimedByAnotherClaim': {
      const ref = pv.spec.claimRef!;
      const who = `${ref.namespace ?? ''}/${ref.name}`;
      return assumed ? `held back for claim ${who} by a bind in flight` : `claimed by ${who}`;
    }
    case 'TooSmall':
      return `capacity ${pv.spec.capacity?.storage ?? 0} is less than the ${pvc.spec.resources?.requests?.storage ?? 0} requested`;
    case 'VolumeModeMismatch':
      return `volumeMode ${volumeModeOf(pv)}, the claim wants ${volumeModeOf(pvc)}`;
    case 'VolumeAttributesClassMismatch':
      return `volumeAttributesClassName "${pv.spec.volumeAttributesClassName ?? ''}", the claim wants "${pvc.spec.volumeAttributesClassName ?? ''}"`;
    case 'BeingDeleted':
      return 'being deleted';
    case 'PreBoundNodeAffinityMismatch':
      return "pre-bound to this claim, but its node affinity does not match the node's labels";
    case 'NotAvailable':
      return `phase ${pv.status?.phase ?? '""'}, not Available`;
    case 'SelectorMismatch':
      return "labels do not match the claim's selector";
    case 'StorageClassMismatch':
      return `storage class "${pvClass(pv)}", the claim wants "${claimClass(pvc)}"`;
    case 'NodeAffinityMismatch':
      return "node affinity does not match the node's labels";
    case 'AccessModesMismatch':
      return `access modes ${modes(pv.spec.accessModes)} do not include every one of ${modes(pvc.spec.accessModes)}`;
  }
}

/** What explain reads of the binder: its decision, told to a FindExplainer, and the sources behind it. */
export interface ExplainSources extends Pick<ProvisioningSources, 'findCapacity'> {
  readonly pvCache: PVAssumeCache;
  readonly inFlight: InFlightProvisions;
  findPodVolumes(pod: Pod, claims: PodVolumeClaims, node: Node, options?: FindOptions): FindResult;
}

/** Collects findPodVolumes' decisions for one node into ClaimExplanations, listing at most `maxVolumes` PVs each. */
class Collector implements FindExplainer {
  readonly claims = new Map<string, ClaimExplanation>();
  readonly #binder: ExplainSources;
  readonly #node: Node;
  readonly #maxVolumes: number;
  /** The pod's own claims: never in flight against itself (the check leaves them out too). */
  readonly #ownClaims: ReadonlySet<string>;

  constructor(binder: ExplainSources, node: Node, maxVolumes: number, ownClaims: ReadonlySet<string>) {
    this.#binder = binder;
    this.#node = node;
    this.#maxVolumes = maxVolumes;
    this.#ownClaims = ownClaims;
  }

  #entry(pvc: PersistentVolumeClaim, phase: ClaimExplanation['phase']): ClaimExplanation {
    const key = claimKey(pvc);
    let entry = this.claims.get(key);
    if (!entry) {
      entry = { claim: key, phase };
      this.claims.set(key, entry);
    }
    return entry;
  }

  bound(pvc: PersistentVolumeClaim, pv: PersistentVolume | undefined, affinityMatches: boolean): void {
    this.#entry(pvc, 'Bound').volume = {
      name: pvc.spec.volumeName ?? '',
      found: pv !== undefined,
      nodeAffinityMatches: affinityMatches,
    };
  }

  selectedNode(pvc: PersistentVolumeClaim, selectedNode: string): void {
    this.#entry(pvc, 'SelectedNode').selectedNode = selectedNode;
  }

  matched(
    pvc: PersistentVolumeClaim,
    chosen: PersistentVolume | undefined,
    refused: [PersistentVolume, PVRefusal][],
    onOtherNodes: number,
  ): void {
    const entry = this.#entry(pvc, 'Unbound');
    if (chosen) entry.chosenVolume = chosen.metadata.name;
    if (onOtherNodes > 0) {
      entry.volumesOnOtherNodes = onOtherNodes;
      entry.volumesOnOtherNodesMessage = `${onOtherNodes} PV(s) of class "${claimClass(pvc)}" have node affinity for other nodes`;
    }
    // In the index's order (the claim's pre-bound PVs, then the node's topology buckets, then PVs without an
    // indexable affinity), cut at the cap.
    const listed = refused.slice(0, this.#maxVolumes);
    entry.refusedVolumes = listed.map(([pv, refusal]) => ({
      name: pv.metadata.name,
      refusal,
      message: refusalMessage(refusal, pv, pvc, this.#binder.pvCache.isAssumed(pv.metadata.name)),
    }));
    if (refused.length > listed.length) entry.refusedVolumesOmitted = refused.length - listed.length;
  }

  #arithmetic(a: CapacityArithmetic): CapacityArithmeticView {
    const inFlightClaims =
      a.accounting === 'joint'
        ? this.#binder.inFlight
            .claimsFor(a.capacity)
            .filter((c) => !this.#ownClaims.has(c.key))
            .map((c) => ({ claim: c.key, selectedNode: c.nodeName, bytes: c.bytes, bound: c.bound }))
        : [];
    return {
      accounting: a.accounting,
      capacity: capacityView(a.capacity),
      published: a.published,
      maximumVolumeSize: a.maximumVolumeSize,
      nominated: a.nominated,
      inFlight: a.inFlight,
      inFlightClaims,
      podBefore: a.podBefore,
      requested: a.requested,
      free: a.published === null ? null : a.published - a.nominated - a.inFlight - a.podBefore,
    };
  }

  provision(v: ProvisionVerdict): void {
    const entry = this.#entry(v.pvc, 'Unbound');
    const view: ProvisioningView = {
      storageClass: v.storageClass.metadata.name,
      provisioner: v.storageClass.provisioner ?? '',
      verdict: v.verdict,
      allowedTopologies: v.verdict === 'NoProvisioner' ? null : v.verdict !== 'AllowedTopologiesMismatch',
    };
    if (v.capacity) view.capacity = capacityView(v.capacity);
    if (v.arithmetic) view.capacityArithmetic = this.#arithmetic(v.arithmetic);
    if (v.verdict === 'InsufficientCapacity') {
      const labels = this.#node.metadata.labels;
      const reaching: CSIStorageCapacity[] = [];
      this.#binder.findCapacity(
        v.storageClass.metadata.name,
        labels,
        (c) => {
          if (nodeHasAccess(labels, c)) reaching.push(c);
          return false; // visit them all
        },
        undefined,
      );
      view.capacitiesReachingNode = reaching.map(capacityView);
    }
    entry.provisioning = view;
  }
}

/** The PVs of a class that no unbound claim can take (a claimRef, not Available or being deleted), by topology. */
interface NotOfferedIndex {
  readonly byTopology: Map<string, Map<string, PersistentVolume[]>>;
  readonly unindexed: PersistentVolume[];
}

/** Per PV cache: the binder generation they were built at, and the index per class built since. */
const notOfferedIndexes = new WeakMap<PVAssumeCache, { generation: number; byClass: Map<string, NotOfferedIndex> }>();

/**
 * The PV cache indexes free PVs only; explain also names the bound, released and deleting PVs of the node, so it
 * buckets those once per class and binder generation (one pass over the class per explain, not one per node).
 */
function notOfferedIndex(cache: PVAssumeCache, generation: number, className: string): NotOfferedIndex {
  let memo = notOfferedIndexes.get(cache);
  if (!memo || memo.generation !== generation) {
    memo = { generation, byClass: new Map() };
    notOfferedIndexes.set(cache, memo);
  }
  let index = memo.byClass.get(className);
  if (!index) {
    index = { byTopology: new Map(), unindexed: [] };
    for (const pv of cache.listByClass(className)) {
      if (offeredToAnyClaim(pv)) continue;
      const entries = affinityIndexEntries(pv);
      if (entries === undefined) {
        index.unindexed.push(pv);
        continue;
      }
      for (const [key, value] of entries) {
        let byValue = index.byTopology.get(key);
        if (!byValue) {
          byValue = new Map();
          index.byTopology.set(key, byValue);
        }
        const bucket = byValue.get(value);
        if (bucket) bucket.push(pv);
        else byValue.set(value, [pv]);
      }
    }
    memo.byClass.set(className, index);
  }
  return index;
}

/**
 * The PVs of the claim's class explain examines on a node, each once: the filter's candidates (pre-bound to the
 * claim, then the free PVs of the node's topology buckets and those without an indexable affinity), the other PVs
 * whose affinity can admit the node, and the excluded ones (chosen for another claim, held for a nominated pod).
 * Every other PV of the class has node affinity for other nodes only: `onOtherNodes` counts them.
 */
export function explainScope(
  cache: PVAssumeCache,
  generation: number,
  input: ClaimMatchInput,
  nodeLabels: Readonly<Record<string, string>> | undefined,
  excluded: PVNames,
): { examined: PersistentVolume[]; onOtherNodes: number } {
  const seen = new Set<string>();
  const examined: PersistentVolume[] = [];
  const add = (pv: PersistentVolume) => {
    if (seen.has(pv.metadata.name)) return;
    seen.add(pv.metadata.name);
    examined.push(pv);
  };
  for (const pv of cache.candidates(input.className, nodeLabels, input.claimRefKey)) add(pv);
  const index = notOfferedIndex(cache, generation, input.className);
  const labels = nodeLabels ?? {};
  for (const [key, byValue] of index.byTopology) {
    if (Object.hasOwn(labels, key)) for (const pv of byValue.get(labels[key]) ?? []) add(pv);
  }
  for (const pv of index.unindexed) add(pv);
  for (const name of excluded) {
    const pv = cache.get(name);
    if (pv && pvClass(pv) === input.className) add(pv);
  }
  return { examined, onOtherNodes: cache.classSize(input.className) - examined.length };
}

/**
 * findPodVolumes for one node with an explainer: per claim, its PV or the PVs considered and why each was refused,
 * and the provisioning verdict. Claims findPodVolumes never reached (it stops at the first failure) are not listed.
 */
export function explainPodVolumes(
  binder: ExplainSources,
  pod: Pod,
  claims: PodVolumeClaims,
  node: Node,
  held: HeldVolumes | undefined,
  maxVolumes: number,
): ClaimExplanation[] {
  const own = new Set(claims.unboundClaimsDelayBinding.map(claimKey));
  const collector = new Collector(binder, node, maxVolumes, own);
  binder.findPodVolumes(pod, claims, node, { held, explain: collector });
  return [...collector.claims.values()];
}
