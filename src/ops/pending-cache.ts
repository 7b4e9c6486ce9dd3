// The pending report's explanations (pending-report.ts): one per pending pod that the schedulers named serve, kept
// until the cluster event log (pending-events.ts) says it is out of date, and brought up to date a step at a time by
// work(), which whoever runs it (the CPU throttle, or runToEnd) stops at a deadline. Pods never explained go first;
// then a sweep over the out-of-date ones. An explanation is shared by the pods equivalent to it
// (pending-equivalence.ts), and one kept per node (pending-nodes.ts) is refreshed on the nodes that changed only.
// While verbs come, a sweep starts at most every sweepEveryMsWithVerbs, and only once the report was read (the route, a
// scrape) since the last one started: under pods bound every few milliseconds every explanation is always out of date,
// and refreshing them for no reader would only take CPU from the verbs. Pods never explained go on at once (they must
// appear), and without verbs every sweep runs. A pod kube-scheduler has not tried yet is explained once it has waited
// explainAfterMs since its creation: most pods bind before that, and each explanation of a pod with claims of its own
// is a judge over every node, CPU the verbs need while a burst of them is scheduled.
import type { Pod } from '../cluster/types.ts';
import type { ExtenderDeps } from '../extender/deps.ts';
import type { Log } from '../log.ts';
import {
  claimsOf,
  explainPending,
  isPending,
  isServed,
  type PendingPod,
  podFields,
  triedByScheduler,
} from './pending.ts';
import { ClaimReferences, ClaimSituation, equivalenceKey } from './pending-equivalence.ts';
import { type ClusterEventLog, placed } from './pending-events.ts';
import { NodeVerdicts } from './pending-nodes.ts';
import { onlyVersionChanged, readsOtherPods } from './pending-relevance.ts';
import type { StorageView } from './storage.ts';
import { storageHeadroom } from './storage-headroom.ts';

/** While verbs come and nobody read the report, how often the worker looks again whether a reader came (ms). */
const UNREAD_RECHECK_MS = 1000;

export interface ExplanationCacheOptions {
  schedulerNames: readonly string[];
  logger?: Log;
  /** While verbs come, the least time from the start of one sweep over the out-of-date explanations to the next. */
  sweepEveryMsWithVerbs?: number;
  /** How long the storage view a pod's claims are judged against may be reused (it changes with every bind). */
  storageMaxAgeMs?: number;
  /**
   * A pending pod kube-scheduler has not tried yet (no PodScheduled False) is explained once it is this old (ms since
   * its creationTimestamp; 0, the default: at once). For a live cluster, where kube-scheduler tries every pod.
   */
  explainAfterMs?: number;
  now?: () => number;
  /** performance.now() ms, or a test's: sweeps are timed by it. */
  clock?: () => number;
}

/** A storage view, with the generations it was taken at. */
interface TakenView {
  at: number;
  view: StorageView;
  generation: number;
  storageGeneration: number;
}

interface Entry {
  pod: Pod;
  result?: PendingPod;
  /** The state generation the result was computed at (-1: none yet, or the pod changed since). */
  generation: number;
  /** The result read other pods (pending-relevance.ts): a change of their labels alone makes it out of date. */
  readsOtherPods: boolean;
  /** The explanation of a pod equivalent to no other (no equivalence key). */
  own?: SharedResult;
}

/** An explanation computed for one pod and shared by the pods equivalent to it (pending-equivalence.ts). */
interface SharedResult {
  /** The sweep it was computed in (shared through that sweep even when out of date since). */
  sweepId: number;
  /** The last sweep that used it: unused for two, it is dropped. */
  usedIn: number;
  generation: number;
  readsOtherPods: boolean;
  result: PendingPod;
  /** The storage view its claims were judged against: an equivalent pod's claims are judged against it too. */
  storage: StorageView;
  /** Its verdicts per node, for a pod whose verdicts read only the node judged. */
  nodes?: NodeVerdicts;
}

