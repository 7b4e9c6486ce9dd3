// End to end, joint capacity accounting: the real CLI (default settings) on a real control plane (startSchedulerCluster:
// kube-apiserver, etcd, kube-controller-manager's PV controller, the stand-in CSI external-provisioner). The test plays
// kube-scheduler: a burst of five pods of 3Gi to a node whose CSIStorageCapacity says 10Gi, each filtered while the
// binds before it still wait for their volumes. Exactly three pass; the claims get selected-node, the provisioner (held
// until then) creates the PVs later, the real PV controller binds the claims, the capacity object is republished
// later, and the in-flight amount then drops to zero.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import { kubeComponents } from '../components/components.ts';
import type { KubeObject } from '../components/kube-api.ts';
import { makeCSIDriver, makeCSIStorageCapacity, makeStorageClass } from '../helpers/objects.ts';
import { assertExitedCleanly, callExtender } from './extender-process.ts';
import {
  CSI_DRIVER,
  claim,
  clusterNode,
  HOSTNAME,
  pendingPod,
  type SchedulerCluster,
  startSchedulerCluster,
} from './scheduler-cluster.ts';

const SELECTED_NODE = 'volume.kubernetes.io/selected-node';
/** No kube-scheduler serves it: only this test's calls decide about these pods. */
const SCHEDULER = 'capacity-accounting-test';
const PODS = 5;
const GI = 2 ** 30;
const found = await kubeComponents();

if (found.skip) {
  test('joint capacity accounting against a real API server', { skip: found.skip }, () => {});
} else {
  let cluster: SchedulerCluster;
  const releases: (() => void)[] = [];

  const call = <T>(method: 'GET' | 'POST', path: string, body?: unknown) =>
    callExtender<T>(cluster.extender, method, path, body);

  const filter = async (name: string): Promise<string[]> => {
    const { status, body } = await call<{ NodeNames: string[] | null }>('POST', '/scheduler/filter', {
      Pod: await cluster.api.get('Pod', name, 'default'),
      NodeNames: ['n1'],
    });
    assert.equal(status, 200);
    return body.NodeNames ?? [];
  };

  const inFlightBytes = async (): Promise<number> => {
    const { body } = await call<string>('GET', '/metrics');
    const m = /^topology_extender_capacity_in_flight_bytes\{node="n1",storage_class="lvm"\} (\d+)$/m.exec(body);
    return m ? Number(m[1]) : 0;
  };

  const selectedNodeOf = async (name: string) =>
    (
      (await cluster.api.get('PersistentVolumeClaim', name, 'default'))?.metadata.annotations as
        | Record<string, string>
        | undefined
    )?.[SELECTED_NODE];

  before(async () => {
    cluster = await startSchedulerCluster([
      ...clusterNode('n1', 'zone-a'),
      created(makeStorageClass('lvm', { provisioner: CSI_DRIVER })),
      created(makeCSIDriver(CSI_DRIVER, { attachRequired: false, storageCapacity: true })),
      created(
        makeCSIStorageCapacity('lvm-n1', {
          namespace: 'kube-system',
          className: 'lvm',
          nodeTopology: { matchLabels: { [HOSTNAME]: 'n1' } },
          capacity: '10Gi',
        }),
      ),
    ]);
    // The external-provisioner is late: it creates no PV before the test lets it.
    for (let i = 0; i < PODS; i++) releases.push(cluster.provisioner.hold(`default/data-${i}`));
    for (let i = 0; i < PODS; i++)
      await cluster.add(claim(`data-${i}`, 'lvm', '3Gi'), pendingPod(`p${i}`, SCHEDULER, { claims: [`data-${i}`] }));
    // The extender has seen the claims once the first pod's filter passes n1.
    await waitFor('the extender follows the claims', async () => (await filter('p0')).includes('n1'));
  });

  after(async () => {
    const extender = cluster?.extender;
    const code = await extender?.stop();
    await cluster?.stop();
    if (extender) assertExitedCleanly(extender, code);
  });

  describe('joint capacity accounting against an API server', () => {
    test('a burst admits exactly what the capacity holds; the republish clears the in-flight amount', async () => {
      const admitted: string[] = [];
      const binds: Promise<{ status: number; body: { Error: string } }>[] = [];
      for (let i = 0; i < PODS; i++) {
        if (!(await filter(`p${i}`)).includes('n1')) continue;
        admitted.push(`data-${i}`);
        const uid = (await cluster.api.get('Pod', `p${i}`, 'default'))!.metadata.uid;
        binds.push(
          call('POST', '/scheduler/bind', { PodName: `p${i}`, PodNamespace: 'default', PodUID: uid, Node: 'n1' }),
        );
        // The bind wrote selected-node before the scheduler filters the next pod.
        await waitFor(`data-${i} selected for n1`, async () => (await selectedNodeOf(`data-${i}`)) === 'n1');
      }
      assert.deepEqual(admitted, ['data-0', 'data-1', 'data-2']);
      assert.equal(await inFlightBytes(), 9 * GI);

      // The provisioner creates each PV (3Gi, pre-bound to its claim); the real PV controller binds the claims.
      for (const release of releases) release();
      for (const b of await Promise.all(binds)) assert.deepEqual([b.status, b.body.Error], [200, '']);
      const nodes: (string | undefined)[] = [];
      for (const p of ['p0', 'p1', 'p2']) {
        const bound = await cluster.api.get<KubeObject & { spec: { nodeName?: string } }>('Pod', p, 'default');
        nodes.push(bound?.spec.nodeName);
      }
      assert.deepEqual(nodes, ['n1', 'n1', 'n1']);
      assert.deepEqual(
        [...cluster.provisioner.provisioned].sort(),
        (await Promise.all(admitted.map((c) => cluster.api.get('PersistentVolumeClaim', c, 'default'))))
          .map((c) => `pvc-${c!.metadata.uid}`)
          .sort(),
        'a PV for each admitted claim, none for the others',
      );
      // Provisioned, but the capacity object still says 10Gi: the three volumes stay counted.
      assert.equal(await inFlightBytes(), 9 * GI);
      assert.deepEqual(await filter('p3'), []);

      // external-provisioner republishes: 1Gi left.
      const published = (await cluster.api.get('CSIStorageCapacity', 'lvm-n1', 'kube-system'))!;
      await cluster.api.patch(published, { capacity: '1Gi' });
      await waitFor('in-flight amount back to zero', async () => (await inFlightBytes()) === 0);
      assert.deepEqual(await filter('p3'), []);
    });
  });
}
