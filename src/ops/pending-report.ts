// The pending report kept current in the background: which pods are pending follows the store's Pod events at once;
// their explanations are recomputed, a slice of a few milliseconds at a time, whenever anything a verdict reads has
// changed since. Between slices the event loop serves the verbs, and the worker rests in proportion to the time it
// worked, so a cluster that changes all the time costs at most a share of a core: dutyCycle while no verb came for a
// second, a fifth of it in shorter slices while verbs come (the report is worth less than the verbs' latency); it
// starts no slice while verbs are queued, and rests longer while its slices start late (the process short of CPU).
// While verbs come, a verb that arrives during a slice would wait for its end (about one in ten behind a 1 ms slice):
// so a slice then runs in pieces of a quarter of a millisecond with a turn of the event loop between two, in which a
// request that arrived is read and queued, which ends the slice; and no slice starts or goes on within
// quietMsAfterVerb of a verb's answer, as kube-scheduler calls the next verb of its cycle right then (prioritize after
// filter, bind after that): the slices go between its scheduling cycles. Readers (the route, a scrape) only read what
// is there: nothing waits for the report.
//
// A change of the pods on some nodes (a pod bound, deleted, resized, nominated) makes every explanation out of date,
// but most only on those nodes: an explanation is kept per node (pending-nodes.ts), and refreshing it judges those
// nodes again, which the store's changes since it was computed name (#changes). Explanations whose verdicts read
// pods elsewhere, and every change of another kind, are explained afresh. While verbs come, a sweep over the
// out-of-date explanations starts at most every sweepEveryMsWithVerbs: under pods bound every few milliseconds every
// explanation is always out of date, and refreshing each more often would only take CPU from the verbs.
import { KINDS, type Kind, type Pod } from '../cluster/types.ts';
import type { ExtenderDeps } from '../extender/deps.ts';
import type { Log } from '../log.ts';
import { claimsOf, explainPending, isPending, isServed, type PendingPod, podFields } from './pending.ts';
import { ClaimReferences, ClaimSituation, equivalenceKey } from './pending-equivalence.ts';
import { claimKeys, NodeFingerprints, NodeVerdicts } from './pending-nodes.ts';
import { onlyLabelsChanged, onlyVersionChanged, readsOtherPods } from './pending-relevance.ts';
import type { StorageView } from './storage.ts';
import { storageHeadroom } from './storage-headroom.ts';

const STORAGE_KINDS: ReadonlySet<Kind> = new Set([
  'Node',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'CSIStorageCapacity',
  'StorageClass',
]);

/** A slice due this much later than planned means the process was short of CPU (verbs, GC, other processes). */
const LATE_MS = 5;
/** The longest the worker's rests grow to while the process stays short of CPU (times the duty-cycle rest). */
const MAX_BACKOFF = 64;
/** How long the worker waits before looking again while verbs are queued. */
const BUSY_PAUSE_MS = 2;
/** Verbs came within this long: the worker takes dutyCycleWithVerbs, in slices of at most sliceMsWithVerbs. */
const VERBS_RECENT_MS = 1000;

/** A pod other pods' verdicts read: on a node, or nominated to one. */
const placed = (pod: Pod) => Boolean(pod.spec.nodeName || pod.status?.nominatedNodeName);

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

