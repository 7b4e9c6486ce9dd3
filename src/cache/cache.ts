// The scheduler cache (upstream pkg/scheduler/backend/cache/cache.go): pods by UID with their assume/add state,
// one MutableNodeInfo per node aggregated incrementally, the node tree, and incremental snapshots.
// Fed by the cluster store's Pod and Node events and by our own bind (assume, finishBinding, forget).
import { pino } from 'pino';
import type { ClusterStore } from '../cluster/store.ts';
import { type Node, namespaceOf, objectKey, type Pod } from '../cluster/types.ts';
import type { Log } from '../log.ts';
import type { AssumedPod, SchedulerCache } from './interface.ts';
import { CachedPodInfo, MutableNodeInfo, type NodeInfo, nextGeneration } from './node-info.ts';
import { NodeTree } from './node-tree.ts';
import { type GetPod, type ReconcileResult, reconcileAssumedPods } from './reconcile.ts';
import { Snapshot, type SnapshotSource } from './snapshot.ts';
import { feedFromStore } from './store-feed.ts';

export type { GetPod, ReconcileResult } from './reconcile.ts';
export { isAssignedNonTerminal } from './store-feed.ts';

export interface CacheOptions {
  /** How long after our bind finished an unconfirmed assumed pod waits before it is checked against the API. */
  assumedPodTTLms?: number;
  logger?: Log;
  /** Clock (ms since epoch); tests inject one. */
  now?: () => number;
}

/** A NodeInfo in a most-recently-changed-first list, so a snapshot visits only what changed (upstream headNode). */
interface NodeEntry {
  info: MutableNodeInfo;
  prev: NodeEntry | undefined;
  next: NodeEntry | undefined;
}

function podRef(pod: Pod): string {
  return objectKey('Pod', pod);
}

export class NodeInfoCache implements SchedulerCache {
  readonly #ttl: number;
  readonly #log: Log;
  readonly #now: () => number;
  /** Pods by UID: the same CachedPodInfo their node holds (one object per pod, 150,000 of them at 5,000 nodes). */
  readonly #states = new Map<string, CachedPodInfo>();
  /** When our bind of an assumed pod finished, by UID: few at a time, so kept apart from #states. */
  readonly #finishedAt = new Map<string, number>();
  readonly #nodes = new Map<string, NodeEntry>();
  /** The same NodeInfos by name without the list links: every verb looks up each candidate here (one load less). */
  readonly #infos = new Map<string, MutableNodeInfo>();
  #head: NodeEntry | undefined;
  /** Ordinals of dropped NodeInfos, given to the next nodes: the ordinals stay about as many as the nodes. */
  readonly #freeOrdinals: number[] = [];
  #nextOrdinal = 0;
  readonly #tree = new NodeTree();
  #generation = 0;

  constructor(options: CacheOptions = {}) {
    this.#ttl = options.assumedPodTTLms ?? 30_000;
    this.#log = options.logger ?? pino({ level: 'silent' });
    this.#now = options.now ?? Date.now;
  }

  // --- pods: the state machine ---------------------------------------------------------------------------------

  assumePod(pod: Pod): void {
    const uid = pod.metadata.uid;
    if (this.#states.has(uid)) throw new Error(`pod ${podRef(pod)}(${uid}) is in the cache, so can't be assumed`);
    this.#addState(pod, true);
  }

  finishBinding(pod: Pod): void {
    const state = this.#states.get(pod.metadata.uid);
    if (state?.assumed) this.#finishedAt.set(pod.metadata.uid, this.#now());
  }

  /** Undo of assumePod. A pod no longer cached is a no-op (upstream: nothing left to undo). */
  forgetPod(pod: Pod): void {
    const uid = pod.metadata.uid;
    const state = this.#states.get(uid);
    if (!state) return;
    if (state.nodeName !== pod.spec.nodeName) {
      throw new Error(
        `pod ${podRef(pod)}(${uid}) was assumed on ${pod.spec.nodeName} but assigned to ${state.nodeName}`,
      );
    }
    if (!state.assumed) throw new Error(`pod ${podRef(pod)}(${uid}) is not assumed, so it cannot be forgotten`);
    this.#removeState(state);
  }

  /** The watch saw the pod bound: confirms an assumed pod (moving it if it landed elsewhere), or adds it. */
  addPod(pod: Pod): void {
    const uid = pod.metadata.uid;
    const state = this.#states.get(uid);
    if (state && !state.assumed) throw new Error(`pod ${podRef(pod)}(${uid}) was already in added state`);
    this.#requireNode(pod, 'added');
    if (state) {
      if (state.nodeName !== pod.spec.nodeName) {
        this.#log.info(
          { pod: podRef(pod), uid, assumedNode: state.nodeName, currentNode: pod.spec.nodeName },
          'Pod was added to a different node than it was assumed',
        );
      }
      this.#removeState(state);
    }
    this.#addState(pod, false);
  }

