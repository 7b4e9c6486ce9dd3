// Backoff after errors: doubling from the initial delay up to the cap, jitter only ever adds, success resets.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Backoff } from '../../../src/cluster/kube/backoff.ts';

test('delays double from the initial value up to the cap', () => {
  const b = new Backoff({ initialMs: 500, maxMs: 30_000, jitter: 0 });
  assert.deepEqual(
    Array.from({ length: 9 }, () => b.next()),
    [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000],
  );
  assert.equal(b.failures, 9);
});

test('jitter adds up to its fraction of the delay, never less than the base', () => {
  const low = new Backoff({ initialMs: 1000, jitter: 0.2 }, () => 0);
  const high = new Backoff({ initialMs: 1000, jitter: 0.2 }, () => 0.999);
  assert.equal(low.next(), 1000);
  assert.equal(high.next(), 1200);
});

test('reset starts over from the initial delay', () => {
  const b = new Backoff({ initialMs: 100, jitter: 0 });
  b.next();
  b.next();
  b.reset();
  assert.equal(b.failures, 0);
  assert.equal(b.next(), 100);
});
