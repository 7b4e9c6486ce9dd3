// The pending report's explanation cache (src/ops/pending-cache.ts) explains only what is stale: a pod never explained
// once, then again only when the cluster event log says its explanation is out of date, node by node when it is kept
// per node, once for pods equivalent to each other, and while verbs come in sweeps at most every
// sweepEveryMsWithVerbs, once the report was read since the last. Driven here by hand, on a clock the test sets, without the throttle.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClusterStore } from '../../src/cluster/store.ts';
import { KINDS, type Pod } from '../../src/cluster/types.ts';
import { drain } from '../../src/ops/explain.ts';
import { explainPending } from '../../src/ops/pending.ts';
import { ExplanationCache } from '../../src/ops/pending-cache.ts';
import { ClusterEventLog } from '../../src/ops/pending-events.ts';
import { storageView } from '../../src/ops/storage.ts';
import { node, pod } from '../helpers/objects.ts';
import { cluster } from './helpers.ts';

const NOW = Date.parse('2026-11-01T00:00:00Z');

/** A cache over `objects`, fed the store's events as the report feeds it, on a clock the test sets. */
function cached(
  objects: Parameters<typeof cluster>[0],
  options: { sweepEveryMsWithVerbs?: number; explainAfterMs?: number } = {},
) {
  const { deps, store } = cluster(objects);
  const clock = { now: 0 };
  const events = new ClusterEventLog(() => clock.now);
  const cache = new ExplanationCache(deps, events, {
    schedulerNames: ['default-scheduler'],
    now: () => NOW,
    clock: () => clock.now,
    // The storage view taken again at every storage event: `now` stands still here, and a view kept until it is
    // storageMaxAgeMs old would leave the explanations judged against it out of date for ever.
    storageMaxAgeMs: 0,
    ...options,
  });
  for (const kind of KINDS)
    store.on(kind, (event) => {
      if (event.kind !== 'Pod') return events.changed(kind);
      const old = event.type === 'update' ? (event.old as Pod) : undefined;
      cache.podChanged(event.obj as Pod, old, event.type === 'delete');
      events.podChanged(event.obj as Pod, old, event.type === 'delete');
    });
  for (const p of store.list('Pod')) {
    cache.listed(p);
    events.listed(p);
  }
  return { cache, store, deps, clock };
}

/** `p` stored again, changed by `change`. */
function update(store: ClusterStore, p: Pod, change: (p: Pod) => void): Pod {
  const q = structuredClone(store.get('Pod', `${p.metadata.namespace ?? 'default'}/${p.metadata.name}`)!);
  q.metadata.resourceVersion = String(Number(q.metadata.resourceVersion ?? '1') + 1);
  change(q);
  store.upsert('Pod', q);
  return q;
}

/**
 * A node and a pod too big for it, sweeps at most every 5 s while verbs come, and a change of the node's labels: the
 * first sweep (it needs no reader) ran at 100 ms after the node changed, and the node changed again since.
 */
function sweptAt100ThenTouched() {
  const { cache, store, clock } = cached([node('n0', { cpu: '2' }), pod('big', { cpu: '64' })], {
    sweepEveryMsWithVerbs: 5000,
  });
  const touchNode = (version: string) => {
    const n0 = structuredClone(store.get('Node', 'n0')!);
    n0.metadata.labels = { ...n0.metadata.labels, version };
    n0.metadata.resourceVersion = version;
    store.upsert('Node', n0);
  };
  cache.work(Number.POSITIVE_INFINITY, true);
  touchNode('2');
  clock.now = 100;
  cache.work(Number.POSITIVE_INFINITY, true);
  assert.equal(cache.explained, 2, 'a sweep started at 100');
  touchNode('3');
  return { cache, store, clock, touchNode };
}

const names = (cache: ExplanationCache) =>
  cache
    .snapshot()
    .items.map((i) => i.name)
    .sort();

