// Probes, metrics and the operator views of the cache.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadSettings, SettingsError } from '../../src/config.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { node, pod } from '../helpers/objects.ts';

let t: TestExtender;
before(async () => {
  t = await createTestExtender([
    node('node-a', { zone: 'z1' }),
    node('node-b', { zone: 'z2' }),
    pod('runner', { nodeName: 'node-a', cpu: '500m', uid: 'runner-uid' }),
    pod('waiting', { uid: 'waiting-uid' }),
  ]);
});
after(() => t.close());

describe('probes', () => {
  it('/healthz answers 200 while the process serves', async () => {
    const res = await t.request.get('/healthz');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { status: 'ok' });
  });

  it('/readyz answers 200 once every kind is synced, naming the cluster-state file it serves', async () => {
    const res = await t.request.get('/readyz');
    assert.equal(res.status, 200);
    assert.equal(res.body.ready, true);
    assert.deepEqual(res.body.notSynced, []);
    assert.match(res.body.source, /^cluster-state \/.*\/cluster\.json$/);
  });
});

describe('ops views', () => {
  it('GET /api/v1/nodes lists every node with allocatable, requested and pod counts', async () => {
    const res = await t.request.get('/api/v1/nodes');
    assert.equal(res.status, 200);
    const a = res.body.items.find((n: { name: string }) => n.name === 'node-a');
    assert.equal(a.pods, 1);
    assert.equal(a.requested.milliCPU, 500);
    assert.equal(a.allocatable.milliCPU, 4000);
    assert.equal(a.zone, 'r1/z1');
    assert.deepEqual(res.body.items.map((n: { name: string }) => n.name).sort(), ['node-a', 'node-b']);
  });

  it('GET /api/v1/nodes/{name} shows the NodeInfo with its pods, and 404 names an unknown node', async () => {
    const res = await t.request.get('/api/v1/nodes/node-a');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.podList, [{ namespace: 'default', name: 'runner', uid: 'runner-uid', assumed: false }]);
    const missing = await t.request.get('/api/v1/nodes/nowhere');
    assert.equal(missing.status, 404);
    assert.match(missing.body.message, /"nowhere"/);
  });

  it('GET /api/v1/pods/assumed lists a pod our bind assumed until the watch confirms it', async () => {
    const before = await t.request.get('/api/v1/pods/assumed');
    assert.deepEqual(before.body.items, []);
    t.cache.assumePod({
      ...pod('waiting', { uid: 'waiting-uid' }),
      spec: { ...pod('waiting').spec, nodeName: 'node-b' },
    });
    const during = await t.request.get('/api/v1/pods/assumed');
    assert.equal(during.body.items.length, 1);
    assert.equal(during.body.items[0].nodeName, 'node-b');
    assert.equal(during.body.items[0].uid, 'waiting-uid');
  });

  it('GET /api/v1/debug/cache-diff reports no difference for a cache in sync with its source', async () => {
    const res = await t.request.get('/api/v1/debug/cache-diff');
    assert.equal(res.status, 200);
    assert.equal(typeof res.body, 'object');
  });
});

describe('metrics', () => {
  it('exposes per-verb latency histograms, outcomes and cache sizes', async () => {
    await t.request
      .post('/scheduler/filter')
      .set('Content-Type', 'application/json')
      .send({ Pod: { metadata: { name: 'x', uid: 'x' } }, Nodes: null, NodeNames: ['node-a'] });
    await t.request.post('/scheduler/filter').set('Content-Type', 'application/json').send('{');
    const res = await t.request.get('/metrics');
    assert.equal(res.status, 200);
    assert.match(res.text, /topology_extender_verb_duration_seconds_bucket\{le="[^"]+",verb="filter"\}/);
    assert.match(res.text, /topology_extender_verb_results_total\{verb="filter",outcome="ok"\} 1/);
    assert.match(res.text, /topology_extender_verb_results_total\{verb="filter",outcome="rejected"\} 1/);
    assert.match(res.text, /topology_extender_cache_nodes 2/);
  });

  it('exposes the watch totals that only grow as counters named _total, per kind', async () => {
    const res = await t.request.get('/metrics');
    for (const name of [
      'topology_extender_watch_relists_total',
      'topology_extender_watch_restarts_total',
      'topology_extender_watch_events_total',
      'topology_extender_watch_event_characters_total',
    ]) {
      assert.match(res.text, new RegExp(`# TYPE ${name} counter`));
      assert.match(res.text, new RegExp(`${name}\\{kind="Node"\\} 0`));
    }
    assert.match(res.text, /# TYPE topology_extender_watch_stale gauge/);
  });
});

describe('the cluster version of a cluster-state file', () => {
  // A dump has no /version: explain follows the newest kube-scheduler unless told the cluster's (v1.35 and v1.36 end
  // their line with "no new claims to deallocate,").
  const summaryWith = async (settings: { kubeVersion?: string }) => {
    const x = await createTestExtender([node('node-a'), pod('big', { cpu: '64', uid: 'big-uid' })], settings);
    try {
      const res = await x.request.post('/api/v1/explain').send({ namespace: 'default', name: 'big' });
      assert.equal(res.status, 200);
      return { version: res.body.kubeSchedulerVersion, summary: res.body.summary as string };
    } finally {
      await x.close();
    }
  };

  it("serve's kubeVersion (--kube-version) sets the kube-scheduler wording explain follows", async () => {
    const told = await summaryWith({ kubeVersion: 'v1.35' });
    assert.equal(told.version, 'v1.35');
    assert.match(told.summary, /no new claims to deallocate, preemption:/);
    const newest = await summaryWith({});
    assert.equal(newest.version, 'v1.37');
    assert.doesNotMatch(newest.summary, /no new claims to deallocate/);
  });

  it('--kube-version 1.36 means v1.36; a value that is no version is refused naming the form', () => {
    assert.equal(loadSettings(['--kube-version', '1.36'], {}).kubeVersion, 'v1.36');
    assert.throws(
      () => loadSettings(['--kube-version', 'latest'], {}),
      (err: unknown) =>
        err instanceof SettingsError && /--kube-version="latest".*v1\.36 or v1\.36\.3/.test(err.message),
    );
  });
});
