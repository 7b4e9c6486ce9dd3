// After a source's first load (or a cluster-state reload) the heap is at its widest: parsing hundreds of MiB of JSON
// grew the young generation to its maximum and left old-space pages half full of garbage, so V8 holds far more than
// it uses, and would hand it back only once its memory reducer notices the process is idle. One memory-reducing full
// GC at that moment (V8's "last resort" flavour: it compacts every fragmented page and shrinks the young generation)
// gives it back to the OS before the extender reports ready.
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Gc = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/** Below this much committed but unused heap a compacting GC is not worth its pause (small clusters, tests). */
export const COMPACT_SLACK_BYTES = 64 * 2 ** 20;

let gc: Gc | undefined;

/** V8's gc function: the process's own under --expose-gc, else from a fresh context once the flag is set. */
function gcFunction(): Gc {
  if (!gc) {
    gc = (globalThis as { gc?: Gc }).gc;
    if (!gc) {
      setFlagsFromString('--expose-gc');
      gc = runInNewContext('gc') as Gc;
    }
  }
  return gc;
}

/**
 * Runs a memory-reducing full GC when the heap holds at least `slackBytes` more than it uses; returns what it did
 * (for the log), or undefined when it did not run.
 */
export function compactHeap(
  slackBytes = COMPACT_SLACK_BYTES,
): { ms: number; beforeBytes: number; afterBytes: number } | undefined {
  const before = getHeapStatistics();
  if (before.total_heap_size - before.used_heap_size < slackBytes) return undefined;
  const started = performance.now();
  gcFunction()({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  return {
    ms: Math.round(performance.now() - started),
    beforeBytes: before.total_heap_size,
    afterBytes: getHeapStatistics().total_heap_size,
  };
}
