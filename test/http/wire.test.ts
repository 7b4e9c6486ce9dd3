// The extender wire protocol as kube-scheduler speaks it: literal request bodies (PascalCase keys, null for absent
// fields) and answers checked key by key.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { claim, localPV, node, pod, storageClass } from '../helpers/objects.ts';

const FILTER_KEYS = ['Error', 'FailedAndUnresolvableNodes', 'FailedNodes', 'NodeNames', 'Nodes'];

const web0 = pod('web-0', { uid: '6f1c0b6e-0d3c-4c61-9a55-3d2f0c1e9a10', claims: ['data-web-0'] });
const running = pod('cache-1', { uid: '1111', nodeName: 'node-a', priority: 0 });

let t: TestExtender;
before(async () => {
  t = await createTestExtender([
    node('node-a', { zone: 'z1' }),
    node('node-b', { zone: 'z2' }),
    node('node-c', { zone: 'z3' }),
    storageClass('local'),
    localPV('pv-a', 'node-a'),
    claim('data-web-0'),
    web0,
    running,
  ]);
});
after(() => t.close());

/** The request body kube-scheduler's Go client writes for filter/prioritize with nodeCacheCapable: true. */
function nodeCacheArgs(names: string[]): string {
  return `{"Pod":{"metadata":{"name":"web-0","namespace":"default","uid":"6f1c0b6e-0d3c-4c61-9a55-3d2f0c1e9a10","resourceVersion":"1","creationTimestamp":null},
  "spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"100m"}}}],
  "volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data-web-0"}}]},"status":{"phase":"Pending"}},
  "Nodes":null,"NodeNames":${JSON.stringify(names)}}`;
}

/** The same with nodeCacheCapable: false: every candidate node as a full object. */
function fullNodesArgs(names: string[]): string {
  const items = names.map((n) => ({
    metadata: { name: n, labels: { 'kubernetes.io/hostname': n }, creationTimestamp: null },
    spec: {},
    status: { allocatable: { cpu: '4', memory: '16Gi', pods: '110' }, conditions: [{ type: 'Ready', status: 'True' }] },
  }));
  return `{"Pod":${JSON.stringify({ metadata: web0.metadata, spec: web0.spec, status: web0.status })},"Nodes":{"metadata":{},"items":${JSON.stringify(items)}},"NodeNames":null}`;
}

function post(path: string, body: string) {
  return t.request.post(path).set('Content-Type', 'application/json').send(body);
}

describe('filter in node-cache mode', () => {
  it('answers with exactly the five PascalCase keys of ExtenderFilterResult', async () => {
    const res = await post('/scheduler/filter', nodeCacheArgs(['node-a', 'node-b']));
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'], /^application\/json/);
    assert.deepEqual(Object.keys(res.body).sort(), FILTER_KEYS);
    assert.equal(res.body.Nodes, null);
    assert.equal(res.body.Error, '');
  });

  it('returns NodeNames that are a subset of the input and reports every other input node with a reason', async () => {
    const input = ['node-a', 'node-b', 'node-c', 'node-gone'];
    const res = await post('/scheduler/filter', nodeCacheArgs(input));
    const passed: string[] = res.body.NodeNames;
    const failed = Object.keys(res.body.FailedNodes);
    const unresolvable = Object.keys(res.body.FailedAndUnresolvableNodes);
    for (const n of passed) assert.ok(input.includes(n), `${n} was not in the input`);
    assert.deepEqual([...passed, ...failed, ...unresolvable].sort(), [...input].sort());
    for (const reason of [
      ...Object.values(res.body.FailedNodes),
      ...Object.values(res.body.FailedAndUnresolvableNodes),
    ]) {
      assert.equal(typeof reason, 'string');
      assert.ok((reason as string).length > 0);
    }
  });

  it('fails a node the cache does not know under FailedNodes with a reason naming it', async () => {
    const res = await post('/scheduler/filter', nodeCacheArgs(['node-a', 'node-gone']));
    // Unschedulable, not unresolvable: the watch may deliver the node before kube-scheduler retries.
    assert.deepEqual(res.body, {
      Nodes: null,
      NodeNames: ['node-a'],
      FailedNodes: {
        'node-gone': `node "node-gone" is not in the extender's cache (watch lag, or a node the extender cannot see)`,
      },
      FailedAndUnresolvableNodes: {},
      Error: '',
    });
  });

  it('accepts an empty candidate list', async () => {
    const res = await post('/scheduler/filter', nodeCacheArgs([]));
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.NodeNames, []);
  });
});

describe('filter in non-cache mode', () => {
  it('answers Nodes with the passing nodes exactly as received and NodeNames null', async () => {
    const body = fullNodesArgs(['node-a', 'node-b']);
    const res = await post('/scheduler/filter', body);
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), FILTER_KEYS);
    assert.equal(res.body.NodeNames, null);
    const sent = JSON.parse(body).Nodes.items as { metadata: { name: string } }[];
    for (const item of res.body.Nodes.items) {
      assert.deepEqual(
        item,
        sent.find((n) => n.metadata.name === item.metadata.name),
      );
    }
    const names = res.body.Nodes.items.map((n: { metadata: { name: string } }) => n.metadata.name);
    assert.deepEqual(
      [...names, ...Object.keys(res.body.FailedNodes), ...Object.keys(res.body.FailedAndUnresolvableNodes)].sort(),
      ['node-a', 'node-b'],
    );
  });

  it('judges a node the cache does not know by the object sent, rather than failing it', async () => {
    const res = await post('/scheduler/filter', fullNodesArgs(['node-new']));
    assert.equal(res.status, 200);
    assert.equal(res.body.FailedNodes['node-new'], undefined);
  });
});

