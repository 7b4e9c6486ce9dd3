// The scheduler verbs run one at a time, first come first served, with the event loop turning between them, so
// that before each one starts the server has read every connection that closed meanwhile. A verb whose client has
// gone (kube-scheduler timed out and closed the connection) is skipped; one that waited past its deadline is answered
// with an error without being computed. Without this, a burst of abandoned heavy requests was computed to the end
// while the requests queued behind them waited, and under overload every later call timed out too.
//
// Node reads a connection's last data in one turn of the event loop and its FIN (or RST) at the earliest in the next
// one: libuv stops reading a socket on a short read and sees the EOF on its next poll. A request completed on its last
// read therefore looks alive for one turn after it is queued, whatever its client did. So a verb starts only once
// SETTLE_TURNS turns have passed since it was queued: by then a close sent with the request has been read.
//
// libuv accepts at most one connection per turn (libuv#3696). With a verb in every turn, a burst of new connections
// (kube-scheduler opens them for concurrent binds, and after every 503 that closed one) waited in the kernel's queue
// for a turn each: seconds before even a 503 was sent. So while connections keep being accepted, the queue turns the
// loop again before the next verb, up to ACCEPT_TURNS turns per verb.
import { setImmediate as nextTurn } from 'node:timers/promises';

/** Event-loop turns (each with a poll for I/O) between queuing a verb and deciding whether its client is there. */
export const SETTLE_TURNS = 2;
/** Turns at most between two verbs while connections keep arriving: a flood of them cannot stop the verbs. */
export const ACCEPT_TURNS = 64;

export type DropReason = 'client_gone' | 'deadline';

/**
 * What each verb recently took to compute (its synchronous part: the time it holds the event loop), as an
 * exponentially weighted mean, so that admission can bound the work waiting in the queue by time (maxQueuedWorkSeconds)
 * whatever the cluster's size makes a verb cost. The queue records them.
 */
export class VerbCosts {
  readonly #meanMs = new Map<string, number>();

  record(verb: string, ms: number): void {
    const mean = this.#meanMs.get(verb);
    // A GC pause inside one verb must not make every verb of its kind look slow (and refused): one sample moves the
    // mean at most as far as four times the mean would. A verb that really got slower is learned within a few dozen.
    const sample = mean ? Math.min(ms, 4 * mean) : ms;
    this.#meanMs.set(verb, mean === undefined ? sample : mean + (sample - mean) / 8);
  }

  /** The verb's mean cost in ms; 0 until one has run. */
  estimate(verb: string): number {
    return this.#meanMs.get(verb) ?? 0;
  }
}

export class VerbDropped extends Error {
  readonly reason: DropReason;
  constructor(reason: DropReason, message: string) {
    super(message);
    this.name = 'VerbDropped';
    this.reason = reason;
  }
}

export interface QueuedVerb {
  verb: string;
  /** When the request arrived (ms, the queue's clock). */
  arrivedAt: number;
  /** Whether the client closed its connection. */
  gone: () => boolean;
}

interface Job<T> extends QueuedVerb {
  /** The queue's turn when it was queued. */
  turn: number;
  work: () => T | PromiseLike<T>;
  resolve: (value: T | PromiseLike<T>) => void;
  reject: (err: unknown) => void;
}

export interface VerbQueueOptions {
  /** How long a verb may wait before it starts (ms). */
  deadlineMs: number;
  now?: () => number;
  onDrop?: (verb: string, reason: DropReason) => void;
  /** A verb starts, `waitedMs` after it arrived (QueuedVerb.arrivedAt). */
  onStart?: (verb: string, waitedMs: number) => void;
  /**
   * A verb's synchronous part ended after `ms` (what it held the event loop for), of which the main thread ran
   * `cpuMs`: the rest it waited for a core (a CPU limit's throttling, a busy node).
   */
  onComputed?: (verb: string, ms: number, cpuMs: number) => void;
  onDepth?: (depth: number) => void;
  /** Connections the server has accepted so far (a counter the queue watches grow). */
  accepted?: () => number;
}

export class VerbQueue {
  /** Started or dropped jobs are cleared from their slot: a job holds its request (body included) until then. */
  readonly #jobs: (Job<unknown> | undefined)[] = [];
  #head = 0;
  #pumping = false;
  /** Event-loop turns the pump has waited through. */
  #turn = 0;
  /** `accepted()` when the pump last looked. */
  #accepted = 0;
  readonly #costs = new VerbCosts();
  /** When the last verb arrived (the queue's clock). */
  #lastArrival = Number.NEGATIVE_INFINITY;
  /** When the last verb's synchronous part ended (the queue's clock). */
  #lastAnswer = Number.NEGATIVE_INFINITY;
  readonly #options: VerbQueueOptions;
  readonly #now: () => number;

