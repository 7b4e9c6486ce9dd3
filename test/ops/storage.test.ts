// Where the storage view puts a PV (issue 45): CSI drivers publish their own topology keys
// (topology.ebs.csi.aws.com/zone, topology.topolvm.io/node, ...), so a PV's zone is that of the nodes its node
// affinity selects, as a CSIStorageCapacity's is. The view afresh (the CLI, the route by node), the one kept current
// (the route, the metrics) and the metrics say the same.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import type { AnyObject, PersistentVolume } from '../../src/cluster/types.ts';
import { storageMetrics } from '../../src/http/report-metrics.ts';
import { storageView } from '../../src/ops/storage.ts';
import { storageHeadroom } from '../../src/ops/storage-headroom.ts';
import { makePV, node } from '../helpers/objects.ts';
import { cluster, exampleObjects } from './helpers.ts';

const EBS = 'topology.ebs.csi.aws.com/zone';
const TOPOLVM = 'topology.topolvm.io/node';

/** A node of `zone` carrying the labels the two drivers' node plugins publish for it. */
const driverNode = (name: string, zone: string | undefined) =>
  node(name, { ...(zone ? { zone } : {}), labels: { [EBS]: zone ?? 'none', [TOPOLVM]: name } });

function pv(name: string, className: string, affinity: PersistentVolume['spec']['nodeAffinity']): PersistentVolume {
  const v = structuredClone(makePV(name, { className, size: '10Gi', phase: 'Available' }));
  v.spec.nodeAffinity = affinity;
  return { apiVersion: 'v1', ...v };
}

const term = (key: string, operator: string, values?: string[]) => ({
  matchExpressions: [{ key, operator, ...(values ? { values } : {}) }],
});

const objects: AnyObject[] = [
  driverNode('a1', 'z-a'),
  driverNode('a2', 'z-a'),
  driverNode('b1', 'z-b'),
  driverNode('x1', undefined),
  pv('ebs-a', 'ebs', { required: { nodeSelectorTerms: [term(EBS, 'In', ['z-a'])] } }),
  pv('ebs-b', 'ebs', { required: { nodeSelectorTerms: [term(EBS, 'In', ['z-b'])] } }),
  pv('ebs-ab', 'ebs', { required: { nodeSelectorTerms: [term(EBS, 'In', ['z-a']), term(EBS, 'In', ['z-b'])] } }),
  // No node of the cluster is in zone z-c: it reaches none.
  pv('ebs-c', 'ebs', { required: { nodeSelectorTerms: [term(EBS, 'In', ['z-c'])] } }),
  pv('lvm-a1', 'lvm', { required: { nodeSelectorTerms: [term(TOPOLVM, 'In', ['a1'])] } }),
  pv('lvm-b1', 'lvm', { required: { nodeSelectorTerms: [term(TOPOLVM, 'In', ['b1'])] } }),
  // Selected without an In requirement: every node is looked at.
  pv('lvm-not-a', 'lvm', { required: { nodeSelectorTerms: [term(EBS, 'NotIn', ['z-a', 'none'])] } }),
  pv('nfs', 'nfs', undefined),
];

const placed = (view: ReturnType<typeof storageView>) =>
  view.rows.map((r) => `${r.storageClass} ${r.zone || '-'}${r.node === undefined ? '' : ` ${r.node || '-'}`}`);

describe('storage view: a PV is in the zones of the nodes its affinity selects', () => {
  it("places PVs by a CSI driver's own topology keys, as the nodes carrying them are labelled", async () => {
    const { store } = cluster(objects);
    const expected = [
      'ebs -', // ebs-c: no node is in z-c
      'ebs z-a',
      'ebs z-a,z-b', // ebs-ab: both zones' nodes
      'ebs z-b',
      'lvm z-a',
      'lvm z-b', // lvm-b1, and lvm-not-a, which selects b1 only
      'nfs -',
    ];
    assert.deepEqual(placed(storageView(store)), expected);
    assert.deepEqual(
      storageView(store).rows.find((r) => r.storageClass === 'lvm' && r.zone === 'z-b')?.volumes.available.count,
      2,
    );
    assert.deepEqual(storageHeadroom(store).view(), storageView(store), 'the view kept current says the same');
    const registry = new Registry();
    storageMetrics(registry, store);
    assert.match(
      await registry.metrics(),
      /^topology_extender_local_volumes\{storage_class="ebs",zone="z-a",state="available"\} 1$/m,
    );
  });

  it('by node: the one node a PV reaches, or none where it reaches a zone or several nodes', () => {
    const { store } = cluster(objects);
    assert.deepEqual(placed(storageView(store, { byNode: true })), [
      'ebs - -',
      'ebs z-a -',
      'ebs z-a,z-b -',
      'ebs z-b b1', // the only node of z-b
      'lvm z-a a1',
      'lvm z-b b1',
      'nfs - -',
    ]);
  });

  it("the example cluster's fast-ssd disk, whose affinity names the driver's zone key, is in eu-west-1b", () => {
    const { store } = cluster(exampleObjects());
    const fast = storageView(store).rows.filter((r) => r.storageClass === 'fast-ssd');
    assert.deepEqual(
      fast.map((r) => [r.zone, r.volumes.bound.count]),
      [
        ['eu-west-1a', 0],
        ['eu-west-1b', 1],
        ['eu-west-1c', 0],
      ],
    );
  });

  it('moves a PV when the nodes it selects come, go or change zone', () => {
    const { store } = cluster(objects);
    const headroom = storageHeadroom(store);
    const zoneOf = (name: string) => {
      const rows = headroom.view().rows.filter((r) => r.storageClass === name.split('-')[0]);
      assert.deepEqual(headroom.view(), storageView(store));
      return rows.map((r) => r.zone);
    };
    assert.deepEqual(zoneOf('ebs'), ['', 'z-a', 'z-a,z-b', 'z-b']);
    store.upsert('Node', {
      ...driverNode('c1', 'z-c'),
      metadata: { ...driverNode('c1', 'z-c').metadata, resourceVersion: '2' },
    });
    assert.deepEqual(zoneOf('ebs'), ['z-a', 'z-a,z-b', 'z-b', 'z-c']);
    const b1 = store.get('Node', 'b1')!;
    store.upsert('Node', {
      ...b1,
      metadata: {
        ...b1.metadata,
        resourceVersion: '3',
        labels: { ...b1.metadata.labels, 'topology.kubernetes.io/zone': 'z-b2' },
      },
    });
    // lvm-not-a selects every node outside z-a: b1 and now c1.
    assert.deepEqual(zoneOf('lvm'), ['z-a', 'z-b2', 'z-b2,z-c']);
    store.delete('Node', { metadata: { name: 'b1' } });
    assert.deepEqual(zoneOf('lvm'), ['', 'z-a', 'z-c']);
  });
});
