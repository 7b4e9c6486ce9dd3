// The pending report kept current in the background: which pods are pending follows the store's Pod events at once;
// their explanations are recomputed, a slice of a few milliseconds at a time, whenever anything a verdict reads has
// changed since. Between slices the event loop serves the verbs, and the worker rests in proportion to the time it
// worked, so a cluster that changes all the time costs at most a share of a core: dutyCycle while no verb came for a
// second, a fifth of it in shorter slices while verbs come (a verb that arrives during a slice waits for its end, and
// the report is worth less than the verbs' latency); it starts no slice while verbs are queued, and rests longer while
// its slices start late (the process short of CPU). Readers (the route, a scrape) only read what is there: nothing
// waits for the report.
import { KINDS, type Kind, type Pod } from '../cluster/types.ts';
import type { ExtenderDeps } from '../extender/deps.ts';
import type { Log } from '../log.ts';
import { claimsOf, explainPending, isPending, isServed, type PendingPod, podFields } from './pending.ts';
import { ClaimReferences, ClaimSituation, equivalenceKey } from './pending-equivalence.ts';
import { onlyLabelsChanged, onlyVersionChanged, readsOtherPods } from './pending-relevance.ts';
import { type StorageView, storageView } from './storage.ts';

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

export interface PendingReportOptions {
  schedulerNames: readonly string[];
  logger?: Log;
  /** Longest run of work before yielding to the event loop. */
  sliceMs?: number;
  /** The same while verbs come (see VERBS_RECENT_MS). */
  sliceMsWithVerbs?: number;
  /** Largest share of one core the worker takes while the cluster keeps changing (0 < dutyCycle <= 1). */
  dutyCycle?: number;
  /** The same while verbs come. */
  dutyCycleWithVerbs?: number;
  /** How long the storage view a pod's claims are judged against may be reused (it changes with every bind). */
  storageMaxAgeMs?: number;
  now?: () => number;
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
}

/** An explanation computed for one pod and shared by the pods equivalent to it (pending-equivalence.ts). */
interface SharedResult {
  sweepId: number;
  generation: number;
  readsOtherPods: boolean;
  result: PendingPod;
  /** The storage view its claims were judged against: an equivalent pod's claims are judged against it too. */
  storage: StorageView;
}

export interface PendingSnapshot {
  items: PendingPod[];
  /** Pending pods not explained yet (they appear once the worker reaches them). */
  waiting: number;
  /** Pods explained with an earlier state than the current one (being refreshed). */
  stale: number;
}

