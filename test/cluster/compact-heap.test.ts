// The compacting GC after a load hands committed but unused heap back, and stays out of the way when there is little;
// from then on the old generation grows by a fixed share.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { getHeapStatistics } from 'node:v8';
import { compactHeap, HEAP_GROWING_PERCENT } from '../../src/cluster/compact-heap.ts';

describe('compactHeap', () => {
  it('does nothing while the heap holds less than the slack more than it uses', () => {
    const { total_heap_size } = getHeapStatistics();
    assert.equal(compactHeap(total_heap_size + 1), undefined);
  });

  it('shrinks the committed heap once a load left garbage behind', () => {
    // Garbage the way a parse leaves it: many small objects, a third of them kept, interleaved with the rest.
    const kept: object[] = [];
    for (let i = 0; i < 600_000; i++) {
      const o = { name: `object-${i}`, values: [i, i + 1] };
      if (i % 3 === 0) kept.push(o);
    }
    const result = compactHeap(0);
    assert.ok(result, 'ran');
    // An ordinary full GC leaves the young generation and half-empty pages committed (over 100 MiB here).
    const after = getHeapStatistics();
    assert.ok(result.afterBytes < result.beforeBytes, `${result.afterBytes} < ${result.beforeBytes}`);
    const slack = after.total_heap_size - after.used_heap_size;
    assert.ok(slack < 8 * 2 ** 20, `${slack} B committed but unused`);
    assert.equal(kept.length, 200_000);
  });

  it('leaves the old generation room for a fixed share of what it kept', async () => {
    // V8 reports its old-generation limit only in its GC trace: a child process holds ~100 MB, compacts, and a minor
    // GC after prints the limit the compaction set. V8's own factor for a memory-reducing GC is 1.1.
    const script = `
      import { compactHeap } from ${JSON.stringify(new URL('../../src/cluster/compact-heap.ts', import.meta.url).href)};
      const kept = [];
      for (let i = 0; i < 1_000_000; i++) kept.push({ name: 'object-' + i, values: [i, i + 1] });
      compactHeap(0);
      globalThis.gc({ type: 'minor' });
      console.log('kept', kept.length);`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--expose-gc', '--trace-gc-nvp', '--input-type=module', '-e', script],
      { maxBuffer: 2 ** 24 },
    );
    const lines = stdout.split('\n');
    const field = (line: string, name: string) => Number(new RegExp(`\\b${name}=(\\d+)`).exec(line)?.[1]);
    const lastFull = lines.findLastIndex((l) => l.includes('gc=mc'));
    const minor = lines.slice(lastFull).find((l) => l.includes('gc=s '));
    assert.ok(lastFull >= 0 && minor, stdout.slice(-2000));
    const live = field(lines[lastFull], 'end_object_size');
    const ratio = field(minor, 'old_gen_allocation_limit') / live;
    assert.ok(live > 80 * 2 ** 20, `${live} B kept`);
    const expected = 1 + HEAP_GROWING_PERCENT / 100;
    assert.ok(ratio >= expected - 0.02 && ratio < expected + 0.15, `limit ${ratio.toFixed(3)}x what the GC kept`);
  });
});
