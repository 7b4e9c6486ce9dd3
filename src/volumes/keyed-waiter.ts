// Waits on conditions over watched objects: a waiter names the keys its check reads (`Kind/key`) and is re-checked
// when one of them changes, and once a second whatever changed, as upstream polls: a missed key costs a second, never
// a hang. Waking only the waiters that read a change keeps a burst linear: waking every bind in flight on every PV
// and claim event was 8 % of a delegated burst's CPU.

export interface WaitOptions {
  /** The keys the check reads; a wake() of one of them re-checks it. */
  keys: readonly string[];
  /** Absolute, in the waiter's clock (ms). */
  deadline: number;
  signal?: AbortSignal;
}

export class KeyedWaiter {
  readonly #waiters = new Map<string, Set<() => void>>();
  /** Every waiter, for the periodic check. */
  readonly #polled = new Set<() => void>();
  #poll: NodeJS.Timeout | undefined;
  readonly #now: () => number;
  readonly #pollMs: number;

  constructor(options: { now?: () => number; pollMs?: number } = {}) {
    this.#now = options.now ?? Date.now;
    this.#pollMs = options.pollMs ?? 1000;
  }

  /** How many waits are pending. */
  get size(): number {
    return this.#polled.size;
  }

  /** Resolves when check() is true, rejects when it throws, on the deadline, or on abort. */
  waitUntil(check: () => boolean, { keys, deadline, signal }: WaitOptions): Promise<void> {
    return new Promise((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (err?: Error) => {
        if (settled) return;
        settled = true;
        for (const key of keys) {
          const set = this.#waiters.get(key);
          set?.delete(onChange);
          if (set?.size === 0) this.#waiters.delete(key);
        }
        this.#polled.delete(onChange);
        if (this.#polled.size === 0) clearInterval(this.#poll);
        signal?.removeEventListener('abort', onAbort);
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      const onChange = () => {
        if (settled) return;
        try {
          if (check()) finish();
        } catch (err) {
          finish(err as Error);
        }
      };
      const onAbort = () => finish(new Error('context canceled'));
      if (signal?.aborted) return onAbort();
      onChange();
      if (settled) return;
      for (const key of keys) {
        const set = this.#waiters.get(key) ?? new Set();
        this.#waiters.set(key, set);
        set.add(onChange);
      }
      if (this.#polled.size === 0) {
        this.#poll = setInterval(() => this.wakeAll(), this.#pollMs);
        this.#poll.unref();
      }
      this.#polled.add(onChange);
      signal?.addEventListener('abort', onAbort, { once: true });
      timer = setTimeout(() => finish(new Error('context deadline exceeded')), Math.max(0, deadline - this.#now()));
    });
  }

  /** Re-checks the waiters that read `key`. */
  wake(key: string): void {
    const set = this.#waiters.get(key);
    if (set) for (const waiter of [...set]) waiter();
  }

  /** Re-checks every waiter (a change any of them may read). */
  wakeAll(): void {
    for (const waiter of [...this.#polled]) waiter();
  }
}
