// bench-helper
// An open loop: requests issued on a fixed schedule whatever the answers, so a stall shows as latency counted from
// the scheduled time instead of slowing the client down. Shared by bench/results.ts and bench/live/overload.ts.

/**
 * Calls `issue(i, due)` for i in [0, rate × seconds), each at its due time (ms, performance.now()), and waits for all
 * of them. Between due times `idle` either spins on setImmediate (the schedule kept exactly) or sleeps (the core left to
 * the server, for loads past what a small machine's two cores can serve both).
 */
export async function onSchedule(
  rate: number,
  seconds: number,
  issue: (i: number, due: number) => Promise<void>,
  idle: 'spin' | 'sleep',
): Promise<void> {
  const total = Math.round(rate * seconds);
  const start = performance.now() + 20;
  const due = (i: number) => start + (i * 1000) / rate;
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < total; ) {
    const now = performance.now();
    for (; i < total && due(i) <= now; i++) inFlight.push(issue(i, due(i)));
    if (idle === 'spin') await new Promise((r) => setImmediate(r));
    else await new Promise((r) => setTimeout(r, Math.max(0, due(i) - performance.now())));
  }
  await Promise.all(inFlight);
}
