// Filter with nominated pods (upstream RunFilterPluginsWithNominatedPods): pods nominated to a node with at least the
// pod's priority count as present there; lower-priority nominations never hold the pod back.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Pod } from '../../src/cluster/types.ts';
import { ERR_REASON_MAX_VOLUME_COUNT } from '../../src/plugins/node-volume-limits.ts';
import { ERR_REASON_RWOP_CONFLICT } from '../../src/plugins/volume-restrictions.ts';
import { ERR_REASON_BIND_CONFLICT, ERR_REASON_NOT_ENOUGH_SPACE } from '../../src/volumes/binder.ts';
import { makeCapacity } from '../conformance/harness.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { claim, localPV, makeCSIDriver, makeCSINode, node, pod, storageClass } from '../helpers/objects.ts';

function nominated(name: string, nodeName: string, priority: number, claims: string[]): Pod {
  const p = pod(name, { priority, claims });
  p.status = { phase: 'Pending', nominatedNodeName: nodeName };
  return p;
}

/** A PV every node reaches (no node affinity), already bound to its claim. */
function networkPV(name: string) {
  const pv = localPV(name, 'unused');
  delete pv.spec.nodeAffinity;
  pv.spec.storageClassName = '';
  return pv;
}

function csiPV(name: string) {
  const pv = networkPV(name);
  pv.spec.csi = { driver: 'csi.example.com', volumeHandle: name };
  return pv;
}

function rwop(name: string, volumeName: string) {
  const c = claim(name, { volumeName });
  c.spec.accessModes = ['ReadWriteOncePod'];
  return c;
}

let t: TestExtender;
before(async () => {
  t = await createTestExtender(
    [
      node('node-a'),
      node('node-b'),
      storageClass('local'),
      localPV('pv-a', 'node-a'),
      localPV('pv-b', 'node-b'),
      claim('data-waiting'),
      claim('data-low-waiting'),
      nominated('waiting', 'node-a', 100, ['data-waiting']),
      nominated('low-waiting', 'node-b', 10, ['data-low-waiting']),
      claim('data-p'),
      localPV('pv-shared', 'node-a', { className: 'shared' }),
      networkPV('pv-rwop'),
      rwop('rwop-claim', 'pv-rwop'),
      nominated('rwop-waiting', 'node-b', 100, ['rwop-claim']),
      // Provisioned storage: 10Gi of CSIStorageCapacity reachable from node-c only.
      node('node-c'),
      makeCSIDriver('csi.example.com', { storageCapacity: true }),
      storageClass('csi', { provisioner: 'csi.example.com' }),
      makeCapacity('cap-c', 'csi', '10Gi', { matchLabels: { 'kubernetes.io/hostname': 'node-c' } }),
      claim('big-waiting', { className: 'csi', size: '6Gi' }),
      nominated('big', 'node-c', 100, ['big-waiting']),
      claim('six', { className: 'csi', size: '6Gi' }),
      claim('four', { className: 'csi', size: '4Gi' }),
      // One CSI attach slot on node-d, which a nominated pod's volume would take.
      node('node-d'),
      makeCSINode('node-d', { drivers: [{ name: 'csi.example.com', nodeID: 'node-d', allocatable: { count: 1 } }] }),
      csiPV('pv-att-1'),
      csiPV('pv-att-2'),
      claim('att-1', { volumeName: 'pv-att-1', className: '' }),
      claim('att-2', { volumeName: 'pv-att-2', className: '' }),
      nominated('attaching', 'node-d', 100, ['att-1']),
    ],
    {},
    { volumeController: false },
  );
});
after(() => t.close());

async function filter(p: Pod, names: string[]) {
  const res = await t.request.post('/scheduler/filter').send({ Pod: p, Nodes: null, NodeNames: names }).expect(200);
  return res.body as {
    NodeNames: string[];
    FailedNodes: Record<string, string>;
    FailedAndUnresolvableNodes: Record<string, string>;
  };
}