  /**
   * Only for added pods. A node change means the cache was wrong: upstream exits the process; we log it loudly and
   * repair from the new object, since one bad event must not take the webhook down.
   */
  updatePod(oldPod: Pod, newPod: Pod): void {
    const uid = oldPod.metadata.uid;
    const state = this.#states.get(uid);
    if (!state) throw new Error(`pod ${podRef(oldPod)}(${uid}) is not added to scheduler cache, so cannot be updated`);
    if (state.assumed) throw new Error(`assumed pod ${podRef(oldPod)}(${uid}) should not be updated`);
    if (newPod.metadata.uid !== uid) {
      throw new Error(
        `pod ${podRef(oldPod)} changed UID from ${uid} to ${newPod.metadata.uid}: remove and add instead`,
      );
    }
    this.#requireNode(newPod, 'updated');
    if (state.nodeName !== newPod.spec.nodeName) {
      this.#log.error(
        { pod: podRef(newPod), uid, cachedNode: state.nodeName, newNode: newPod.spec.nodeName },
        'Pod updated on a different node than previously added to. Scheduler cache was corrupted; repairing from the new object',
      );
    }
    this.#removeState(state);
    this.#addState(newPod, false);
  }

  /** Removes an added or assumed pod, from the node the cache has it on. */
  removePod(pod: Pod): void {
    const uid = pod.metadata.uid;
    const state = this.#states.get(uid);
    if (!state) {
      throw new Error(`pod ${podRef(pod)}(${uid}) is not found in scheduler cache, so cannot be removed from it`);
    }
    // An empty nodeName is the last known state of a missed deletion; anything else is a real disagreement.
    if (pod.spec.nodeName && state.nodeName !== pod.spec.nodeName) {
      this.#log.error(
        { pod: podRef(pod), uid, cachedNode: state.nodeName, eventNode: pod.spec.nodeName },
        'Pod removed from a different node than the cache has it on. Scheduler cache was corrupted; removing it anyway',
      );
    }
    this.#removeState(state);
  }

  isAssumed(uid: string): boolean {
    return this.#states.get(uid)?.assumed ?? false;
  }

  getPod(uid: string): Pod | undefined {
    return this.#states.get(uid)?.pod;
  }

  assumedPods(): AssumedPod[] {
    const out: AssumedPod[] = [];
    for (const [uid, s] of this.#states) {
      if (!s.assumed) continue;
      const finishedAt = this.#finishedAt.get(uid);
      const a: AssumedPod = {
        uid,
        namespace: namespaceOf(s.pod),
        name: s.pod.metadata.name,
        nodeName: s.nodeName,
        bindingFinished: finishedAt !== undefined,
      };
      if (finishedAt !== undefined) a.finishedAt = finishedAt;
      out.push(a);
    }
    return out;
  }

  podCount(): number {
    return this.#states.size;
  }

  // --- nodes ---------------------------------------------------------------------------------------------------

  addNode(node: Node): void {
    const entry = this.#entry(node.metadata.name);
    entry.info.setNode(node);
    this.#tree.addNode(node);
    this.#touch(entry);
  }

  updateNode(_oldNode: Node | undefined, newNode: Node): void {
    this.addNode(newNode);
  }

  /** The node leaves the tree; its NodeInfo stays as a ghost while pods still reference it. */
  removeNode(node: Node): void {
    const name = node.metadata.name;
    const entry = this.#nodes.get(name);
    if (!entry) throw new Error(`node ${name} is not found`);
    entry.info.removeNode();
    if (entry.info.pods.size === 0) this.#drop(entry);
    else this.#touch(entry);
    this.#tree.removeNode(name);
  }

  /** The live NodeInfo (ghosts included); it changes under you, so requests should read a snapshot instead. */
  nodeInfo(name: string): NodeInfo | undefined {
    return this.#infos.get(name);
  }

  nodeNames(): string[] {
    return this.#tree.list().slice();
  }

  /** NodeInfos held, ghosts included (upstream NodeCount). */
  nodeCount(): number {
    return this.#nodes.size;
  }

  generation(): number {
    return this.#generation;
  }

  // --- snapshots -----------------------------------------------------------------------------------------------

  updateSnapshot(snapshot: Snapshot): void {
    snapshot.updateFrom(this.#snapshotSource);
  }

  snapshot(): Snapshot {
    const s = new Snapshot();
    this.updateSnapshot(s);
    return s;
  }

  readonly #snapshotSource: SnapshotSource = {
    generation: () => this.#generation,
    changedSince: (generation) => this.#changedSince(generation),
    tree: this.#tree,
  };

  *#changedSince(generation: number): Generator<MutableNodeInfo> {
    for (let e = this.#head; e && e.info.generation > generation; e = e.next) yield e.info;
  }

  // --- reconciling assumed pods --------------------------------------------------------------------------------

  /**
   * Replaces upstream's time-based expiry: assumed pods whose bind finished more than the TTL ago and that the watch
   * has not confirmed are looked up in the API; bound → confirmed, gone/unbound → forgotten (see reconcile.ts).
   */
  reconcileAssumed(getPod: GetPod): Promise<ReconcileResult> {
    return reconcileAssumedPods(this, getPod, { ttlMs: this.#ttl, now: this.#now(), log: this.#log });
  }

  /** Runs reconcileAssumed every intervalMs (never two at once); returns the stop function. */
  startReconciling(getPod: GetPod, intervalMs: number = this.#ttl): () => void {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      this.reconcileAssumed(getPod)
        .catch((err: unknown) => this.#log.error({ err }, 'Reconciling assumed pods failed'))
        .finally(() => {
          running = false;
        });
    }, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  // --- feeding from the store ----------------------------------------------------------------------------------

  /** Subscribes to the store's Node and Pod events (see store-feed.ts); returns the unsubscribe function. */
  attach(store: ClusterStore): () => void {
    return feedFromStore(this, store, this.#log);
  }

  // --- internals -----------------------------------------------------------------------------------------------

  #requireNode(pod: Pod, verb: string): void {
    if (!pod.spec.nodeName)
      throw new Error(`pod ${podRef(pod)}(${pod.metadata.uid}) has no spec.nodeName, so cannot be ${verb}`);
  }

  #addState(pod: Pod, assumed: boolean): void {
    this.#requireNode(pod, assumed ? 'assumed' : 'added');
    const nodeName = pod.spec.nodeName!;
    const info = new CachedPodInfo(pod, assumed); // first: a pod that cannot be read must not leave an empty entry
    const entry = this.#entry(nodeName);
    entry.info.addPodInfo(info);
    this.#touch(entry);
    this.#states.set(pod.metadata.uid, info);
  }

  #removeState(state: CachedPodInfo): void {
    const uid = state.pod.metadata.uid;
    this.#states.delete(uid);
    this.#finishedAt.delete(uid);
    const entry = this.#nodes.get(state.nodeName);
    if (!entry?.info.removePod(uid)) {
      this.#log.error(
        { pod: podRef(state.pod), uid, node: state.nodeName },
        'Node not found when trying to remove pod',
      );
      return;
    }
    if (entry.info.pods.size === 0 && !entry.info.node) this.#drop(entry);
    else this.#touch(entry);
  }

  #entry(name: string): NodeEntry {
    let entry = this.#nodes.get(name);
    if (!entry) {
      entry = { info: new MutableNodeInfo(name), prev: undefined, next: undefined };
      entry.info.ordinal = this.#freeOrdinals.pop() ?? this.#nextOrdinal++;
      this.#nodes.set(name, entry);
      this.#infos.set(name, entry.info);
    }
    return entry;
  }

  /** Moves a just-changed entry to the head and records the cache's newest generation. */
  #touch(entry: NodeEntry): void {
    this.#generation = entry.info.generation;
    if (this.#head === entry) return;
    this.#unlink(entry);
    entry.next = this.#head;
    if (this.#head) this.#head.prev = entry;
    this.#head = entry;
  }

  /** Forgets a NodeInfo entirely (no node object, no pods). */
  #drop(entry: NodeEntry): void {
    this.#unlink(entry);
    this.#nodes.delete(entry.info.name);
    this.#infos.delete(entry.info.name);
    this.#freeOrdinals.push(entry.info.ordinal);
    this.#generation = nextGeneration();
  }

  #unlink(entry: NodeEntry): void {
    if (entry.prev) entry.prev.next = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    if (this.#head === entry) this.#head = entry.next;
    entry.prev = undefined;
    entry.next = undefined;
  }
}
