// The scheduler verbs run one at a time, first come first served, with the event loop turning between them, so
// that before each one starts the server has read every connection that closed meanwhile. A verb whose client has
// gone (kube-scheduler timed out and closed the connection) is skipped; one that waited past its deadline is answered
// with an error without being computed. Without this, a burst of abandoned heavy requests was computed to the end
// while the requests queued behind them waited, and under overload every later call timed out too.
import { setImmediate as nextTurn } from 'node:timers/promises';

export type DropReason = 'client_gone' | 'deadline';

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
  work: () => T | PromiseLike<T>;
  resolve: (value: T | PromiseLike<T>) => void;
  reject: (err: unknown) => void;
}

export interface VerbQueueOptions {
  /** How long a verb may wait before it starts (ms). */
  deadlineMs: number;
  now?: () => number;
  onDrop?: (verb: string, reason: DropReason) => void;
  onDepth?: (depth: number) => void;
}

export class VerbQueue {
  /** Started or dropped jobs are cleared from their slot: a job holds its request (body included) until then. */
  readonly #jobs: (Job<unknown> | undefined)[] = [];
  #head = 0;
  #pumping = false;
  readonly #options: VerbQueueOptions;
  readonly #now: () => number;

  constructor(options: VerbQueueOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  now(): number {
    return this.#now();
  }

  /** Requests waiting to start. */
  depth(): number {
    return this.#jobs.length - this.#head;
  }

  /**
   * Runs `work` when every verb queued before it has started; rejects with VerbDropped instead when the client left
   * or the deadline passed first. An async `work` is not awaited before the next verb starts (bind waits for volumes).
   */
  run<T>(request: QueuedVerb, work: () => T | PromiseLike<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#jobs.push({ ...request, work, resolve, reject } as Job<unknown>);
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
      const job = this.#take();
      if (!job) break;
      try {
        job.resolve(job.work());
      } catch (err) {
        job.reject(err);
      }
    }
    this.#pumping = false;
  }

  /** The next job worth running; the ones it passes over are answered as dropped. */
  #take(): Job<unknown> | undefined {
    while (this.depth() > 0) {
      const job = this.#jobs[this.#head]!;
      this.#jobs[this.#head++] = undefined;
      if (this.#head > 1024 && this.#head * 2 > this.#jobs.length) {
        this.#jobs.splice(0, this.#head);
        this.#head = 0;
      }
      this.#options.onDepth?.(this.depth());
      const waited = this.#now() - job.arrivedAt;
      if (job.gone()) {
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