export interface PendingReportOptions {
  schedulerNames: readonly string[];
  logger?: Log;
  /** Longest run of work before yielding to the event loop. */
  sliceMs?: number;
  /** The same while verbs come (see VERBS_RECENT_MS). */
  sliceMsWithVerbs?: number;
  /**
   * While verbs come, a slice runs in pieces of at most this long, with a turn of the event loop between two (a verb
   * read meanwhile ends the slice): a verb that arrives during a slice waits for the end of a piece, not of the slice.
   */
  pieceMsWithVerbs?: number;
  /**
   * While verbs come, no slice starts (or goes on) within this long after a verb answered: kube-scheduler calls the
   * next verb of its cycle (prioritize after filter, bind after prioritize) right then; the slices go between cycles.
   */
  quietMsAfterVerb?: number;
  /** Largest share of one core the worker takes while the cluster keeps changing (0 < dutyCycle <= 1). */
  dutyCycle?: number;
  /** The same while verbs come. */
  dutyCycleWithVerbs?: number;
  /**
   * While verbs come, the least time from the start of one sweep over the out-of-date explanations to the next: pods
   * bound all the time keep every explanation out of date, and refreshing them more often than this buys little.
   */
  sweepEveryMsWithVerbs?: number;
  /** How long the storage view a pod's claims are judged against may be reused (it changes with every bind). */
  storageMaxAgeMs?: number;
  now?: () => number;
  /** The clock slices are timed by (performance.now() ms): a test steps it to end a slice after every step. */
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

/** The explanation being computed, a slice at a time. */
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
  /** Pending pods not explained yet (they appear once the worker reaches them). */
  waiting: number;
  /** Pods explained with an earlier state than the current one (being refreshed). */
  stale: number;
  /** How long the most out-of-date of those has been (ms since the first change of more than labels after it). */
  behindMs: number;
}

export class PendingReport {
  readonly #deps: ExtenderDeps;
  readonly #names: ReadonlySet<string>;
  readonly #sliceMs: number;
  readonly #sliceMsWithVerbs: number;
  readonly #pieceMsWithVerbs: number;
  readonly #quietMsAfterVerb: number;
  readonly #dutyCycle: number;
  readonly #dutyCycleWithVerbs: number;
  readonly #sweepEveryMsWithVerbs: number;
  /** When the current sweep started (clock ms), whether verbs came lately, and when the next sweep may start. */
  #sweepStartedAt = Number.NEGATIVE_INFINITY;
  #verbs = false;
  #sweepDue = 0;
  readonly #storageMaxAgeMs: number;
  readonly #now: () => number;
  readonly #clock: () => number;
  readonly #logger?: Log;
  readonly #entries = new Map<string, Entry>();
  /** Pods never explained: they go first. */
  readonly #fresh = new Set<string>();
  /** The current sweep over stale entries, and where it is. */
  #sweep: string[] = [];
  #sweepAt = 0;
  #sweepId = 0;
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
  readonly #fingerprints = new NodeFingerprints();
  /** When the recent events that changed more than labels came (performance.now() ms), oldest first. */
  #fullAt: { generation: number; at: number }[] = [];
  #running?: Running;
  /** Results of equivalent pods (equivalenceKey), kept while used. */
  #classes = new Map<string, SharedResult>();
  readonly #claims: ClaimSituation;
  /** Entries whose explanation reads other pods (or has none yet): without any, a change of labels needs no work. */
  #readers = 0;
  /** Bumped by the events of the kinds the storage view reads. */
  #storageGeneration = 0;
  #storage?: TakenView;
  #timer?: NodeJS.Timeout | NodeJS.Immediate;
  /** Multiplies the worker's rest: doubled each time a slice starts late, halved when on time. */
  #backoff = 1;
  #busy: () => boolean = () => false;
  #lastVerbAt: () => number = () => Number.NEGATIVE_INFINITY;
  #lastAnswerAt: () => number = () => Number.NEGATIVE_INFINITY;
  /** A slice under way while verbs come, run a piece at a time: when it must end, and the work done so far (ms). */
  #slice?: { deadline: number; worked: number };
  #closed = false;
  #unsubscribe: (() => void)[] = [];
  #idle: (() => void)[] = [];
  /** Wall-clock ms the first full report took from start (undefined until every pending pod was explained once). */
  firstCompleteMs?: number;
  #startedAt = 0;
  /** CPU-bound milliseconds spent explaining, in total (the bench reads it). */
  workMs = 0;
  /** Explanations computed (pods explained through an equivalent pod's explanation are not counted). */
  explained = 0;
  /** Explanations refreshed on the nodes that changed only. */
  refreshed = 0;

