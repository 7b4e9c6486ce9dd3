import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { NodeInfoCache } from '../../src/cache/cache.ts';
import { ClusterStore } from '../../src/cluster/store.ts';
import type { Pod } from '../../src/cluster/types.ts';
import { makeNode, makePod } from '../helpers/objects.ts';
import { withChanges } from './helpers.ts';

const TTL = 30_000;

function setup() {
  const clock = { now: 0 };
  const cache = new NodeInfoCache({ assumedPodTTLms: TTL, now: () => clock.now });
  cache.addNode(makeNode('n1'));
  cache.addNode(makeNode('n2'));
  const api = new Map<string, Pod>();
  const lookups: string[] = [];
  const getPod = async (ns: string, name: string) => {
    lookups.push(`${ns}/${name}`);
    return api.get(`${ns}/${name}`);
  };
  return { clock, cache, api, lookups, getPod };
}

describe('reconciling assumed pods (no time-based expiry)', () => {
  it('never touches a pod whose bind is still in flight, however old', async () => {
    const { clock, cache, lookups, getPod } = setup();
    cache.assumePod(makePod('p', { nodeName: 'n1' }));
    clock.now = 10 * TTL;
    const r = await cache.reconcileAssumed(getPod);
    assert.deepEqual(r, { confirmed: [], forgotten: [], failed: [] });
    assert.deepEqual(lookups, []);
    assert.equal(cache.isAssumed('uid-p'), true);
  });

  it('leaves a finished bind alone until the TTL has passed', async () => {
    const { clock, cache, lookups, getPod } = setup();
    const p = makePod('p', { nodeName: 'n1' });
    cache.assumePod(p);
    clock.now = 1000;
    cache.finishBinding(p);
    clock.now = 1000 + TTL;
    await cache.reconcileAssumed(getPod);
    assert.deepEqual(lookups, []);
    assert.equal(cache.isAssumed('uid-p'), true);
  });

  it('confirms a pod the API has bound, as the watch’s add would', async () => {
    const { clock, cache, api, getPod } = setup();
    const p = makePod('p', { nodeName: 'n1', requests: { cpu: '1' } });
    cache.assumePod(p);
    cache.finishBinding(p);
    api.set('default/p', p);
    clock.now = TTL + 1;
    const r = await cache.reconcileAssumed(getPod);
    assert.deepEqual(r.confirmed, ['uid-p']);
    assert.equal(cache.isAssumed('uid-p'), false);
    assert.equal(cache.nodeInfo('n1')?.requested.milliCPU, 1000);
  });

  it('moves a pod the API has bound to another node', async () => {
    const { clock, cache, api, getPod } = setup();
    const p = makePod('p', { nodeName: 'n1', requests: { cpu: '1' } });
    cache.assumePod(p);
    cache.finishBinding(p);
    api.set('default/p', withChanges(p, { nodeName: 'n2', requests: { cpu: '1' }, containers: undefined }));
    clock.now = TTL + 1;
    await cache.reconcileAssumed(getPod);
    assert.equal(cache.nodeInfo('n1')?.requested.milliCPU, 0);
    assert.equal(cache.nodeInfo('n2')?.requested.milliCPU, 1000);
  });

  it('forgets a pod that is gone from the API', async () => {
    const { clock, cache, getPod } = setup();
    const p = makePod('p', { nodeName: 'n1', requests: { cpu: '1' } });
    cache.assumePod(p);
    cache.finishBinding(p);
    clock.now = TTL + 1;
    const r = await cache.reconcileAssumed(getPod);
    assert.deepEqual(r.forgotten, ['uid-p']);
    assert.equal(cache.podCount(), 0);
    assert.equal(cache.nodeInfo('n1')?.requested.milliCPU, 0);
  });

  it('forgets a pod the API has unbound, replaced with another UID, or finished', async () => {
    const { clock, cache, api, getPod } = setup();
    for (const name of ['unbound', 'replaced', 'finished']) {
      const p = makePod(name, { nodeName: 'n1' });
      cache.assumePod(p);
      cache.finishBinding(p);
    }
    api.set('default/unbound', makePod('unbound'));
    api.set('default/replaced', makePod('replaced', { nodeName: 'n1', uid: 'other' }));
    api.set('default/finished', makePod('finished', { nodeName: 'n1', phase: 'Succeeded' }));
    clock.now = TTL + 1;
    const r = await cache.reconcileAssumed(getPod);
    assert.deepEqual(r.forgotten.sort(), ['uid-finished', 'uid-replaced', 'uid-unbound']);
    assert.equal(cache.podCount(), 0);
  });

  it('keeps a pod assumed when the lookup fails, to try again later', async () => {
    const { clock, cache } = setup();
    const p = makePod('p', { nodeName: 'n1' });
    cache.assumePod(p);
    cache.finishBinding(p);
    clock.now = TTL + 1;
    const r = await cache.reconcileAssumed(async () => {
      throw new Error('apiserver unavailable');
    });
    assert.deepEqual(r.failed, ['uid-p']);
    assert.equal(cache.isAssumed('uid-p'), true);
  });

  it('does nothing for a pod the watch confirmed while the lookup was under way', async () => {
    const { clock, cache } = setup();
    const p = makePod('p', { nodeName: 'n1' });
    cache.assumePod(p);
    cache.finishBinding(p);
    clock.now = TTL + 1;
    const r = await cache.reconcileAssumed(async () => {
      cache.addPod(p);
      return undefined;
    });
    assert.deepEqual(r, { confirmed: [], forgotten: [], failed: [] });
    assert.equal(cache.podCount(), 1);
  });

  it('a later watch add of a pod confirmed by reconciling updates it instead of failing', async () => {
    const { clock, cache, api, getPod } = setup();
    const p = makePod('p', { nodeName: 'n1' });
    cache.assumePod(p);
    cache.finishBinding(p);
    api.set('default/p', p);
    clock.now = TTL + 1;
    await cache.reconcileAssumed(getPod);
    const store = new ClusterStore();
    cache.attach(store);
    store.upsert('Pod', withChanges(p, { requests: { cpu: '2' }, containers: undefined }));
    assert.equal(cache.nodeInfo('n1')?.requested.milliCPU, 2000);
    assert.equal(cache.podCount(), 1);
  });

  it('runs periodically once started, and stops when asked', async () => {
    mock.timers.enable({ apis: ['setInterval'] });
    try {
      const { clock, cache, getPod, lookups } = setup();
      const p = makePod('p', { nodeName: 'n1' });
      cache.assumePod(p);
      cache.finishBinding(p);
      clock.now = TTL + 1;
      const stop = cache.startReconciling(getPod, 1000);
      mock.timers.tick(1000);
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(lookups, ['default/p']);
      assert.equal(cache.podCount(), 0);
      stop();
    } finally {
      mock.timers.reset();
    }
  });
});
