// The compacting GC after a load hands committed but unused heap back, and stays out of the way when there is little.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getHeapStatistics } from 'node:v8';
import { compactHeap } from '../../src/cluster/compact-heap.ts';

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
});
