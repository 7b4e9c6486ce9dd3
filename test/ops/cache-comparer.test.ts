// The cache comparer: what /api/v1/debug/cache-diff reports when the cache or the store disagrees with the API.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { NodeInfoCache } from '../../src/cache/cache.ts';
import { makeApiListers } from '../../src/cluster/kube/listers.ts';
import { loadKubeConfig } from '../../src/cluster/kubeconfig.ts';
import { ClusterStore } from '../../src/cluster/store.ts';
import type { Node, Pod } from '../../src/cluster/types.ts';
import { compareCache } from '../../src/ops/cache-comparer.ts';
import { FakeApiServer, writeKubeconfig } from '../cluster/kube/fake-apiserver.ts';
import { node, pod } from '../cluster/kube/helpers.ts';

let rv = 1;
function asNode(name: string): Node {
  const n = node(name) as unknown as Node;
  return { ...n, metadata: { ...n.metadata, uid: `uid-${name}`, resourceVersion: String(rv++) } };
}
function asPod(name: string, nodeName?: string): Pod {
  const p = pod(name, { nodeName }) as unknown as Pod;
  return { ...p, metadata: { ...p.metadata, uid: `uid-${name}`, resourceVersion: String(rv++) } };
}

function world(nodes: Node[], pods: Pod[]) {
  const store = new ClusterStore();
  const cache = new NodeInfoCache();
  cache.attach(store);
  store.replace('Node', nodes);
  store.replace('Pod', pods);
  return { store, cache };
}

describe('compareCache', () => {
  const nodes = [asNode('node-a'), asNode('node-b')];
  const pods = [asPod('p1', 'node-a'), asPod('p2', 'node-b'), asPod('pending')];

  test('a cache fed from the same state as the API is consistent', async () => {
    const { store, cache } = world(nodes, pods);
    const diff = await compareCache({ cache, store, listPods: async () => pods, listNodes: async () => nodes });
    assert.equal(diff.consistent, true, JSON.stringify(diff, null, 1));
    assert.deepEqual(diff.counts, { apiNodes: 2, apiPods: 3, apiAssignedPods: 2, cacheNodes: 2, cachePods: 2 });
  });

  test('reports nodes and pods the cache misses, holds in excess, or places elsewhere', async () => {
    const { store, cache } = world(nodes, pods);
    const apiNodes = [nodes[0], asNode('node-c')];
    const moved = { ...pods[1], spec: { ...pods[1].spec, nodeName: 'node-a' } };
    const apiPods = [moved, asPod('p4', 'node-c'), pods[2]];
    const diff = await compareCache({ cache, store, listPods: async () => apiPods, listNodes: async () => apiNodes });
    assert.equal(diff.consistent, false);
    assert.deepEqual(diff.cache.nodes.missing, ['node-c']);
    assert.deepEqual(diff.cache.nodes.redundant, ['node-b']);
    assert.deepEqual(
      diff.cache.pods.missing.map((p) => p.name),
      ['p4'],
    );
    assert.deepEqual(
      diff.cache.pods.redundant.map((p) => `${p.name}@${p.nodeName}`),
      ['p1@node-a'],
    );
    assert.deepEqual(diff.cache.pods.wrongNode, [
      { uid: 'uid-p2', namespace: 'default', name: 'p2', nodeName: 'node-a', cacheNodeName: 'node-b' },
    ]);
    assert.deepEqual(diff.store.nodes, { missing: ['node-c'], redundant: ['node-b'] });
    assert.deepEqual(
      diff.store.pods.missing.map((p) => p.name),
      ['p4'],
    );
    assert.deepEqual(
      diff.store.pods.redundant.map((p) => p.name),
      ['p1'],
    );
    assert.deepEqual(
      diff.store.pods.wrongNode.map((p) => `${p.name}: ${p.storeNodeName} vs ${p.nodeName}`),
      ['p2: node-b vs node-a'],
    );
  });

  test('assumed pods are reported apart, with what the API says about them', async () => {
    const { store, cache } = world(nodes, pods);
    cache.assumePod({ ...pods[2], spec: { ...pods[2].spec, nodeName: 'node-a' } });
    const diff = await compareCache({ cache, store, listPods: async () => pods, listNodes: async () => nodes });
    assert.equal(diff.consistent, true);
    assert.deepEqual(diff.cache.assumed, [
      {
        uid: 'uid-pending',
        namespace: 'default',
        name: 'pending',
        nodeName: 'node-a',
        bindingFinished: false,
        api: 'unbound',
      },
    ]);
    const bound = { ...pods[2], spec: { ...pods[2].spec, nodeName: 'node-a' } };
    const later = await compareCache({
      cache,
      store,
      listPods: async () => [pods[0], pods[1], bound],
      listNodes: async () => nodes,
    });
    assert.equal(later.cache.assumed[0].api, 'bound-here');
    assert.deepEqual(later.cache.pods.missing, []);
  });

  test('listers read every pod and node from the API, paginated and trimmed', async () => {
    const server = new FakeApiServer();
    await server.start();
    try {
      server.add(node('node-a'), node('node-b'), node('node-c'));
      server.add(pod('p1', { nodeName: 'node-a' }), pod('p2', { namespace: 'other' }));
      const listers = makeApiListers(loadKubeConfig({ kubeconfig: await writeKubeconfig(server.url) }), {
        pageSize: 2,
      });
      const [apiPods, apiNodes] = await Promise.all([listers.listPods(), listers.listNodes()]);
      assert.deepEqual(apiNodes.map((n) => n.metadata.name).sort(), ['node-a', 'node-b', 'node-c']);
      assert.deepEqual(apiPods.map((p) => `${p.metadata.namespace}/${p.metadata.name}`).sort(), [
        'default/p1',
        'other/p2',
      ]);
      assert.equal((apiNodes[0] as { kind?: string }).kind, undefined);
      assert.equal(server.requests.filter((r) => r.path === '/api/v1/nodes').length, 2);
    } finally {
      await server.stop();
    }
  });
});
