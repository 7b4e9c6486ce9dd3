// What the store's events make out of date in the pending report (pending-report.ts). Every event that can change an
// explanation bumps a generation: an explanation computed at an older one may be out of date. Which ones are is told
// apart by the kind of change: a change of a scheduled pod's labels alone is out of date only for the explanations that
// read other pods (pending-relevance.ts); a change of the pods on some nodes (a pod bound, deleted, resized,
// nominated), for an explanation kept per node (pending-nodes.ts), only on those nodes, which the log of changes names;
// every other change (nodes, volumes, claims, PDBs, a pod with required pod (anti-)affinity terms) makes every
// explanation out of date everywhere. The log keeps the generations and the changes; the explanations are the cache's
// (pending-cache.ts). Every Pod event goes through podChanged, binds included: it costs a few comparisons and, for a
// pod on a node, a push.
import type { Kind, Pod } from '../cluster/types.ts';
import { claimKeys, NodeFingerprints, type NodeVerdicts } from './pending-nodes.ts';
import { onlyLabelsChanged } from './pending-relevance.ts';

const STORAGE_KINDS: ReadonlySet<Kind> = new Set([
  'Node',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'CSIStorageCapacity',
  'StorageClass',
]);

/** A pod other pods' verdicts read: on a node, or nominated to one. */
export const placed = (pod: Pod) => Boolean(pod.spec.nodeName || pod.status?.nominatedNodeName);

/** The nodes whose pods include `pod`, or that it is nominated to. */
const placements = (pod: Pod | undefined) => (pod ? [pod.spec.nodeName, pod.status?.nominatedNodeName] : []);

/** Required pod (anti-)affinity terms: InterPodAffinity's preFilter counts such existing pods over every node. */
const hasPodAffinityTerms = (pod: Pod | undefined) =>
  (pod?.spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.length ?? 0) > 0 ||
  (pod?.spec.affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.length ?? 0) > 0;

/** The most node-local changes kept; an explanation older than the oldest is explained afresh. */
const MAX_CHANGES = 20_000;

/** A change of the pods on a node, which an explanation kept per node judges again there. */
interface NodeChange {
  generation: number;
  /** A node whose pods changed; or */
  node?: string;
  /** the claims a changed pod names (`namespace/name`). */
  claims?: string[];
}

/** What an explanation was computed at, and whether it read other pods (their labels, preemption's victims). */
export interface Computed {
  generation: number;
  readsOtherPods: boolean;
}

/**
 * What a Pod event made out of date: `labels`, the labels alone of a pod on a node (or nominated to one), which only
 * the explanations that read other pods read; `more`, anything else.
 */
export type PodChange = 'labels' | 'more';

export class ClusterEventLog {
  readonly #clock: () => number;
  /** Bumped by every store event that can change an explanation: one computed at an older one may be out of date. */
  #generation = 0;
  /** The generation of the last such event that changed more than a scheduled pod's labels. */
  #lastFull = 0;
  /** The generation of the last event an explanation kept per node cannot follow node by node. */
  #lastAll = 0;
  /** Per node, the generation of the last update of a pod on it that changed only labels or resourceVersion. */
  readonly #relabelled = new Map<string, number>();
  /** Changes of pods on nodes since #changesFrom, oldest first. */
  #changes: NodeChange[] = [];
  #changesFrom = 0;
  /** When the recent events that changed more than labels came (clock ms), oldest first. */
  #fullAt: { generation: number; at: number }[] = [];
  /** Bumped by the events of the kinds the storage view reads. */
  #storageGeneration = 0;
  /** What the pods on each node are: an explanation kept per node takes them when judged (NodeVerdicts.of). */
  readonly fingerprints = new NodeFingerprints();

  /** `clock`: performance.now() ms, or a test's (behindMs counts with it). */
  constructor(clock: () => number) {
    this.#clock = clock;
  }

  /** The generation of the last event that can change an explanation. */
  get generation(): number {
    return this.#generation;
  }

  /** How many events of the kinds the storage view reads came. */
  get storageGeneration(): number {
    return this.#storageGeneration;
  }

  /** A pod in the store when the report started: it counts in its node's fingerprint. */
  listed(pod: Pod): void {
    this.fingerprints.add(pod, placements(pod));
  }