  constructor(options: VerbQueueOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  now(): number {
    return this.#now();
  }

  /** When the last verb arrived (the queue's clock; -Infinity before the first). */
  lastArrival(): number {
    return this.#lastArrival;
  }

  /**
   * When the last verb's synchronous part ended, its answer on its way (the queue's clock; -Infinity before the
   * first): kube-scheduler calls the next verb of its cycle (prioritize after filter, bind after that) right after.
   */
  lastAnswer(): number {
    return this.#lastAnswer;
  }

  /** Requests waiting to start. */
  depth(): number {
    return this.#jobs.length - this.#head;
  }

  /** What a verb is expected to take to compute: its recent mean (ms), 0 until one has run. */
  estimate(verb: string): number {
    return this.#costs.estimate(verb);
  }

  /**
   * Runs `work` when every verb queued before it has started; rejects with VerbDropped instead when the client left
   * or the deadline passed first. An async `work` is not awaited before the next verb starts (bind waits for volumes).
   */
  run<T>(request: QueuedVerb, work: () => T | PromiseLike<T>): Promise<T> {
    this.#lastArrival = this.#now();
    return new Promise<T>((resolve, reject) => {
      this.#jobs.push({ ...request, turn: this.#turn, work, resolve, reject } as Job<unknown>);
      this.#options.onDepth?.(this.depth());
      if (!this.#pumping) {
        this.#pumping = true;
        void this.#pump();
      }
    });
  }

  async #pump(): Promise<void> {
    while (this.depth() > 0) {
      // Let the event loop read new requests and closed connections first.
      await nextTurn();
      this.#turn++;
      await this.#acceptArrivals();
      const job = this.#take();
      if (!job) continue; // every job dropped, or the next one not settled yet
      try {
        const began = this.#now();
        this.#options.onStart?.(job.verb, began - job.arrivedAt);
        const { onComputed } = this.#options;
        const cpuBefore = onComputed ? process.threadCpuUsage() : undefined;
        job.resolve(job.work());
        this.#lastAnswer = this.#now();
        this.#costs.record(job.verb, this.#lastAnswer - began);
        if (onComputed) {
          const cpu = process.threadCpuUsage(cpuBefore);
          onComputed(job.verb, this.#lastAnswer - began, (cpu.user + cpu.system) / 1000);
        }
      } catch (err) {
        this.#lastAnswer = this.#now();
        job.reject(err);
      }
    }
    this.#pumping = false;
  }

  /** Turns the loop while each turn accepts a connection (one per turn), up to ACCEPT_TURNS. */
  async #acceptArrivals(): Promise<void> {
    const accepted = this.#options.accepted;
    if (!accepted) return;
    for (let turns = 0; accepted() !== this.#accepted && turns < ACCEPT_TURNS; turns++) {
      this.#accepted = accepted();
      await nextTurn();
      this.#turn++;
    }
    this.#accepted = accepted();
  }

  /**
   * The next job worth running; the ones it passes over are answered as dropped. Undefined when none is left or the
   * next one has not settled (its client's close may not have been read yet).
   */
  #take(): Job<unknown> | undefined {
    while (this.depth() > 0) {
      const job = this.#jobs[this.#head]!;
      const gone = job.gone();
      if (!gone && this.#turn - job.turn < SETTLE_TURNS) return undefined;
      this.#jobs[this.#head++] = undefined;
      if (this.#head > 1024 && this.#head * 2 > this.#jobs.length) {
        this.#jobs.splice(0, this.#head);
        this.#head = 0;
      }
      this.#options.onDepth?.(this.depth());
      const waited = this.#now() - job.arrivedAt;
      if (gone) {
        this.#drop(job, 'client_gone', `${job.verb}: the client closed the connection before the request started`);
      } else if (waited > this.#options.deadlineMs) {
        this.#drop(
          job,
          'deadline',
          `${job.verb}: waited ${(waited / 1000).toFixed(2)} s for the requests queued before it, past its ` +
            `${this.#options.deadlineMs / 1000} s deadline (verbDeadlineSeconds): the extender is overloaded`,
        );
      } else {
        return job;
      }
    }
    return undefined;
  }

  #drop(job: Job<unknown>, reason: DropReason, message: string): void {
    this.#options.onDrop?.(job.verb, reason);
    job.reject(new VerbDropped(reason, message));
  }
}
