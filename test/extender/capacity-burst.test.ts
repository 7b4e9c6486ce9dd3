// A burst of binds to one node through the HTTP verbs (cluster-state mode): with joint capacity accounting the node admits
// exactly as many pods as its CSIStorageCapacity holds, though none of the earlier provisions shows in it yet;
// upstream's per-claim check admits them all. PVs appear later, the capacity object is republished later, and the
// in-flight amount then drops to zero.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AnyObject, CSIStorageCapacity, PersistentVolumeClaim, Pod } from '../../src/cluster/types.ts';
import type { CapacityAccountingMode } from '../../src/volumes/provisioning.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { claim, makeCSIDriver, makeCSIStorageCapacity, makePV, node, pod, storageClass } from '../helpers/objects.ts';

const DRIVER = 'lvm.csi.example.com';
const SELECTED_NODE = 'volume.kubernetes.io/selected-node';
const PODS = 5;

const capacity = (size: string): CSIStorageCapacity =>
  makeCSIStorageCapacity('lvm-n1', {
    namespace: 'kube-system',
    className: 'lvm',
    nodeTopology: { matchLabels: { 'kubernetes.io/hostname': 'n1' } },
    capacity: size,
  });

function cluster(): AnyObject[] {
  const objects: AnyObject[] = [
    node('n1'),
    storageClass('lvm', { provisioner: DRIVER }),
    makeCSIDriver(DRIVER, { storageCapacity: true }),
    // 10Gi left: three 3Gi volumes fit, a fourth does not.
    capacity('10Gi'),
  ];
  for (let i = 0; i < PODS; i++) {
    objects.push(claim(`data-${i}`, { className: 'lvm', size: '3Gi' }), pod(`p${i}`, { claims: [`data-${i}`] }));
  }
  return objects;
}

async function filter(t: TestExtender, p: Pod): Promise<string[]> {
  const res = await t.request.post('/scheduler/filter').send({ Pod: p, NodeNames: ['n1'] });
  assert.equal(res.status, 200);
  return res.body.NodeNames ?? [];
}

const claimOf = (t: TestExtender, name: string) => t.store.get('PersistentVolumeClaim', `default/${name}`)!;

/** The external provisioner: a PV for the selected node, then the PV controller binds the claim. */
async function provision(t: TestExtender, name: string): Promise<void> {
  const pvc = claimOf(t, name);
  await t.add(
    makePV(`pv-${name}`, {
      className: 'lvm',
      size: '3Gi',
      phase: 'Bound',
      affinity: { 'kubernetes.io/hostname': ['n1'] },
      spec: {
        accessModes: ['ReadWriteOnce'],
        csi: { driver: DRIVER, volumeHandle: name },
        claimRef: { kind: 'PersistentVolumeClaim', namespace: 'default', name, uid: pvc.metadata.uid },
      },
    }),
  );
  const bound: PersistentVolumeClaim = {
    ...pvc,
    kind: 'PersistentVolumeClaim',
    metadata: {
      ...pvc.metadata,
      annotations: { ...pvc.metadata.annotations, 'pv.kubernetes.io/bind-completed': 'yes' },
    },
    spec: { ...pvc.spec, volumeName: `pv-${name}` },
    status: { phase: 'Bound' },
  };
  await t.add(bound);
}

async function inFlightMetric(t: TestExtender): Promise<number> {
  const res = await t.request.get('/metrics');
  const m = /^topology_extender_capacity_in_flight_bytes\{node="n1",storage_class="lvm"\} (\d+)$/m.exec(res.text);
  return m ? Number(m[1]) : 0;
}

/**
 * kube-scheduler's pace: each pod is filtered while the binds before it are still waiting for their volumes (the
 * binding cycle is asynchronous), and bound if the node passes. Returns the pods admitted and their pending binds.
 */
async function burst(t: TestExtender) {
  const admitted: string[] = [];
  const binds: Promise<{ status: number; body: { Error: string } }>[] = [];
  for (let i = 0; i < PODS; i++) {
    const p = t.store.get('Pod', `default/p${i}`)!;
    if (!(await filter(t, p)).includes('n1')) continue;
    admitted.push(`data-${i}`);
    binds.push(
      t.request
        .post('/scheduler/bind')
        .send({ PodName: `p${i}`, PodNamespace: 'default', PodUID: p.metadata.uid, Node: 'n1' })
        .then((r) => ({ status: r.status, body: r.body })),
    );
    // The bind has assumed and written the claim's selected-node before kube-scheduler moves to the next pod.
    await t.waitFor(() => claimOf(t, `data-${i}`).metadata.annotations?.[SELECTED_NODE] === 'n1');
  }
  return { admitted, binds };
}

async function scenario(mode: CapacityAccountingMode) {
  const t = await createTestExtender(cluster(), { capacityAccounting: mode }, { volumeController: false });
  try {
    const { admitted, binds } = await burst(t);
    // PVs appear later: the provisioner catches up and every bind completes.
    for (const name of admitted) await provision(t, name);
    for (const b of await Promise.all(binds)) assert.deepEqual([b.status, b.body.Error], [200, '']);
    return { t, admitted };
  } catch (err) {
    await t.close();
    throw err;
  }
}

describe('a burst of binds to one node admits what its CSIStorageCapacity holds', () => {
  it('joint: exactly 3 of 5 pods of 3Gi on 10Gi; the provisioned claims count until the capacity is republished', async () => {
    const { t, admitted } = await scenario('joint');
    try {
      assert.deepEqual(admitted, ['data-0', 'data-1', 'data-2']);
      // p3 and p4 each fit 10Gi alone: rejected only because of joint accounting.
      assert.match((await t.request.get('/metrics')).text, /^topology_extender_capacity_joint_rejections_total 2$/m);
      // The PVs exist, but the capacity object still says 10Gi: 9Gi stay in flight and p3 is still rejected.
      assert.equal(await inFlightMetric(t), 9 * 2 ** 30);
      const p3 = t.store.get('Pod', 'default/p3')!;
      assert.deepEqual(await filter(t, p3), []);
      // The driver republishes 1Gi: the in-flight amount drops to zero, and the node is judged on the new figure.
      await t.add({ ...capacity('1Gi'), metadata: { ...capacity('1Gi').metadata, resourceVersion: '2' } });
      assert.equal(await inFlightMetric(t), 0);
      assert.deepEqual(await filter(t, p3), []);
      await t.add({ ...capacity('6Gi'), metadata: { ...capacity('6Gi').metadata, resourceVersion: '3' } });
      assert.deepEqual(await filter(t, p3), ['n1']);
    } finally {
      await t.close();
    }
  });

  it('upstream: all 5 pods pass (15Gi on a node that published 10Gi), and none counts as joint-only', async () => {
    const { t, admitted } = await scenario('upstream');
    try {
      assert.equal(admitted.length, PODS);
      const metrics = (await t.request.get('/metrics')).text;
      assert.match(metrics, /^topology_extender_capacity_joint_rejections_total 0$/m);
    } finally {
      await t.close();
    }
  });
});