/** The explanation being computed, a step at a time. */
interface Running {
  uid: string;
  pod: Pod;
  key?: string;
  steps: Generator<void, PendingPod | undefined>;
  generation: number;
  storage: StorageView;
  /** Kept per node (a full explanation's, set when judged). */
  nodes?: NodeVerdicts;
  /** The explanation being refreshed node by node. */
  refreshing?: SharedResult;
}

export interface PendingSnapshot {
  items: PendingPod[];
  /** Pending pods not explained yet (they appear once the worker reaches them; a pod not tried yet once it is due). */
  waiting: number;
  /** Pods explained with an earlier state than the current one (being refreshed). */
  stale: number;
  /** How long the most out-of-date of those has been (ms since the first change of more than labels after it). */
  behindMs: number;
}

export class ExplanationCache {
  readonly #deps: ExtenderDeps;
  readonly #names: ReadonlySet<string>;
  readonly #events: ClusterEventLog;
  readonly #sweepEveryMsWithVerbs: number;
  readonly #storageMaxAgeMs: number;
  readonly #explainAfterMs: number;
  readonly #now: () => number;
  readonly #clock: () => number;
  readonly #logger?: Log;
  readonly #entries = new Map<string, Entry>();
  /** Pods never explained: they go first. */
  readonly #fresh = new Set<string>();
  /** Pods never explained that kube-scheduler has not tried yet, with when they become fresh (clock ms). */
  readonly #notTried = new Map<string, number>();
  /** The earliest of those (or earlier: a pod bound since is forgotten at the next look), +Infinity when none. */
  #notTriedFirst = Number.POSITIVE_INFINITY;
  /** The current sweep over stale entries, and where it is. */
  #sweep: string[] = [];
  #sweepAt = 0;
  #sweepId = 0;
  /** When the current sweep started (clock ms), and when the next may start while verbs come (0: not waiting). */
  #sweepStartedAt = Number.NEGATIVE_INFINITY;
  #sweepDue = 0;
  /** When the report was last read (clock ms): a sweep while verbs come waits for a read after the last one started. */
  #readAt = Number.NEGATIVE_INFINITY;
  #running?: Running;
  /** Results of equivalent pods (equivalenceKey), kept while used. */
  #classes = new Map<string, SharedResult>();
  readonly #claims: ClaimSituation;
  /** Entries whose explanation reads other pods (or has none yet): without any, a change of labels needs no work. */
  #readers = 0;
  #storage?: TakenView;
  /** Explanations computed (pods explained through an equivalent pod's explanation are not counted). */
  explained = 0;
  /** Explanations refreshed on the nodes that changed only. */
  refreshed = 0;

  constructor(deps: ExtenderDeps, events: ClusterEventLog, options: ExplanationCacheOptions) {
    this.#deps = deps;
    this.#events = events;
    this.#names = new Set(options.schedulerNames);
    this.#sweepEveryMsWithVerbs = options.sweepEveryMsWithVerbs ?? 5000;
    this.#storageMaxAgeMs = options.storageMaxAgeMs ?? 1000;
    this.#explainAfterMs = options.explainAfterMs ?? 0;
    this.#now = options.now ?? Date.now;
    this.#clock = options.clock ?? (() => performance.now());
    this.#logger = options.logger;
    this.#claims = new ClaimSituation(deps, new ClaimReferences());
  }

  /** Explanations that read other pods (or none yet): a change of other pods' labels makes only those out of date. */
  get readers(): number {
    return this.#readers;
  }

  /** While verbs come, when the next sweep may start (clock ms; 0 when work() did not stop for it). */
  get sweepDue(): number {
    return this.#sweepDue;
  }

  /**
   * When the first pod kube-scheduler has not tried yet is due to be explained (clock ms; 0: none). Until then such
   * pods are no work: upToDate() leaves them out, so the worker sleeps instead of looking at them while a burst lasts.
   */
  get notTriedDue(): number {
    return this.#notTried.size === 0 ? 0 : this.#notTriedFirst;
  }