  constructor(deps: ExtenderDeps, options: PendingReportOptions) {
    this.#deps = deps;
    this.#names = new Set(options.schedulerNames);
    this.#sliceMs = options.sliceMs ?? 2;
    this.#sliceMsWithVerbs = options.sliceMsWithVerbs ?? 1;
    this.#pieceMsWithVerbs = options.pieceMsWithVerbs ?? 0.25;
    this.#quietMsAfterVerb = options.quietMsAfterVerb ?? 2;
    this.#dutyCycle = options.dutyCycle ?? 0.5;
    this.#dutyCycleWithVerbs = options.dutyCycleWithVerbs ?? 0.1;
    this.#sweepEveryMsWithVerbs = options.sweepEveryMsWithVerbs ?? 5000;
    this.#storageMaxAgeMs = options.storageMaxAgeMs ?? 1000;
    this.#now = options.now ?? Date.now;
    this.#clock = options.clock ?? (() => performance.now());
    this.#logger = options.logger;
    this.#claims = new ClaimSituation(deps, new ClaimReferences());
  }

  /**
   * Started and not closed. `serve` starts it once the store is synced when the pendingReport setting is on
   * (--pending-report, TOPOLOGY_EXTENDER_PENDING_REPORT=true or `pendingReport: true` in --config; off by default,
   * when GET /api/v1/pending answers 503); `analyze` starts one, explains every pod and closes it (pendingOnce).
   */
  get running(): boolean {
    return this.#unsubscribe.length > 0;
  }

  /** Subscribes to the store and takes its pending pods; explaining starts on the next turn of the event loop. */
  start(): this {
    const store = this.#deps.store;
    this.#startedAt = this.#clock();
    for (const kind of KINDS) {
      this.#unsubscribe.push(
        store.on(kind, (event) => {
          if (event.kind === 'Pod') {
            const pod = event.obj as Pod;
            const old = event.type === 'update' ? (event.old as Pod) : undefined;
            const references = this.#claims.references;
            if (old) references.remove(old);
            if (event.type === 'delete') references.remove(pod);
            else references.add(pod);
            this.#track(event.type === 'delete' ? undefined : pod, pod);
            // A pending pod is on no node and in no one's verdict, unless nominated: its own changes are tracked above.
            if (!placed(pod) && !(old && placed(old))) {
              this.#schedule();
              return;
            }
            const nodes = [...new Set([...placements(old), ...placements(pod)])].filter((n): n is string => !!n);
            const labelsOnly = old !== undefined && onlyLabelsChanged(old, pod);
            // A change of labels leaves what a node-local verdict reads of the node as it was.
            if (!labelsOnly) {
              if (old) this.#fingerprints.remove(old);
              if (event.type === 'delete') this.#fingerprints.remove(pod);
              else this.#fingerprints.add(pod, placements(pod));
            }
            // Out of date only for the explanations that read other pods (pending-relevance.ts).
            if (labelsOnly) {
              this.#generation++;
              // Only the victims on a preemption candidate can change: kept per node, not logged (most events).
              for (const n of nodes) this.#relabelled.set(n, this.#generation);
              if (this.#readers > 0) this.#schedule();
              return;
            }
            this.#generation++;
            this.#full();
            if (hasPodAffinityTerms(pod) || hasPodAffinityTerms(old)) this.#lastAll = this.#generation;
            else {
              const claims = [...new Set([...claimKeys(pod), ...(old ? claimKeys(old) : [])])];
              const generation = this.#generation;
              for (const node of nodes) this.#logChange({ generation, node });
              if (claims.length > 0) this.#logChange({ generation, claims });
            }
            this.#schedule();
            return;
          }
          this.#generation++;
          this.#full();
          this.#lastAll = this.#generation;
          if (STORAGE_KINDS.has(kind)) this.#storageGeneration++;
          this.#schedule();
        }),
      );
    }
    for (const pod of store.list('Pod')) {
      this.#claims.references.add(pod);
      this.#fingerprints.add(pod, placements(pod));
      this.#track(pod, pod);
    }
    this.#schedule();
    return this;
  }