describe('prioritize', () => {
  for (const [mode, body] of [
    ['node-cache', nodeCacheArgs(['node-a', 'node-b', 'node-c'])],
    ['non-cache', fullNodesArgs(['node-a', 'node-b', 'node-c'])],
  ] as const) {
    it(`answers a HostPriorityList array: an integer Score in 1..10 per input node that scores, none for 0 (${mode} mode)`, async () => {
      const res = await post('/scheduler/prioritize', body);
      assert.equal(res.status, 200);
      assert.ok(Array.isArray(res.body));
      assert.deepEqual(
        res.body.map((h: { Host: string }) => h.Host),
        ['node-a'],
        "node-a holds the claim's only PV; node-b and node-c score 0 and are left out",
      );
      for (const entry of res.body) {
        assert.deepEqual(Object.keys(entry).sort(), ['Host', 'Score']);
        assert.ok(Number.isInteger(entry.Score) && entry.Score >= 1 && entry.Score <= 10, `score ${entry.Score}`);
      }
      assert.doesNotMatch(res.text, /"Score":\d+\.\d/);
    });
  }

  it('answers [] for a pod with nothing to score (no claims): kube-scheduler adds nothing for hosts not listed', async () => {
    const res = await post(
      '/scheduler/prioritize',
      `{"Pod":${JSON.stringify({ metadata: running.metadata, spec: { containers: [{ name: 'c', image: 'nginx' }] } })},"Nodes":null,"NodeNames":["node-a","node-b","node-c"]}`,
    );
    assert.equal(res.status, 200);
    assert.equal(res.text, '[]');
  });
});

describe('preempt', () => {
  it('answers NodeNameToMetaVictims only, victims by UID, in node-cache mode', async () => {
    const res = await post(
      '/scheduler/preempt',
      `{"Pod":${JSON.stringify({ metadata: web0.metadata, spec: web0.spec })},"NodeNameToVictims":null,
       "NodeNameToMetaVictims":{"node-a":{"Pods":[{"UID":"1111"}],"NumPDBViolations":0}}}`,
    );
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      NodeNameToMetaVictims: { 'node-a': { Pods: [{ UID: '1111' }], NumPDBViolations: 0 } },
    });
  });

  it('maps full victim pods to their UIDs in non-cache mode, keeps equal-importance order, recounts NumPDBViolations (no PDB here)', async () => {
    const victim = (u: string) => ({
      metadata: { name: `v-${u}`, namespace: 'default', uid: u },
      spec: { containers: [] },
    });
    const res = await post(
      '/scheduler/preempt',
      JSON.stringify({
        Pod: { metadata: web0.metadata, spec: web0.spec },
        NodeNameToVictims: { 'node-a': { Pods: [victim('2222'), victim('1111')], NumPDBViolations: 1 } },
        NodeNameToMetaVictims: null,
      }),
    );
    assert.deepEqual(res.body, {
      NodeNameToMetaVictims: { 'node-a': { Pods: [{ UID: '2222' }, { UID: '1111' }], NumPDBViolations: 0 } },
    });
  });

  it('echoes a candidate that arrived with an empty victim list as empty', async () => {
    const res = await post(
      '/scheduler/preempt',
      `{"Pod":${JSON.stringify({ metadata: web0.metadata })},"NodeNameToMetaVictims":{"node-b":{"Pods":null,"NumPDBViolations":0}}}`,
    );
    assert.deepEqual(res.body, { NodeNameToMetaVictims: { 'node-b': { Pods: [], NumPDBViolations: 0 } } });
  });
});

describe('bind', () => {
  it("binds a pod without claims (assumed, then confirmed by the write's event), and a retry to the same node succeeds again", async () => {
    const p = pod('plain-0');
    await t.add(p);
    const args = { PodName: 'plain-0', PodNamespace: 'default', PodUID: p.metadata.uid, Node: 'node-b' };
    const res = await post('/scheduler/bind', JSON.stringify(args));
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { Error: '' });
    await t.waitFor(() => t.store.get('Pod', 'default/plain-0')?.spec.nodeName === 'node-b');
    // The cache assumed the pod at bind; the update event that the write produced confirms it there.
    await t.waitFor(() => !t.cache.isAssumed(p.metadata.uid));
    assert.equal(t.cache.getPod(p.metadata.uid)?.spec.nodeName, 'node-b');
    assert.ok(t.cache.nodeInfo('node-b')!.pods.has(p.metadata.uid));
    const retry = await post('/scheduler/bind', JSON.stringify(args));
    assert.deepEqual(retry.body, { Error: '' });
  });

  it('refuses to bind a pod already bound elsewhere, naming the node', async () => {
    const res = await post(
      '/scheduler/bind',
      JSON.stringify({ PodName: 'cache-1', PodNamespace: 'default', PodUID: '1111', Node: 'node-b' }),
    );
    assert.match(res.body.Error, /already bound to node "node-a"/);
  });

  it('answers an Error for a pod that does not exist or whose UID changed', async () => {
    const missing = await post(
      '/scheduler/bind',
      JSON.stringify({ PodName: 'nope', PodNamespace: 'default', PodUID: 'x', Node: 'node-a' }),
    );
    assert.match(missing.body.Error, /pod "default\/nope" not found/);
    const recreated = await post(
      '/scheduler/bind',
      JSON.stringify({ PodName: 'cache-1', PodNamespace: 'default', PodUID: 'old-uid', Node: 'node-a' }),
    );
    assert.match(recreated.body.Error, /has UID 1111, not old-uid/);
  });
});