  /** A Pod event (`old`: the pod before an update); see PodChange for what it returns. */
  podChanged(pod: Pod, old: Pod | undefined, deleted: boolean): PodChange {
    // A pending pod is on no node and in no one's verdict, unless nominated: its own changes are the cache's.
    if (!placed(pod) && !(old && placed(old))) return 'more';
    const nodes = [...new Set([...placements(old), ...placements(pod)])].filter((n): n is string => !!n);
    const labelsOnly = old !== undefined && onlyLabelsChanged(old, pod);
    // A change of labels leaves what a node-local verdict reads of the node as it was.
    if (!labelsOnly) {
      if (old) this.fingerprints.remove(old);
      if (deleted) this.fingerprints.remove(pod);
      else this.fingerprints.add(pod, placements(pod));
    }
    // Out of date only for the explanations that read other pods (pending-relevance.ts).
    if (labelsOnly) {
      this.#generation++;
      // Only the victims on a preemption candidate can change: kept per node, not logged (most events).
      for (const n of nodes) this.#relabelled.set(n, this.#generation);
      return 'labels';
    }
    this.#generation++;
    this.#full();
    if (hasPodAffinityTerms(pod) || hasPodAffinityTerms(old)) this.#lastAll = this.#generation;
    else {
      const claims = [...new Set([...claimKeys(pod), ...(old ? claimKeys(old) : [])])];
      const generation = this.#generation;
      for (const node of nodes) this.#log({ generation, node });
      if (claims.length > 0) this.#log({ generation, claims });
    }
    return 'more';
  }

  /** An event of another kind than Pod: every explanation is out of date everywhere. */
  changed(kind: Kind): void {
    this.#generation++;
    this.#full();
    this.#lastAll = this.#generation;
    if (STORAGE_KINDS.has(kind)) this.#storageGeneration++;
  }

  /** Computed at `r.generation`, still true now: nothing changed since, or only other pods' labels it does not read. */
  current(r: Computed): boolean {
    return r.generation === this.#generation || (!r.readsOtherPods && r.generation >= this.#lastFull);
  }

  /** Milliseconds since the first change of more than labels after `generation` (the oldest kept, when earlier). */
  behindMs(generation: number): number {
    const first = this.#fullAt.find((f) => f.generation > generation) ?? this.#fullAt[0];
    return first ? this.#clock() - first.at : 0;
  }

  /**
   * Whether every change after `generation` is logged node by node: none was of another kind, and none was dropped
   * from the log. Else an explanation computed then is explained afresh.
   */
  followsNodeByNode(generation: number): boolean {
    return generation >= this.#lastAll && generation >= this.#changesFrom;
  }

  /**
   * The nodes to judge again to bring `nodes`, computed at `generation`, up to date (followsNodeByNode said it can
   * be), or undefined when a change since names one of its claims (VolumeRestrictions counts a claim's users over
   * every node): the nodes whose pods changed, and its preemption candidate when a pod there was relabelled.
   */
  changedNodes(nodes: Pick<NodeVerdicts, 'candidate' | 'claims'>, generation: number): Set<string> | undefined {
    const changes = this.#changes;
    const changed = new Set<string>();
    const candidate = nodes.candidate;
    if (candidate && (this.#relabelled.get(candidate) ?? -1) > generation) changed.add(candidate);
    for (let i = this.#firstChangeAfter(generation); i < changes.length; i++) {
      const c = changes[i];
      if (c.node !== undefined) changed.add(c.node);
      else for (const k of c.claims ?? []) if (nodes.claims.has(k)) return undefined;
    }
    return changed;
  }

  /** Forgets, in `nodes`, the verdicts on the nodes whose pods changed after `generation` (judged again next). */
  forgetChangedNodes(nodes: Pick<NodeVerdicts, 'forget'>, generation: number): void {
    for (let i = this.#firstChangeAfter(generation); i < this.#changes.length; i++) nodes.forget(this.#changes[i].node);
  }

  /** An event that changed more than labels: what it makes out of date is counted behind from now. */
  #full(): void {
    this.#lastFull = this.#generation;
    this.#fullAt.push({ generation: this.#generation, at: this.#clock() });
    if (this.#fullAt.length > MAX_CHANGES) this.#fullAt.splice(0, MAX_CHANGES / 2);
  }

  #log(change: NodeChange): void {
    // Changes before the last of another kind are never read: every explanation older than it is explained afresh.
    if (this.#changesFrom < this.#lastAll) {
      this.#changes = [];
      this.#changesFrom = this.#lastAll;
    }
    this.#changes.push(change);
    if (this.#changes.length > MAX_CHANGES) {
      const dropped = this.#changes.splice(0, MAX_CHANGES / 2);
      this.#changesFrom = dropped[dropped.length - 1].generation;
    }
  }

  /** Where the changes after `generation` start in #changes (generations increase along the list). */
  #firstChangeAfter(generation: number): number {
    const changes = this.#changes;
    let lo = 0;
    let hi = changes.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (changes[mid].generation <= generation) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