describe('filter with nominated pods', () => {
  it('a PV that an equal-priority nominated pod would take on the node is not offered', async () => {
    const body = await filter(pod('p', { priority: 100, claims: ['data-p'] }), ['node-a']);
    assert.deepEqual(body.NodeNames, []);
    assert.equal(body.FailedAndUnresolvableNodes['node-a'], ERR_REASON_BIND_CONFLICT);
  });

  it('a higher-priority pod may take what the nominated pod waits for', async () => {
    const body = await filter(pod('p', { priority: 101, claims: ['data-p'] }), ['node-a']);
    assert.deepEqual(body.NodeNames, ['node-a']);
  });

  it('lower-priority nominations never hold the pod back', async () => {
    const body = await filter(pod('p', { priority: 50, claims: ['data-p'] }), ['node-b']);
    assert.deepEqual(body.NodeNames, ['node-b']);
  });

  it('the nominated pod itself is not held back by its own nomination', async () => {
    const self = t.store.get('Pod', 'default/waiting')!;
    const body = await filter(self, ['node-a']);
    assert.deepEqual(body.NodeNames, ['node-a']);
  });

  it('a ReadWriteOncePod claim of an equal-priority pod nominated to the node conflicts there, not elsewhere', async () => {
    const p = pod('p', { priority: 100, claims: ['rwop-claim'] });
    const body = await filter(p, ['node-a', 'node-b']);
    assert.deepEqual(body.NodeNames, ['node-a']);
    assert.equal(body.FailedNodes['node-b'], ERR_REASON_RWOP_CONFLICT);
    const higher = await filter(pod('q', { priority: 1000, claims: ['rwop-claim'] }), ['node-b']);
    assert.deepEqual(higher.NodeNames, ['node-b']);
  });

  it('a nomination that arrives through a watch update holds the PV; clearing it releases the PV', async () => {
    const p = pod('p', { priority: 100, claims: ['data-p'] });
    assert.deepEqual((await filter(p, ['node-b'])).NodeNames, ['node-b']);
    const low = t.store.get('Pod', 'default/low-waiting')!;
    await t.add({
      ...low,
      kind: 'Pod',
      spec: { ...low.spec, priority: 100 },
      metadata: { ...low.metadata, resourceVersion: '5' },
    });
    assert.deepEqual((await filter(p, ['node-b'])).NodeNames, []);
    const now = t.store.get('Pod', 'default/low-waiting')!;
    await t.add({
      ...now,
      kind: 'Pod',
      status: { phase: 'Pending' },
      metadata: { ...now.metadata, resourceVersion: '6' },
    });
    assert.deepEqual((await filter(p, ['node-b'])).NodeNames, ['node-b']);
  });

  it("the storage an equal-priority nominated pod would provision is taken from the node's capacity", async () => {
    const six = await filter(pod('p', { priority: 100, claims: ['six'] }), ['node-c']);
    assert.equal(six.FailedAndUnresolvableNodes['node-c'], ERR_REASON_NOT_ENOUGH_SPACE);
    assert.deepEqual((await filter(pod('p', { priority: 100, claims: ['four'] }), ['node-c'])).NodeNames, ['node-c']);
    assert.deepEqual((await filter(pod('p', { priority: 101, claims: ['six'] }), ['node-c'])).NodeNames, ['node-c']);
  });

  it('the attach slot an equal-priority nominated pod would take counts against the CSI limit', async () => {
    const equal = await filter(pod('p', { priority: 100, claims: ['att-2'] }), ['node-d']);
    assert.equal(equal.FailedNodes['node-d'], ERR_REASON_MAX_VOLUME_COUNT);
    assert.deepEqual((await filter(pod('p', { priority: 101, claims: ['att-2'] }), ['node-d'])).NodeNames, ['node-d']);
  });

  it('GET /api/v1/nominations lists, per node, the nominated pods, their priority and the PVs they hold', async () => {
    const res = await t.request.get('/api/v1/nominations').expect(200);
    const nodeA = (
      res.body as { node: string; pods: { name: string; priority: number; persistentVolumes: string[] }[] }[]
    ).find((n) => n.node === 'node-a');
    assert.deepEqual(
      nodeA?.pods.map(({ name, priority, persistentVolumes }) => ({ name, priority, persistentVolumes })),
      [{ name: 'waiting', priority: 100, persistentVolumes: ['pv-a'] }],
    );
    const nodeC = (res.body as { node: string; pods: { storage: Record<string, number> }[] }[]).find(
      (n) => n.node === 'node-c',
    );
    assert.deepEqual(nodeC?.pods[0]?.storage, { 'default/cap-c': 6 * 1024 ** 3 });
  });
});
