import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KeyedWaiter } from '../../src/volumes/keyed-waiter.ts';

const far = () => Date.now() + 60_000;

describe('KeyedWaiter', () => {
  it('resolves at once when the check already holds, and registers nothing', async () => {
    const waiter = new KeyedWaiter();
    await waiter.waitUntil(() => true, { keys: ['PersistentVolume/a'], deadline: far() });
    assert.equal(waiter.size, 0);
  });

  it('re-checks on a wake of a key it reads, not of another key', async () => {
    const waiter = new KeyedWaiter();
    let ready = false;
    let checks = 0;
    const done = waiter.waitUntil(
      () => {
        checks++;
        return ready;
      },
      { keys: ['PersistentVolume/a'], deadline: far() },
    );
    ready = true;
    waiter.wake('PersistentVolume/b');
    assert.equal(checks, 1, 'another key does not wake it');
    waiter.wake('PersistentVolume/a');
    await done;
    assert.equal(checks, 2);
    assert.equal(waiter.size, 0);
  });

  it('wakeAll re-checks every waiter', async () => {
    const waiter = new KeyedWaiter();
    let ready = false;
    const a = waiter.waitUntil(() => ready, { keys: ['a'], deadline: far() });
    const b = waiter.waitUntil(() => ready, { keys: [], deadline: far() });
    assert.equal(waiter.size, 2);
    ready = true;
    waiter.wakeAll();
    await Promise.all([a, b]);
    assert.equal(waiter.size, 0);
  });

  it('polls: a change no key announced is seen within the poll interval', async () => {
    const waiter = new KeyedWaiter({ pollMs: 10 });
    let ready = false;
    const done = waiter.waitUntil(() => ready, { keys: ['a'], deadline: far() });
    ready = true;
    await done;
  });

  it('rejects with what the check throws', async () => {
    const waiter = new KeyedWaiter();
    let fail = false;
    const done = waiter.waitUntil(
      () => {
        if (fail) throw new Error('claim lost');
        return false;
      },
      { keys: ['a'], deadline: far() },
    );
    fail = true;
    waiter.wake('a');
    await assert.rejects(done, /claim lost/);
    assert.equal(waiter.size, 0);
  });

  it('rejects past the deadline, in its own clock', async () => {
    let now = 1_000;
    const waiter = new KeyedWaiter({ now: () => now });
    const done = waiter.waitUntil(() => false, { keys: ['a'], deadline: now + 5 });
    now += 100;
    await assert.rejects(done, { message: 'context deadline exceeded' });
    assert.equal(waiter.size, 0);
  });

  it('rejects on abort, and at once when already aborted', async () => {
    const waiter = new KeyedWaiter();
    const ac = new AbortController();
    const done = waiter.waitUntil(() => false, { keys: ['a'], deadline: far(), signal: ac.signal });
    ac.abort();
    await assert.rejects(done, { message: 'context canceled' });
    let checked = false;
    const late = waiter.waitUntil(
      () => {
        checked = true;
        return true;
      },
      { keys: ['a'], deadline: far(), signal: ac.signal },
    );
    await assert.rejects(late, { message: 'context canceled' });
    assert.equal(checked, false, 'an aborted wait never checks');
    assert.equal(waiter.size, 0);
  });
});