  /** When work held back is due (clock ms; 0: none): the next sweep or the first pod not tried yet, whichever first. */
  get dueAt(): number {
    const sweep = this.#sweepDue;
    const notTried = this.notTriedDue;
    return sweep === 0 || notTried === 0 ? sweep + notTried : Math.min(sweep, notTried);
  }

  /** A pod in the store when the report started. */
  listed(pod: Pod): void {
    this.#claims.references.add(pod);
    this.#track(pod, pod);
  }

  /** A Pod event (`old`: the pod before an update): a pending pod is taken, changed or dropped. */
  podChanged(pod: Pod, old: Pod | undefined, deleted: boolean): void {
    const references = this.#claims.references;
    if (old) references.remove(old);
    if (deleted) references.remove(pod);
    else references.add(pod);
    this.#track(deleted ? undefined : pod, pod);
  }

  /**
   * Takes the first storage view now when a pod waits to be explained: that first build walks every PV, claim and
   * CSIStorageCapacity (a second at 15,000 nodes), longer than a throttled slice may ever hold the verbs.
   */
  prepareStorageView(): void {
    if (this.#fresh.size > 0 || this.#notTried.size > 0) this.#storageView(this.#now());
  }

  /** Every pending pod due to be explained is, with the current state (pods not tried yet and not due are not). */
  upToDate(): boolean {
    this.#promoteDueNotTried();
    if (this.#running || this.#fresh.size > 0) return false;
    for (const [uid, e] of this.#entries) if (!this.#events.current(e) && !this.#notTried.has(uid)) return false;
    return true;
  }

  /** The report as it stands, never computed here. */
  snapshot(): PendingSnapshot {
    this.#readAt = this.#clock();
    const items: PendingPod[] = [];
    let waiting = 0;
    let stale = 0;
    let oldest = Number.POSITIVE_INFINITY;
    for (const e of this.#entries.values()) {
      if (!e.result) waiting++;
      else {
        items.push(e.result);
        if (!this.#events.current(e)) {
          stale++;
          oldest = Math.min(oldest, e.generation);
        }
      }
    }
    return { items, waiting, stale, behindMs: stale > 0 ? this.#events.behindMs(oldest) : 0 };
  }

  /**
   * Works until `deadline` (clock ms) or until nothing is left to do now (then false). While `verbs` come, a sweep
   * waits for sweepDue (then false too).
   */
  work(deadline: number, verbs: boolean): boolean {
    this.#sweepDue = 0;
    this.#promoteDueNotTried();
    while (this.#clock() < deadline) {
      if (!this.#running) {
        const next = this.#startNext(verbs);
        if (next === 'none') return false;
        // An equivalent pod's explanation copied: the clock is read again before the next (thousands may follow).
        if (next === 'shared') continue;
      }
      const running = this.#running!;
      let next: IteratorResult<void, PendingPod | undefined>;
      try {
        next = running.steps.next();
      } catch (err) {
        // A pod whose explanation fails is left as it was until the state changes again; the verbs are not affected.
        this.#logger?.warn({ err, pod: running.uid }, 'pending report: explaining a pod failed');
        const e = this.#entries.get(running.uid);
        if (e) e.generation = running.generation;
        // Its verdicts per node may be half judged: the next refresh explains it afresh.
        if (running.refreshing) running.refreshing.nodes = undefined;
        this.#running = undefined;
        continue;
      }
      if (!next.done) continue;
      this.#running = undefined;
      const e = this.#entries.get(running.uid);
      if (!e) continue;
      const value = next.value;
      if (!value) {
        // Not to be followed node by node after all (refresh said why): explained afresh next.
        if (running.refreshing) running.refreshing.nodes = undefined;
        continue;
      }
      // A refresh derives the entry of the pod it keeps (an equivalent one): this pod's own fields and claims.
      e.result = running.refreshing
        ? { ...value, ...podFields(e.pod), claims: claimsOf(this.#deps.store, e.pod, running.storage) }
        : value;
      this.#setReads(e, readsOtherPods(running.pod, value));
      // The pod changed while it was being explained: its explanation is already out of date.
      e.generation = e.pod === running.pod ? running.generation : -1;
      // Nodes whose pods changed while judge ran were judged as they were then, or as they are now: judged again.
      if (running.nodes && !running.refreshing) this.#events.forgetChangedNodes(running.nodes, running.generation);
      const x: SharedResult = running.refreshing ?? {
        sweepId: this.#sweepId,
        usedIn: this.#sweepId,
        generation: running.generation,
        readsOtherPods: e.readsOtherPods,
        result: value,
        storage: running.storage,
        nodes: running.nodes,
      };
      Object.assign(x, {
        sweepId: this.#sweepId,
        usedIn: this.#sweepId,
        generation: running.generation,
        readsOtherPods: e.readsOtherPods,
        result: value,
      });
      if (running.key) this.#classes.set(running.key, x);
      else e.own = x;
    }
    return true;
  }

  #track(pod: Pod | undefined, old: Pod): void {
    const uid = old.metadata.uid;
    if (pod && isPending(pod) && isServed(pod, this.#names)) {
      const e = this.#entries.get(uid);
      if (e) {
        // The pod itself changed (its labels, a nomination): its explanation is out of date.
        if (!onlyVersionChanged(e.pod, pod)) e.generation = -1;
        e.pod = pod;
        if (this.#notTried.has(uid) && triedByScheduler(pod)) {
          this.#notTried.delete(uid);
          this.#fresh.add(uid);
        }
      } else {
        this.#entries.set(uid, { pod, generation: -1, readsOtherPods: true });
        this.#readers++;
        const wait = triedByScheduler(pod) ? 0 : this.#explainAfterMs - this.#ageMs(pod);
        if (wait > 0) {
          const due = this.#clock() + wait;
          this.#notTried.set(uid, due);
          this.#notTriedFirst = Math.min(this.#notTriedFirst, due);
        } else this.#fresh.add(uid);
      }
      return;
    }
    if (this.#entries.get(uid)?.readsOtherPods) this.#readers--;
    this.#entries.delete(uid);
    this.#fresh.delete(uid);
    this.#notTried.delete(uid);
    if (this.#running?.uid === uid) this.#running = undefined;
  }

  /** How long ago the pod was created (ms; 0 without a creationTimestamp, so that it waits the whole time). */
  #ageMs(pod: Pod): number {
    const created = pod.metadata.creationTimestamp ? Date.parse(pod.metadata.creationTimestamp) : Number.NaN;
    return Number.isNaN(created) ? 0 : this.#now() - created;
  }

  /** Pods not tried yet that have waited long enough become fresh. */
  #promoteDueNotTried(): void {
    if (this.#notTried.size === 0 || this.#clock() < this.#notTriedFirst) return;
    const now = this.#clock();
    let first = Number.POSITIVE_INFINITY;
    for (const [uid, due] of this.#notTried) {
      if (due > now) first = Math.min(first, due);
      else {
        this.#notTried.delete(uid);
        this.#fresh.add(uid);
      }
    }
    this.#notTriedFirst = first;
  }

  #setReads(e: Entry, reads: boolean): void {
    if (e.readsOtherPods !== reads) this.#readers += reads ? 1 : -1;
    e.readsOtherPods = reads;
  }

  /**
   * The nodes to judge again to bring `x` up to date, or undefined when it must be explained afresh: it is not kept
   * per node, a change since was of another kind or names one of its claims, or its pod, still pending, is nominated
   * (judged, it would skip its own nomination, which the pods equivalent to it see). Bound since, it stands for them
   * all the same: on its node it counts as they would count it, but for its claims, which the bind's change names.
   */
  #changedNodes(x: SharedResult): Set<string> | undefined {
    const nodes = x.nodes;
    if (!nodes || !this.#events.followsNodeByNode(x.generation)) return undefined;
    const own = this.#entries.get(nodes.pod.metadata.uid);
    if (own && placed(own.pod)) return undefined;
    return this.#events.changedNodes(nodes, x.generation);
  }

  /** Picks the next pod to explain (never explained first, then the sweep's stale ones); 'none' when all are current. */
  #startNext(verbs: boolean): 'started' | 'shared' | 'none' {
    for (;;) {
      let uid: string | undefined = this.#fresh.values().next().value;
      if (uid !== undefined) this.#fresh.delete(uid);
      else {
        if (this.#sweepAt >= this.#sweep.length) {
          const now = this.#clock();
          const due = this.#sweepStartedAt + this.#sweepEveryMsWithVerbs;
          const unread = this.#readAt < this.#sweepStartedAt;
          if (verbs && (now < due || unread)) {
            this.#sweepDue = unread ? Math.max(due, now + UNREAD_RECHECK_MS) : due;
            return 'none';
          }
          const stale = [...this.#entries]
            .filter(([u, e]) => !this.#events.current(e) && !this.#notTried.has(u))
            .map(([u]) => u);
          if (stale.length === 0) return 'none';
          this.#sweepStartedAt = now;
          this.#sweep = stale;
          this.#sweepAt = 0;
          this.#sweepId++;
          for (const [key, x] of this.#classes) if (x.usedIn < this.#sweepId - 2) this.#classes.delete(key);
        }
        uid = this.#sweep[this.#sweepAt++];
      }
      const e = this.#entries.get(uid);
      if (!e || (e.result && this.#events.current(e)) || this.#notTried.has(uid)) continue;
      const key = equivalenceKey(e.pod, this.#claims);
      // A pod of its own: its explanation, unless the pod changed since.
      const same = key ? this.#classes.get(key) : e.generation === -1 ? undefined : e.own;
      if (same) same.usedIn = this.#sweepId;
      if (key && same && (same.sweepId === this.#sweepId || this.#events.current(same))) {
        e.result = { ...same.result, ...podFields(e.pod), claims: claimsOf(this.#deps.store, e.pod, same.storage) };
        e.generation = same.generation;
        this.#setReads(e, same.readsOtherPods);
        return 'shared';
      }
      const now = this.#now();
      const changed = same && this.#changedNodes(same);
      if (same?.nodes && changed) {
        this.refreshed++;
        this.#running = {
          uid,
          pod: e.pod,
          key,
          steps: same.nodes.refresh(this.#deps, changed, same.storage, now),
          generation: this.#events.generation,
          storage: same.storage,
          refreshing: same,
        };
        return 'started';
      }
      const storage = this.#storageView(now);
      this.explained++;
      // Judged against an older storage view, the result counts as of that view's time: it is refreshed again later.
      const current = storage.storageGeneration === this.#events.storageGeneration;
      const running: Running = {
        uid,
        pod: e.pod,
        key,
        steps: explainPending(this.#deps, e.pod, storage.view, now, (j) => {
          running.nodes = NodeVerdicts.of(j, this.#events.fingerprints);
        }),
        generation: current ? this.#events.generation : storage.generation,
        storage: storage.view,
      };
      this.#running = running;
      return 'started';
    }
  }

  /** The storage view, taken again when it is out of date and older than storageMaxAgeMs (a bind changes it). */
  #storageView(now: number): TakenView {
    const s = this.#storage;
    if (!s || (s.storageGeneration !== this.#events.storageGeneration && now - s.at >= this.#storageMaxAgeMs))
      this.#storage = {
        at: now,
        view: storageHeadroom(this.#deps.store).view(),
        generation: this.#events.generation,
        storageGeneration: this.#events.storageGeneration,
      };
    return this.#storage!;
  }
}
