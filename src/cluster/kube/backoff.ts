// Exponential backoff with jitter, as client-go's wait.Backoff: each failure doubles the delay up to a cap; a success
// resets it. Jitter spreads reconnecting clients so they do not hit a recovering API server in lockstep.
import { setTimeout as sleep } from 'node:timers/promises';

export interface BackoffOptions {
  /** First delay after a failure. Default 500 ms. */
  initialMs?: number;
  /** Cap of the delay. Default 30 s. */
  maxMs?: number;
  /** Fraction of the delay added at random: delay × (1 + jitter × random). Default 0.2; 0 disables. */
  jitter?: number;
}

export class Backoff {
  readonly #initial: number;
  readonly #max: number;
  readonly #jitter: number;
  readonly #random: () => number;
  #failures = 0;

  constructor(opts: BackoffOptions = {}, random: () => number = Math.random) {
    this.#initial = opts.initialMs ?? 500;
    this.#max = opts.maxMs ?? 30_000;
    this.#jitter = opts.jitter ?? 0.2;
    this.#random = random;
  }

  /** Consecutive failures since the last reset. */
  get failures(): number {
    return this.#failures;
  }

  /** Records a failure and returns how long to wait before the next try. */
  next(): number {
    const base = Math.min(this.#initial * 2 ** this.#failures, this.#max);
    this.#failures = Math.min(this.#failures + 1, 30);
    return Math.round(base * (1 + this.#jitter * this.#random()));
  }

  reset(): void {
    this.#failures = 0;
  }
}

/** Sleeps `ms`, resolving early (without throwing) when the signal aborts. */
export async function wait(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return;
  try {
    await sleep(ms, undefined, { signal });
  } catch {
    // aborted: the caller checks its own stop flag
  }
}