describe('the explanations kept', () => {
  it('explains each pending pod of the schedulers named once, and holds nothing else', () => {
    const other = structuredClone(pod('theirs', { cpu: '64' }));
    other.spec.schedulerName = 'another-scheduler';
    const { cache } = cached([
      node('n0'),
      pod('big', { cpu: '64' }),
      pod('bigger', { cpu: '128' }),
      pod('running', { nodeName: 'n0' }),
      other,
    ]);
    assert.equal(cache.upToDate(), false);
    assert.deepEqual(cache.snapshot(), { items: [], waiting: 2, stale: 0, behindMs: 0 });
    assert.equal(cache.work(Number.POSITIVE_INFINITY, false), false, 'nothing left');
    assert.equal(cache.upToDate(), true);
    assert.deepEqual(names(cache), ['big', 'bigger']);
    assert.equal(cache.explained, 2);
    assert.equal(cache.work(Number.POSITIVE_INFINITY, false), false);
    assert.equal(cache.explained, 2, 'not explained again while current');
  });

  it('works no further than its deadline, and goes on from there', () => {
    const { cache, clock } = cached([node('n0'), pod('big', { cpu: '64' })]);
    clock.now = 5;
    assert.equal(cache.work(5, false), true, 'past the deadline: more to do');
    assert.equal(cache.snapshot().waiting, 1);
    assert.equal(cache.work(6, false), false);
    assert.equal(cache.snapshot().waiting, 0);
  });

  it('gives equivalent pods one explanation, each its own name', () => {
    const replicas = ['web-0', 'web-1', 'web-2'].map((name) => {
      const p = structuredClone(pod(name, { cpu: '64' }));
      p.metadata.labels = { app: 'web' };
      return p;
    });
    const { cache } = cached([node('n0'), ...replicas]);
    cache.work(Number.POSITIVE_INFINITY, false);
    assert.deepEqual(names(cache), ['web-0', 'web-1', 'web-2']);
    assert.equal(cache.explained, 1);
  });

  it('takes the first storage view when prepared and a pod waits, so that no slice of work builds it', () => {
    const volumeLists = (store: ClusterStore) => {
      const counted = { n: 0 };
      const list = store.list.bind(store);
      store.list = ((kind: Parameters<typeof list>[0]) => {
        if (kind === 'PersistentVolume') counted.n++;
        return list(kind);
      }) as typeof store.list;
      return counted;
    };
    const idle = cached([node('n0'), pod('running', { nodeName: 'n0' })]);
    const idleLists = volumeLists(idle.store);
    idle.cache.prepareStorageView();
    assert.equal(idleLists.n, 0, 'no pod waits: nothing built');

    const { cache, store } = cached([node('n0'), pod('big', { cpu: '64' })]);
    const lists = volumeLists(store);
    cache.prepareStorageView();
    assert.equal(lists.n, 1, 'built once, walking every PV');
    cache.work(Number.POSITIVE_INFINITY, false);
    assert.deepEqual(names(cache), ['big']);
    assert.equal(lists.n, 1, 'the explanation used the view prepared');
  });

  it('drops a pod once bound or deleted', () => {
    const { cache, store } = cached([node('n0'), pod('a', { cpu: '1' }), pod('b', { cpu: '64' })]);
    cache.work(Number.POSITIVE_INFINITY, false);
    update(store, store.get('Pod', 'default/a')!, (p) => (p.spec.nodeName = 'n0'));
    store.delete('Pod', store.get('Pod', 'default/b')!);
    assert.deepEqual(cache.snapshot().items, []);
    assert.equal(cache.upToDate(), true);
  });
});

describe('what is explained again', () => {
  it('nothing for a change of labels its explanation does not read', () => {
    const { cache, store } = cached([
      node('n0', { cpu: '2' }),
      pod('running', { nodeName: 'n0' }),
      pod('big', { cpu: '64' }),
    ]);
    cache.work(Number.POSITIVE_INFINITY, false);
    update(store, store.get('Pod', 'default/running')!, (p) => (p.metadata.labels = { app: 'relabelled' }));
    assert.equal(cache.upToDate(), true);
    assert.equal(cache.readers, 0, 'no explanation reads other pods');
  });

  it('the nodes a bind changed only, for an explanation kept per node, and it equals one computed afresh', () => {
    const { cache, store, deps } = cached([
      node('n0', { cpu: '2' }),
      node('n1', { cpu: '2' }),
      pod('web', { cpu: '1500m' }),
    ]);
    cache.work(Number.POSITIVE_INFINITY, false);
    const filler = pod('filler', { nodeName: 'n1', cpu: '1' });
    filler.metadata.resourceVersion = '7';
    store.upsert('Pod', filler);
    assert.equal(cache.upToDate(), false);
    assert.equal(cache.snapshot().stale, 1);
    cache.work(Number.POSITIVE_INFINITY, false);
    assert.equal(cache.explained, 1);
    assert.equal(cache.refreshed, 1);
    const [item] = cache.snapshot().items;
    assert.equal(item.summary, '1/2 nodes are available');
    const own = store.get('Pod', 'default/web')!;
    assert.deepEqual(item, drain(explainPending(deps, own, storageView(store), NOW)));
  });

  it('afresh after a change of another kind, and the snapshot says how long it has been behind', () => {
    const { cache, store, clock } = cached([node('n0', { cpu: '2' }), pod('big', { cpu: '64' })]);
    cache.work(Number.POSITIVE_INFINITY, false);
    clock.now = 10;
    const n0 = structuredClone(store.get('Node', 'n0')!);
    n0.metadata.labels = { ...n0.metadata.labels, pool: 'b' };
    n0.metadata.resourceVersion = '9';
    store.upsert('Node', n0);
    clock.now = 25;
    assert.deepEqual({ ...cache.snapshot(), items: [] }, { items: [], waiting: 0, stale: 1, behindMs: 15 });
    cache.work(Number.POSITIVE_INFINITY, false);
    assert.equal(cache.explained, 2);
    assert.equal(cache.refreshed, 0);
  });

  it('while verbs come, in sweeps at most every sweepEveryMsWithVerbs', () => {
    const { cache, clock, touchNode } = sweptAt100ThenTouched();
    clock.now = 200;
    assert.equal(cache.work(Number.POSITIVE_INFINITY, true), false);
    assert.equal(cache.sweepDue, 5100, 'the next sweep is due 5 s after the last started');
    assert.equal(cache.snapshot().stale, 1);
    clock.now = 5100;
    cache.work(Number.POSITIVE_INFINITY, true);
    assert.equal(cache.explained, 3);
    assert.equal(cache.upToDate(), true);
    // Without verbs, a sweep starts at once.
    touchNode('4');
    cache.work(Number.POSITIVE_INFINITY, false);
    assert.equal(cache.explained, 4);
  });

  it('while verbs come, sweeps only once the report was read since the last sweep started', () => {
    const { cache, store, clock, touchNode } = sweptAt100ThenTouched();
    clock.now = 10_000;
    assert.equal(cache.work(Number.POSITIVE_INFINITY, true), false, 'unread: no sweep, however long ago the last');
    assert.equal(cache.explained, 2);
    assert.equal(cache.sweepDue, 11_000, 'looked at again a second later');
    // A pod never explained goes on all the same.
    store.upsert('Pod', pod('new', { cpu: '65' }));
    cache.work(Number.POSITIVE_INFINITY, true);
    assert.equal(cache.explained, 3);
    assert.equal(cache.snapshot().stale, 1, 'read at 10,000');
    clock.now = 10_001;
    cache.work(Number.POSITIVE_INFINITY, true);
    assert.equal(cache.explained, 4, 'read since the last sweep started: the stale one is explained again');
    assert.equal(cache.upToDate(), true);
    // Unread, without verbs: a sweep starts at once.
    touchNode('4');
    clock.now = 20_000;
    cache.work(Number.POSITIVE_INFINITY, false);
    assert.equal(cache.explained, 6);
  });
});

