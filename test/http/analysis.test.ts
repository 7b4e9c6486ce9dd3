// The analysis routes over HTTP on the example cluster: explain answers from the cache, refuses bad input with a 4xx
// naming the problem, and changes nothing.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import type { AnyObject, Pod } from '../../src/cluster/types.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';

let t: TestExtender;
let items: AnyObject[];
before(async () => {
  items = parse(await readFile('examples/cluster.yaml', 'utf8')).items;
  t = await createTestExtender(items, {}, { volumeController: false });
});
after(() => t.close());

describe('POST /api/v1/explain', () => {
  it('a cached pod by namespace/name: the FitError line for the nodes asked about', async () => {
    const res = await t.request
      .post('/api/v1/explain')
      .send({ namespace: 'default', name: 'db-0', nodes: ['node-b1', 'node-b2'] });
    assert.equal(res.status, 200);
    assert.equal(
      res.body.summary,
      '0/2 nodes are available: 1 Insufficient cpu, 1 node(s) did not have enough free storage. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.',
    );
    assert.equal(res.body.nodes[0].plugin, 'VolumeBinding');
    assert.equal(res.body.nodes[0].detail.VolumeBinding.claims[0].provisioning.verdict, 'InsufficientCapacity');
  });

  it('a pod sent whole, without a uid (a manifest not created yet)', async () => {
    const pod = structuredClone(items.find((o) => o.kind === 'Pod' && o.metadata.name === 'web-0')) as Pod;
    pod.metadata = { name: 'web-9', namespace: 'default' } as Pod['metadata'];
    const res = await t.request.post('/api/v1/explain').send({ pod });
    assert.equal(res.status, 200);
    assert.equal(res.body.pod, 'default/web-9');
    assert.equal(res.body.totalNodes, 9);
  });

  it('bad input is a 4xx naming the problem', async () => {
    const unknown = await t.request.post('/api/v1/explain').send({ name: 'db-0', node: ['x'] });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.message, /additional properties/);
    const neither = await t.request.post('/api/v1/explain').send({});
    assert.equal(neither.status, 400);
    assert.match(neither.body.message, /one of pod/);
    // The extender serves a cluster-state file: there is no watch to lag, the pod is not in the file.
    const missing = await t.request.post('/api/v1/explain').send({ namespace: 'default', name: 'nope' });
    assert.equal(missing.status, 404);
    assert.match(missing.body.message, /^pod default\/nope is not in the cluster-state file \/.*\/cluster\.json$/);
    const simulated = await t.request.post('/api/v1/simulate').send({ namespace: 'default', name: 'nope' });
    assert.equal(simulated.status, 404);
    assert.match(simulated.body.message, /^pod default\/nope is not in the cluster-state file /);
    // A pod given whole and by name: which one is meant is not for the extender to guess.
    const manifest = { metadata: { name: 'web-9' }, spec: { containers: [{ name: 'c' }] } };
    for (const route of ['/api/v1/explain', '/api/v1/simulate']) {
      const both = await t.request.post(route).send({ namespace: 'default', name: 'db-0', pod: manifest });
      assert.equal(both.status, 400, route);
      assert.equal(
        both.body.message,
        'pod and name are both set: give the pod whole (pod) or by name (namespace/name), not both',
      );
      const namespaced = await t.request.post(route).send({ namespace: 'default', pod: manifest });
      assert.equal(namespaced.status, 400, route);
      assert.match(namespaced.body.message, /^pod and namespace are both set: .*metadata\.namespace/);
    }
    const badLimit = await t.request.post('/api/v1/explain').send({ name: 'db-0', limit: -1 });
    assert.equal(badLimit.status, 400);
    // A pod sent whole has its read fields typed as the verbs type them.
    const pod = { metadata: { name: 'web-9' }, spec: { containers: [{ name: 'c', ports: '80' }] } };
    const badPorts = await t.request.post('/api/v1/explain').send({ pod });
    assert.equal(badPorts.status, 400);
    assert.match(badPorts.body.message, /pod\/spec\/containers\/0\/ports must be array/);
  });
});

describe('POST /api/v1/simulate', () => {
  const web = {
    kind: 'StatefulSet',
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      replicas: 5,
      template: { spec: { containers: [{ name: 'nginx', image: 'nginx:1.27' }] } },
      volumeClaimTemplates: [
        {
          metadata: { name: 'www' },
          spec: {
            accessModes: ['ReadWriteOnce'],
            storageClassName: 'local-storage',
            resources: { requests: { storage: '20Gi' } },
          },
        },
      ],
    },
  };

  it('places the replicas that fit, explains the first that does not, and leaves the verbs untouched', async () => {
    const filterArgs = {
      Pod: items.find((o) => o.kind === 'Pod' && o.metadata.name === 'web-0'),
      Nodes: null,
      NodeNames: t.cache.nodeNames(),
    };
    const before = (await t.request.post('/scheduler/filter').send(filterArgs)).body;
    const res = await t.request.post('/api/v1/simulate').send({ statefulSet: web });
    assert.equal(res.status, 200);
    assert.equal(res.body.placed, 4);
    assert.equal(res.body.unplaced.pod, 'default/web-4');
    assert.equal(t.store.get('PersistentVolumeClaim', 'default/www-web-1'), undefined, 'nothing written');
    assert.deepEqual((await t.request.post('/scheduler/filter').send(filterArgs)).body, before);
  });

  it('bad input is a 400 naming the field', async () => {
    const tooMany = await t.request.post('/api/v1/simulate').send({ statefulSet: web, replicas: 100000 });
    assert.equal(tooMany.status, 400);
    assert.match(tooMany.body.message, /replicas/);
    const notASet = await t.request.post('/api/v1/simulate').send({ statefulSet: { ...web, kind: 'Deployment' } });
    assert.equal(notASet.status, 400);
    // The selector the replicas spread by (PodTopologySpread's default constraints) must be a label selector.
    for (const selector of ['app=web', { matchLabels: ['app'] }, { matchExpressions: { key: 'app' } }]) {
      const badSelector = await t.request
        .post('/api/v1/simulate')
        .send({ statefulSet: { ...web, spec: { ...web.spec, selector } } });
      assert.equal(badSelector.status, 400, JSON.stringify(selector));
      assert.match(badSelector.body.message, /statefulSet\/spec\/selector/);
    }
  });
});
