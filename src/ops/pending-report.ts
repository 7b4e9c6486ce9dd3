// The pending report kept current in the background: which pods are pending follows the store's Pod events at once;
// their explanations are recomputed, a slice of a few milliseconds at a time, whenever anything a verdict reads has
// changed since. Readers (the route, a scrape) only read what is there: nothing waits for the report. Three parts,
// each with one job, composed here:
// - ClusterEventLog (pending-events.ts): what each store event makes out of date (generations, the nodes whose pods
//   changed, for the explanations kept per node);
// - ExplanationCache (pending-cache.ts): the explanations of the pending pods, brought up to date a step at a time
//   (fresh pods first, then a sweep over the out-of-date ones; shared by equivalent pods, refreshed node by node);
// - CpuThrottle (pending-throttle.ts): when that work runs and for how long, so that kube-scheduler's verbs go first
//   and the report takes at most a share of a core.
import { KINDS, type Pod } from '../cluster/types.ts';
import type { ExtenderDeps } from '../extender/deps.ts';
import type { Log } from '../log.ts';
import { ExplanationCache, type PendingSnapshot } from './pending-cache.ts';
import { ClusterEventLog } from './pending-events.ts';
import { CpuThrottle, type CpuThrottleOptions } from './pending-throttle.ts';

export type { PendingSnapshot } from './pending-cache.ts';

/**
 * In a live cluster, how old a pending pod kube-scheduler has not tried yet must be before it is explained. A pod
 * kube-scheduler could not place shows it at once (PodScheduled False), so this only bounds how long a pod still in
 * its queue (or waiting for a scheduler that is down) stays out of the report; a burst of pods with claims is mostly
 * bound within it and costs no explanation.
 */
export const LIVE_EXPLAIN_AFTER_MS = 10_000;

export interface PendingReportOptions extends CpuThrottleOptions {
  schedulerNames: readonly string[];
  logger?: Log;
  /**
   * While verbs come, the least time from the start of one sweep over the out-of-date explanations to the next: pods
   * bound all the time keep every explanation out of date, and refreshing them more often than this buys little.
   */
  sweepEveryMsWithVerbs?: number;
  /** How long the storage view a pod's claims are judged against may be reused (it changes with every bind). */
  storageMaxAgeMs?: number;
  /** A pending pod kube-scheduler has not tried yet is explained once it is this old (ms; 0, the default: at once). */
  explainAfterMs?: number;
  now?: () => number;
}

export class PendingReport {
  readonly #deps: ExtenderDeps;
  readonly #clock: () => number;
  readonly #events: ClusterEventLog;
  readonly #cache: ExplanationCache;
  readonly #throttle: CpuThrottle;
  #unsubscribe: (() => void)[] = [];
  #idle: (() => void)[] = [];
  #startedAt = 0;
  #firstCompleteMs?: number;

  constructor(deps: ExtenderDeps, options: PendingReportOptions) {
    this.#deps = deps;
    const clock = options.clock ?? (() => performance.now());
    this.#clock = clock;
    this.#events = new ClusterEventLog(clock);
    const cache = new ExplanationCache(deps, this.#events, { ...options, clock });
    this.#cache = cache;
    this.#throttle = new CpuThrottle(
      {
        work: (deadline, verbs) => cache.work(deadline, verbs),
        done: () => cache.upToDate(),
        dueAt: () => cache.dueAt,
        caughtUp: () => {
          this.#firstCompleteMs ??= this.#clock() - this.#startedAt;
          this.#release();
        },
      },
      { ...options, clock },
    );
  }

  /**
   * Started and not closed. `serve` starts it once the store is synced unless the pendingReport setting is off
   * (on by default; --no-pending-report, TOPOLOGY_EXTENDER_PENDING_REPORT=false or `pendingReport: false` in --config,
   * when GET /api/v1/pending answers 503); `analyze` starts one, explains every pod and closes it (pendingOnce).
   */
  get running(): boolean {
    return this.#unsubscribe.length > 0;
  }

  /** Wall-clock ms the first full report took from start (undefined until every pending pod was explained once). */
  get firstCompleteMs(): number | undefined {
    return this.#firstCompleteMs;
  }

  /** CPU-bound milliseconds spent explaining, in total (the bench reads it). */
  get workMs(): number {
    return this.#throttle.workMs;
  }

  /** Explanations computed (pods explained through an equivalent pod's explanation are not counted). */
  get explained(): number {
    return this.#cache.explained;
  }

  /** Explanations refreshed on the nodes that changed only. */
  get refreshed(): number {
    return this.#cache.refreshed;
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
            const deleted = event.type === 'delete';
            this.#cache.podChanged(pod, old, deleted);
            // Other pods' labels alone: work only for the explanations that read them.
            if (this.#events.podChanged(pod, old, deleted) === 'labels' && this.#cache.readers === 0) return;
          } else this.#events.changed(kind);
          this.#throttle.wake();
        }),
      );
    }
    for (const pod of store.list('Pod')) {
      this.#cache.listed(pod);
      this.#events.listed(pod);
    }
    this.#cache.prepareStorageView();
    this.#throttle.wake();
    return this;
  }

  close(): void {
    this.#throttle.stop();
    for (const u of this.#unsubscribe.splice(0)) u();
    this.#release();
  }

  /** The report as it stands, never computed here. */
  snapshot(): PendingSnapshot {
    return this.#cache.snapshot();
  }

  /**
   * Resolves once every pending pod due to be explained is, with the current state (tests wait on it, never on a
   * clock); in a live cluster a pod kube-scheduler has not tried yet is due once explainAfterMs old.
   */
  idle(): Promise<void> {
    if (this.#cache.upToDate()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /**
   * While `busy` says so (verbs are queued), the worker starts no slice: the verbs go first. `lastVerbAt`: when the
   * last verb arrived (performance.now() ms), so that the worker works less while verbs come; `lastAnswerAt`: when the
   * last verb answered, so that no slice starts within quietMsAfterVerb of it.
   */
  yieldTo(busy: () => boolean, lastVerbAt?: () => number, lastAnswerAt?: () => number): void {
    this.#throttle.yieldTo(busy, lastVerbAt, lastAnswerAt);
  }

  /** Explains every pending pod now, synchronously (the CLI, which serves no verbs). */
  runToEnd(): void {
    this.#throttle.interrupt();
    this.#cache.work(Number.POSITIVE_INFINITY, false);
  }

  #release(): void {
    const waiters = this.#idle;
    this.#idle = [];
    for (const resolve of waiters) resolve();
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