describe('pods kube-scheduler has not tried yet', () => {
  /** A pod too big for the node, created `ageMs` before NOW. */
  const created = (name: string, ageMs: number) => {
    const p = pod(name, { cpu: '64' });
    p.metadata.creationTimestamp = new Date(NOW - ageMs).toISOString();
    return p;
  };
  const tried = (p: Pod) => {
    p.status = { ...p.status, conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] };
  };

  it('are explained once explainAfterMs old, not before, and notTriedDue says when', () => {
    const { cache, store, clock } = cached([node('n0', { cpu: '2' })], { explainAfterMs: 10_000 });
    store.upsert('Pod', created('young', 4_000));
    cache.work(Number.POSITIVE_INFINITY, true);
    assert.equal(cache.explained, 0);
    assert.equal(cache.snapshot().waiting, 1, 'counted as not explained yet');
    assert.equal(cache.upToDate(), true, 'no work until it is due: the worker rests');
    assert.equal(cache.notTriedDue, 6_000, 'ten seconds from its creation');
    clock.now = 5_999;
    cache.work(Number.POSITIVE_INFINITY, false);
    assert.equal(cache.explained, 0);
    clock.now = 6_000;
    assert.equal(cache.upToDate(), false, 'due: work again');
    cache.work(Number.POSITIVE_INFINITY, true);
    assert.equal(cache.explained, 1);
    assert.deepEqual(names(cache), ['young']);
    assert.equal(cache.upToDate(), true);
  });

  it('are explained at once once kube-scheduler marks them PodScheduled False', () => {
    const { cache, store } = cached([node('n0', { cpu: '2' })], { explainAfterMs: 10_000 });
    const p = created('p', 0);
    store.upsert('Pod', p);
    cache.work(Number.POSITIVE_INFINITY, true);
    assert.equal(cache.explained, 0);
    update(store, p, tried);
    cache.work(Number.POSITIVE_INFINITY, true);
    assert.deepEqual(names(cache), ['p']);
    // Created already tried (a gated pod, or one listed after kube-scheduler's attempt): at once as well.
    const q = created('q', 0);
    tried(q);
    store.upsert('Pod', q);
    cache.work(Number.POSITIVE_INFINITY, true);
    assert.deepEqual(names(cache).sort(), ['p', 'q']);
  });

  it('are explained at once when older than explainAfterMs (listed at start, a scheduler down), never when bound', () => {
    const { cache, store, clock } = cached([node('n0', { cpu: '2' }), created('old', 60_000)], {
      explainAfterMs: 10_000,
    });
    store.upsert('Pod', created('bound-soon', 0));
    cache.work(Number.POSITIVE_INFINITY, true);
    assert.deepEqual(names(cache), ['old']);
    update(store, store.get('Pod', 'default/bound-soon')!, (p) => {
      p.spec.nodeName = 'n0';
    });
    assert.equal(cache.snapshot().waiting, 0, 'the bound pod is no longer waited for');
    assert.equal(cache.notTriedDue, 0);
    clock.now = 20_000;
    cache.work(Number.POSITIVE_INFINITY, false);
    assert.deepEqual(names(cache), ['old'], 'and was never explained');
  });
});