  close(): void {
    this.#closed = true;
    for (const u of this.#unsubscribe.splice(0)) u();
    this.#cancel();
    this.#release();
  }

  /** The report as it stands, never computed here. */
  snapshot(): PendingSnapshot {
    const items: PendingPod[] = [];
    let waiting = 0;
    let stale = 0;
    let oldest = Number.POSITIVE_INFINITY;
    for (const e of this.#entries.values()) {
      if (!e.result) waiting++;
      else {
        items.push(e.result);
        if (!this.#current(e)) {
          stale++;
          oldest = Math.min(oldest, e.generation);
        }
      }
    }
    return { items, waiting, stale, behindMs: stale > 0 ? this.#since(oldest) : 0 };
  }

  /** Resolves once every pending pod is explained with the current state (tests wait on it, never on a clock). */
  idle(): Promise<void> {
    if (this.#isCurrent()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /**
   * While `busy` says so (verbs are queued), the worker starts no slice: the verbs go first. `lastVerbAt`: when the
   * last verb arrived (performance.now() ms), so that the worker works less while verbs come; `lastAnswerAt`: when the
   * last verb answered, so that no slice starts within quietMsAfterVerb of it.
   */
  yieldTo(busy: () => boolean, lastVerbAt?: () => number, lastAnswerAt?: () => number): void {
    this.#busy = busy;
    if (lastVerbAt) this.#lastVerbAt = lastVerbAt;
    if (lastAnswerAt) this.#lastAnswerAt = lastAnswerAt;
  }

  /** Explains every pending pod now, synchronously (the CLI, which serves no verbs). */
  runToEnd(): void {
    this.#cancel();
    this.#slice = undefined;
    this.#verbs = false;
    this.#work(Number.POSITIVE_INFINITY);
  }

  #track(pod: Pod | undefined, old: Pod): void {
    const uid = old.metadata.uid;
    if (pod && isPending(pod) && isServed(pod, this.#names)) {
      const e = this.#entries.get(uid);
      if (e) {
        // The pod itself changed (its labels, a nomination): its explanation is out of date.
        if (!onlyVersionChanged(e.pod, pod)) e.generation = -1;
        e.pod = pod;
      } else {
        this.#entries.set(uid, { pod, generation: -1, readsOtherPods: true });
        this.#readers++;
        this.#fresh.add(uid);
      }
      return;
    }
    if (this.#entries.get(uid)?.readsOtherPods) this.#readers--;
    this.#entries.delete(uid);
    this.#fresh.delete(uid);
    if (this.#running?.uid === uid) this.#running = undefined;
  }

  #isCurrent(): boolean {
    if (this.#running || this.#fresh.size > 0) return false;
    for (const e of this.#entries.values()) if (!this.#current(e)) return false;
    return true;
  }

  #setReads(e: Entry, reads: boolean): void {
    if (e.readsOtherPods !== reads) this.#readers += reads ? 1 : -1;
    e.readsOtherPods = reads;
  }

  /** Computed at `generation`, still true now: nothing changed since, or only other pods' labels it does not read. */
  #current(r: { generation: number; readsOtherPods: boolean }): boolean {
    return r.generation === this.#generation || (!r.readsOtherPods && r.generation >= this.#lastFull);
  }

  /** The next turn of the worker in `pauseMs` (a timer; from 1 ms, or when `timer` says so), else on the next turn. */
  #schedule(pauseMs = 0, timer = pauseMs >= 1): void {
    if (this.#timer || this.#closed) return;
    const due = this.#clock() + pauseMs;
    const run = () => {
      this.#timer = undefined;
      this.#turn(due);
    };
    this.#timer = timer ? setTimeout(run, Math.max(1, pauseMs)) : setImmediate(run);
  }

  /** A turn of the worker, due at `due`: a slice, or a piece of one while verbs come, unless the verbs go first. */
  #turn(due: number): void {
    const started = this.#clock();
    const slice = this.#slice;
    this.#slice = undefined;
    // Late: something else had the CPU (verbs, a GC, other processes on the node). The report is worth less than the
    // verbs' latency: it rests longer until its slices start on time again. (A piece follows the one before at once.)
    if (!slice)
      this.#backoff =
        started - due > LATE_MS ? Math.min(this.#backoff * 2, MAX_BACKOFF) : Math.max(1, this.#backoff / 2);
    const answered = this.#lastAnswerAt();
    const verbs = started - Math.max(this.#lastVerbAt(), answered) < VERBS_RECENT_MS;
    this.#verbs = verbs;
    // A verb is queued, or answered just now (the next verb of its cycle is on its way): a slice under way ends here.
    const quietUntil = verbs ? answered + this.#quietMsAfterVerb : started;
    if (this.#busy() || started < quietUntil) {
      const pause = this.#busy() ? BUSY_PAUSE_MS : quietUntil - started;
      if (slice) this.#rest(slice.worked, verbs, pause);
      else this.#schedule(pause, true);
      return;
    }
    this.#sweepDue = 0;
    const deadline =
      slice?.deadline ?? started + (verbs ? Math.min(this.#sliceMs, this.#sliceMsWithVerbs) : this.#sliceMs);
    const more = this.#work(verbs ? Math.min(deadline, started + this.#pieceMsWithVerbs) : deadline);
    const now = this.#clock();
    this.workMs += now - started;
    const worked = (slice?.worked ?? 0) + now - started;
    // The slice goes on after a turn of the event loop, in which a verb that arrived is read (and then goes first).
    if (more && verbs && now < deadline) {
      this.#slice = { deadline, worked };
      this.#schedule(0, false);
    } else this.#rest(worked, verbs);
  }

  /** After a slice that worked `worked` ms: done, or the next slice once the duty cycle allows (and `atLeast`). */
  #rest(worked: number, verbs: boolean, atLeast = 0): void {
    if (this.#isCurrent()) {
      this.firstCompleteMs ??= this.#clock() - this.#startedAt;
      this.#release();
      return;
    }
    const duty = verbs ? Math.min(this.#dutyCycle, this.#dutyCycleWithVerbs) : this.#dutyCycle;
    const rest = ((worked * (1 - duty)) / duty) * this.#backoff;
    // Waiting for the next sweep: looked at again within a second, as verbs may stop coming meanwhile.
    const wait = Math.min(this.#sweepDue - this.#clock(), VERBS_RECENT_MS);
    const pause = Math.max(rest, wait, atLeast);
    this.#schedule(pause, pause >= 1 || atLeast > 0);
  }

  /** An event that changed more than labels: what it makes out of date is counted behind from now. */
  #full(): void {
    this.#lastFull = this.#generation;
    this.#fullAt.push({ generation: this.#generation, at: this.#clock() });
    if (this.#fullAt.length > MAX_CHANGES) this.#fullAt.splice(0, MAX_CHANGES / 2);
  }

  /** Milliseconds since the first change of more than labels after `generation` (the oldest kept, when earlier). */
  #since(generation: number): number {
    const first = this.#fullAt.find((f) => f.generation > generation) ?? this.#fullAt[0];
    return first ? this.#clock() - first.at : 0;
  }

  #logChange(change: NodeChange): void {
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

  /**
   * The nodes to judge again to bring `x` up to date, or undefined when it must be explained afresh: it is not kept
   * per node, a change since was of another kind or names one of its claims, or its pod, still pending, is nominated
   * (judged, it would skip its own nomination, which the pods equivalent to it see). Bound since, it stands for them
   * all the same: on its node it counts as they would count it, but for its claims, which the bind's change names.
   */
  #changedNodes(x: SharedResult): Set<string> | undefined {
    const nodes = x.nodes;
    if (!nodes || x.generation < this.#lastAll || x.generation < this.#changesFrom) return undefined;
    const own = this.#entries.get(nodes.pod.metadata.uid);
    if (own && placed(own.pod)) return undefined;
    const changes = this.#changes;
    const changed = new Set<string>();
    const candidate = nodes.candidate;
    if (candidate && (this.#relabelled.get(candidate) ?? -1) > x.generation) changed.add(candidate);
    for (let i = this.#firstChangeAfter(x.generation); i < changes.length; i++) {
      const c = changes[i];
      if (c.node !== undefined) changed.add(c.node);
      else for (const k of c.claims ?? []) if (nodes.claims.has(k)) return undefined;
    }
    return changed;
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

  #cancel(): void {
    if (!this.#timer) return;
    clearTimeout(this.#timer as NodeJS.Timeout);
    clearImmediate(this.#timer as NodeJS.Immediate);
    this.#timer = undefined;
  }

  #release(): void {
    const waiters = this.#idle;
    this.#idle = [];
    for (const resolve of waiters) resolve();
  }

  /** Works until `deadline` (performance.now() ms) or until nothing is left to do now (then false). */
  #work(deadline: number): boolean {
    while (this.#clock() < deadline) {
      if (!this.#running) {
        const next = this.#startNext();
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
      if (running.nodes && !running.refreshing)
        for (let i = this.#firstChangeAfter(running.generation); i < this.#changes.length; i++)
          running.nodes.forget(this.#changes[i].node);
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

  /** Picks the next pod to explain (never explained first, then the sweep's stale ones); false when all are current. */
  #startNext(): 'started' | 'shared' | 'none' {
    for (;;) {
      let uid: string | undefined = this.#fresh.values().next().value;
      if (uid !== undefined) this.#fresh.delete(uid);
      else {
        if (this.#sweepAt >= this.#sweep.length) {
          const now = this.#clock();
          if (this.#verbs && now - this.#sweepStartedAt < this.#sweepEveryMsWithVerbs) {
            this.#sweepDue = this.#sweepStartedAt + this.#sweepEveryMsWithVerbs;
            return 'none';
          }
          const stale = [...this.#entries].filter(([, e]) => !this.#current(e)).map(([u]) => u);
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
      if (!e || (e.result && this.#current(e))) continue;
      const key = equivalenceKey(e.pod, this.#claims);
      // A pod of its own: its explanation, unless the pod changed since.
      const same = key ? this.#classes.get(key) : e.generation === -1 ? undefined : e.own;
      if (same) same.usedIn = this.#sweepId;
      if (key && same && (same.sweepId === this.#sweepId || this.#current(same))) {
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
          generation: this.#generation,
          storage: same.storage,
          refreshing: same,
        };
        return 'started';
      }
      const storage = this.#storageView(now);
      this.explained++;
      // Judged against an older storage view, the result counts as of that view's time: it is refreshed again later.
      const current = storage.storageGeneration === this.#storageGeneration;
      const running: Running = {
        uid,
        pod: e.pod,
        key,
        steps: explainPending(this.#deps, e.pod, storage.view, now, (j) => {
          running.nodes = NodeVerdicts.of(j, this.#fingerprints);
        }),
        generation: current ? this.#generation : storage.generation,
        storage: storage.view,
      };
      this.#running = running;
      return 'started';
    }
  }

  /** The storage view, taken again when it is out of date and older than storageMaxAgeMs (a bind changes it). */
  #storageView(now: number): TakenView {
    const s = this.#storage;
    if (!s || (s.storageGeneration !== this.#storageGeneration && now - s.at >= this.#storageMaxAgeMs))
      this.#storage = {
        at: now,
        view: storageHeadroom(this.#deps.store).view(),
        generation: this.#generation,
        storageGeneration: this.#storageGeneration,
      };
    return this.#storage!;
  }
}

/** The report of a store loaded once (the CLI): every pending pod explained, synchronously. */
export function pendingOnce(deps: ExtenderDeps, schedulerNames: readonly string[]): PendingSnapshot {
  const report = new PendingReport(deps, { schedulerNames, storageMaxAgeMs: Number.POSITIVE_INFINITY });
  report.start();
  report.runToEnd();
  report.close();
  return report.snapshot();
}
