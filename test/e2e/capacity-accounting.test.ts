// End to end, joint capacity accounting: the real CLI (default settings) against the fake API server. A burst of five
// pods of 3Gi to a node whose CSIStorageCapacity says 10Gi: kube-scheduler filters each pod while the binds before it
// still wait for their volumes. Exactly three pass; the claims get selected-node, the PVs appear later, the capacity
// object is republished later, and the in-flight amount then drops to zero.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { boundClaim, created, node, pod, provisionedPV, pvc, storageClass, waitFor } from '../cluster/kube/helpers.ts';
import { makeCSIDriver, makeCSIStorageCapacity } from '../helpers/objects.ts';
import { callExtender, type ExtenderProcess, startExtender } from './extender-process.ts';
import { FakeApiServer, type FakeObject, writeKubeconfig } from './fake-apiserver.ts';

const DRIVER = 'lvm.csi.example.com';
const SELECTED_NODE = 'volume.kubernetes.io/selected-node';
const PODS = 5;
const GI = 2 ** 30;

let server: FakeApiServer;
let extender: ExtenderProcess;

function capacity(size: string): FakeObject {
  return created(
    makeCSIStorageCapacity('lvm-n1', {
      namespace: 'kube-system',
      className: 'lvm',
      nodeTopology: { matchLabels: { 'kubernetes.io/hostname': 'n1' } },
      capacity: size,
    }),
  );
}

const call = <T>(method: 'GET' | 'POST', path: string, body?: unknown) => callExtender<T>(extender, method, path, body);

async function filter(name: string): Promise<string[]> {
  const { status, body } = await call<{ NodeNames: string[] | null }>('POST', '/scheduler/filter', {
    Pod: server.get('Pod', name, 'default'),
    NodeNames: ['n1'],
  });
  assert.equal(status, 200);
  return body.NodeNames ?? [];
}

async function inFlightBytes(): Promise<number> {
  const { body } = await call<string>('GET', '/metrics');
  const m = /^topology_extender_capacity_in_flight_bytes\{node="n1",storage_class="lvm"\} (\d+)$/m.exec(body);
  return m ? Number(m[1]) : 0;
}

const selectedNodeOf = (name: string) =>
  (server.get('PersistentVolumeClaim', name, 'default')?.metadata.annotations as Record<string, string> | undefined)?.[
    SELECTED_NODE
  ];

/** The external provisioner, late: a PV for the selected node, then the PV controller binds the claim. */
function provision(name: string): void {
  const claimObj = server.get('PersistentVolumeClaim', name, 'default')!;
  server.add(
    provisionedPV(`pv-${name}`, claimObj, {
      driver: DRIVER,
      volumeHandle: name,
      size: '3Gi',
      affinity: { 'kubernetes.io/hostname': ['n1'] },
    }),
  );
  server.update(boundClaim(claimObj, `pv-${name}`, '3Gi'));
}

before(async () => {
  server = new FakeApiServer({ bookmarkIntervalMs: 100 });
  await server.start();
  server.add(node('n1'));
  server.add(storageClass('lvm', DRIVER));
  server.add(created(makeCSIDriver(DRIVER, { attachRequired: false, storageCapacity: true })));
  server.add(capacity('10Gi'));
  for (let i = 0; i < PODS; i++)
    server.add(pvc(`data-${i}`, { storageClassName: 'lvm', size: '3Gi' }), pod(`p${i}`, { claims: [`data-${i}`] }));
  extender = await startExtender(await writeKubeconfig(server.url));
  await waitFor('ready', async () => (await call('GET', '/readyz')).status === 200);
});

after(async () => {
  const code = await extender?.stop();
  await server?.stop();
  assert.equal(code, 0, 'the extender exits cleanly on SIGTERM');
});

describe('joint capacity accounting against an API server', () => {
  test('a burst admits exactly what the capacity holds; the republish clears the in-flight amount', async () => {
    const admitted: string[] = [];
    const binds: Promise<{ status: number; body: { Error: string } }>[] = [];
    for (let i = 0; i < PODS; i++) {
      if (!(await filter(`p${i}`)).includes('n1')) continue;
      admitted.push(`data-${i}`);
      const uid = server.get('Pod', `p${i}`, 'default')!.metadata.uid;
      binds.push(
        call('POST', '/scheduler/bind', { PodName: `p${i}`, PodNamespace: 'default', PodUID: uid, Node: 'n1' }),
      );
      // The bind wrote selected-node before the scheduler filters the next pod.
      await waitFor(`data-${i} selected for n1`, () => selectedNodeOf(`data-${i}`) === 'n1');
    }
    assert.deepEqual(admitted, ['data-0', 'data-1', 'data-2']);
    assert.equal(await inFlightBytes(), 9 * GI);

    for (const name of admitted) provision(name);
    for (const b of await Promise.all(binds)) assert.deepEqual([b.status, b.body.Error], [200, '']);
    assert.deepEqual(
      ['p0', 'p1', 'p2'].map((p) => (server.get('Pod', p, 'default')!.spec as { nodeName?: string }).nodeName),
      ['n1', 'n1', 'n1'],
    );
    // Provisioned, but the capacity object still says 10Gi: the three volumes stay counted.
    assert.equal(await inFlightBytes(), 9 * GI);
    assert.deepEqual(await filter('p3'), []);

    // external-provisioner republishes: 1Gi left.
    const published = server.get('CSIStorageCapacity', 'lvm-n1', 'kube-system')!;
    server.update({ ...published, capacity: '1Gi' });
    await waitFor('in-flight amount back to zero', async () => (await inFlightBytes()) === 0);
    assert.deepEqual(await filter('p3'), []);
  });
});