export class PendingReport {
  readonly #deps: ExtenderDeps;
  readonly #names: ReadonlySet<string>;
  readonly #sliceMs: number;
  readonly #sliceMsWithVerbs: number;
  readonly #dutyCycle: number;
  readonly #dutyCycleWithVerbs: number;
  readonly #storageMaxAgeMs: number;
  readonly #now: () => number;
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
  #running?: {
    uid: string;
    pod: Pod;
    key?: string;
    steps: Generator<void, PendingPod>;
    generation: number;
    storage: StorageView;
  };
  /** Results of equivalent pods (equivalenceKey) computed during the current sweep. */
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

  constructor(deps: ExtenderDeps, options: PendingReportOptions) {
    this.#deps = deps;
    this.#names = new Set(options.schedulerNames);
    this.#sliceMs = options.sliceMs ?? 2;
    this.#sliceMsWithVerbs = options.sliceMsWithVerbs ?? 1;
    this.#dutyCycle = options.dutyCycle ?? 0.5;
    this.#dutyCycleWithVerbs = options.dutyCycleWithVerbs ?? 0.1;
    this.#storageMaxAgeMs = options.storageMaxAgeMs ?? 1000;
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger;
    this.#claims = new ClaimSituation(deps, new ClaimReferences());
  }

  /** Started and not closed: off with --no-pending-report. */
  get running(): boolean {
    return this.#unsubscribe.length > 0;
  }

  /** Subscribes to the store and takes its pending pods; explaining starts on the next turn of the event loop. */
  start(): this {
    const store = this.#deps.store;
    this.#startedAt = performance.now();
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
            // Out of date only for the explanations that read other pods (pending-relevance.ts).
            if (old && onlyLabelsChanged(old, pod)) {
              this.#generation++;
              if (this.#readers > 0) this.#schedule();
              return;
            }
          }
          this.#generation++;
          this.#lastFull = this.#generation;
          if (STORAGE_KINDS.has(kind)) this.#storageGeneration++;
          this.#schedule();
        }),
      );
    }
    for (const pod of store.list('Pod')) {
      this.#claims.references.add(pod);
      this.#track(pod, pod);
    }
    this.#schedule();
    return this;
  }

  close(): void {
    this.#closed = true;
    for (const u of this.#unsubscribe) u();
    this.#cancel();
    this.#release();
  }

  /** The report as it stands, never computed here. */
  snapshot(): PendingSnapshot {
    const items: PendingPod[] = [];
    let waiting = 0;
    let stale = 0;
    for (const e of this.#entries.values()) {
      if (!e.result) waiting++;
      else {
        items.push(e.result);
        if (!this.#current(e)) stale++;
      }
    }
    return { items, waiting, stale };
  }

  /** Resolves once every pending pod is explained with the current state (tests wait on it, never on a clock). */
  idle(): Promise<void> {
    if (this.#isCurrent()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /**
   * While `busy` says so (verbs are queued), the worker starts no slice: the verbs go first. `lastVerbAt`: when the
   * last verb arrived (performance.now() ms), so that the worker works less while verbs come.
   */
  yieldTo(busy: () => boolean, lastVerbAt?: () => number): void {
    this.#busy = busy;
    if (lastVerbAt) this.#lastVerbAt = lastVerbAt;
  }

  /** Explains every pending pod now, synchronously (the CLI, which serves no verbs). */
  runToEnd(): void {
    this.#cancel();
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

  #schedule(pauseMs = 0): void {
    if (this.#timer || this.#closed) return;
    const due = performance.now() + pauseMs;
    const run = () => {
      this.#timer = undefined;
      const started = performance.now();
      // Late: something else had the CPU (verbs, a GC, other processes on the node). The report is worth less than the
      // verbs' latency: it rests longer until its slices start on time again.
      this.#backoff =
        started - due > LATE_MS ? Math.min(this.#backoff * 2, MAX_BACKOFF) : Math.max(1, this.#backoff / 2);
      if (this.#busy()) return this.#schedule(BUSY_PAUSE_MS);
      const verbs = started - this.#lastVerbAt() < VERBS_RECENT_MS;
      this.#work(started + (verbs ? Math.min(this.#sliceMs, this.#sliceMsWithVerbs) : this.#sliceMs));
      const worked = performance.now() - started;
      this.workMs += worked;
      const duty = verbs ? Math.min(this.#dutyCycle, this.#dutyCycleWithVerbs) : this.#dutyCycle;
      if (this.#isCurrent()) {
        this.firstCompleteMs ??= performance.now() - this.#startedAt;
        this.#release();
      } else this.#schedule(((worked * (1 - duty)) / duty) * this.#backoff);
    };
    this.#timer = pauseMs >= 1 ? setTimeout(run, pauseMs) : setImmediate(run);
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

  /** Works until `deadline` (performance.now() ms) or until every entry is current. */
  #work(deadline: number): void {
    while (performance.now() < deadline) {
      if (!this.#running) {
        const next = this.#startNext();
        if (next === 'none') return;
        // An equivalent pod's explanation copied: the clock is read again before the next (thousands may follow).
        if (next === 'shared') continue;
      }
      const running = this.#running!;
      let next: IteratorResult<void, PendingPod>;
      try {
        next = running.steps.next();
      } catch (err) {
        // A pod whose explanation fails is left as it was until the state changes again; the verbs are not affected.
        this.#logger?.warn({ err, pod: running.uid }, 'pending report: explaining a pod failed');
        const e = this.#entries.get(running.uid);
        if (e) e.generation = running.generation;
        this.#running = undefined;
        continue;
      }
      if (!next.done) continue;
      this.#running = undefined;
      const e = this.#entries.get(running.uid);
      if (!e) continue;
      e.result = next.value;
      this.#setReads(e, readsOtherPods(running.pod, next.value));
      // The pod changed while it was being explained: its explanation is already out of date.
      e.generation = e.pod === running.pod ? running.generation : -1;
      if (running.key)
        this.#classes.set(running.key, {
          sweepId: this.#sweepId,
          generation: running.generation,
          readsOtherPods: e.readsOtherPods,
          result: next.value,
          storage: running.storage,
        });
    }
  }

  /** Picks the next pod to explain (never explained first, then the sweep's stale ones); false when all are current. */
  #startNext(): 'started' | 'shared' | 'none' {
    for (;;) {
      let uid: string | undefined = this.#fresh.values().next().value;
      if (uid !== undefined) this.#fresh.delete(uid);
      else {
        if (this.#sweepAt >= this.#sweep.length) {
          const stale = [...this.#entries].filter(([, e]) => !this.#current(e)).map(([u]) => u);
          if (stale.length === 0) return 'none';
          this.#sweep = stale;
          this.#sweepAt = 0;
          this.#sweepId++;
          this.#classes.clear();
        }
        uid = this.#sweep[this.#sweepAt++];
      }
      const e = this.#entries.get(uid);
      if (!e || (e.result && this.#current(e))) continue;
      const key = equivalenceKey(e.pod, this.#claims);
      const same = key ? this.#classes.get(key) : undefined;
      if (same && (same.sweepId === this.#sweepId || this.#current(same))) {
        e.result = { ...same.result, ...podFields(e.pod), claims: claimsOf(this.#deps.store, e.pod, same.storage) };
        e.generation = same.generation;
        this.#setReads(e, same.readsOtherPods);
        return 'shared';
      }
      const now = this.#now();
      const storage = this.#storageView(now);
      const steps = explainPending(this.#deps, e.pod, storage.view, now);
      this.explained++;
      // Judged against an older storage view, the result counts as of that view's time: it is refreshed again later.
      const current = storage.storageGeneration === this.#storageGeneration;
      this.#running = {
        uid,
        pod: e.pod,
        key,
        steps,
        generation: current ? this.#generation : storage.generation,
        storage: storage.view,
      };
      return 'started';
    }
  }

  /** The storage view, taken again when it is out of date and older than storageMaxAgeMs (a bind changes it). */
  #storageView(now: number): TakenView {
    const s = this.#storage;
    if (!s || (s.storageGeneration !== this.#storageGeneration && now - s.at >= this.#storageMaxAgeMs))
      this.#storage = {
        at: now,
        view: storageView(this.#deps.store),
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
