// Upstream test/integration/volumescheduling storage_capacity_scoring_test.go (and the older
// volume_capacity_priority shape) through the HTTP prioritize route: the node upstream picks scores highest.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AnyObject, Node, PersistentVolume, PersistentVolumeClaim } from '../../src/cluster/types.ts';
import type { Settings } from '../../src/config.ts';
import { makeCSIDriver } from '../helpers/objects.ts';
import {
  Conformance,
  makeCapacity,
  makeDynamicProvisionerStorageClass,
  makeNode,
  makePod,
  makePV,
  makePVC,
  makeStorageClass,
} from './harness.ts';

const ssd = makeStorageClass('wait-ssd', 'WaitForFirstConsumer');
const hdd = makeStorageClass('wait-hdd', 'WaitForFirstConsumer');
const zone = (z: string) => ({
  'topology.kubernetes.io/region': `region-${z}`,
  'topology.kubernetes.io/zone': `zone-${z}`,
});
const withAffinity = (pv: PersistentVolume, labels: Record<string, string[]>): PersistentVolume => ({
  ...pv,
  spec: {
    ...pv.spec,
    nodeAffinity: {
      required: {
        nodeSelectorTerms: [
          { matchExpressions: Object.entries(labels).map(([key, values]) => ({ key, operator: 'In', values })) },
        ],
      },
    },
  },
});
const local = (name: string, sc: string, node: string, size: string) => makePV(name, sc, '', node, { size });
const zonal = (name: string, sc: string, z: string, size: string) =>
  withAffinity(makePV(name, sc, '', '', { size }), {
    'topology.kubernetes.io/region': [`region-${z}`],
    'topology.kubernetes.io/zone': [`zone-${z}`],
  });

async function scores(
  objects: AnyObject[],
  nodes: Node[],
  claims: PersistentVolumeClaim[],
  settings: Partial<Settings> = {},
) {
  const pod = makePod(
    'pod',
    claims.map((c) => c.metadata.name),
  );
  const k = await Conformance.start([...nodes, ...objects, ...claims, pod], settings);
  try {
    const names = nodes.map((n) => n.metadata.name);
    const filter = await k.filter(pod, names);
    assert.deepEqual(filter.NodeNames, names, 'every node is feasible');
    return await k.prioritize(pod, names);
  } finally {
    await k.close();
  }
}

function best(s: Record<string, number>): string {
  const top = Math.max(...Object.values(s));
  const winners = Object.keys(s).filter((n) => s[n] === top);
  assert.equal(winners.length, 1, `one node scores highest: ${JSON.stringify(s)}`);
  for (const v of Object.values(s)) assert.ok(Number.isInteger(v) && v >= 0 && v <= 10);
  return winners[0];
}

describe('TestStorageCapacityScoring', () => {
  const nodes = [makeNode('node-0'), makeNode('node-1'), makeNode('node-2')];
  const localPVs = (sc1: string, sc2: string) => [
    local('pv-0', sc1, 'node-0', '200Gi'),
    local('pv-1', sc2, 'node-0', '200Gi'),
    local('pv-2', sc1, 'node-1', '100Gi'),
    local('pv-3', sc2, 'node-1', '100Gi'),
    local('pv-4', sc1, 'node-2', '100Gi'),
    local('pv-5', sc2, 'node-2', '50Gi'),
  ];

  it('local volumes with max capacity are preferred', async () => {
    const s = await scores([ssd, hdd, ...localPVs('wait-ssd', 'wait-ssd')], nodes, [
      makePVC('data', 'wait-ssd', '', { size: '20Gi' }),
    ]);
    assert.deepEqual(s, { 'node-0': 9, 'node-1': 8, 'node-2': 6 });
    assert.equal(best(s), 'node-0');
  });

  it('local volumes with max capacity are preferred (multiple pvcs)', async () => {
    const pvs = localPVs('wait-ssd', 'wait-ssd').map((pv) =>
      pv.metadata.name === 'pv-5' ? local('pv-5', 'wait-ssd', 'node-2', '100Gi') : pv,
    );
    const s = await scores([ssd, hdd, ...pvs], nodes, [
      makePVC('data-0', 'wait-ssd', '', { size: '80Gi' }),
      makePVC('data-1', 'wait-ssd', '', { size: '80Gi' }),
    ]);
    assert.equal(best(s), 'node-0');
  });

  it('local volumes with max capacity are preferred (multiple pvcs, multiple classes)', async () => {
    const pvs = localPVs('wait-ssd', 'wait-hdd').map((pv) =>
      pv.metadata.name === 'pv-5' ? local('pv-5', 'wait-hdd', 'node-2', '100Gi') : pv,
    );
    const s = await scores([ssd, hdd, ...pvs], nodes, [
      makePVC('data-0', 'wait-ssd', '', { size: '80Gi' }),
      makePVC('data-1', 'wait-hdd', '', { size: '80Gi' }),
    ]);
    assert.equal(best(s), 'node-0');
  });

  it('zonal volumes with max capacity are preferred (multiple pvcs, multiple classes)', async () => {
    const zonalNodes = [makeNode('node-0', zone('a')), makeNode('node-1', zone('b')), makeNode('node-2', zone('c'))];
    const pvs = [
      zonal('pv-0', 'wait-ssd', 'a', '200Gi'),
      zonal('pv-1', 'wait-hdd', 'a', '200Gi'),
      zonal('pv-2', 'wait-ssd', 'b', '100Gi'),
      zonal('pv-3', 'wait-hdd', 'b', '100Gi'),
      zonal('pv-4', 'wait-ssd', 'c', '100Gi'),
      zonal('pv-5', 'wait-hdd', 'c', '100Gi'),
    ];
    const s = await scores([ssd, hdd, ...pvs], zonalNodes, [
      makePVC('data-0', 'wait-ssd', '', { size: '80Gi' }),
      makePVC('data-1', 'wait-hdd', '', { size: '80Gi' }),
    ]);
    assert.equal(best(s), 'node-0');
  });

  it('the older VolumeCapacityPriority shape prefers the tightest fit instead', async () => {
    const s = await scores(
      [ssd, hdd, ...localPVs('wait-ssd', 'wait-ssd')],
      nodes,
      [makePVC('data', 'wait-ssd', '', { size: '20Gi' })],
      {
        storageScoringShape: [
          { utilization: 0, score: 0 },
          { utilization: 100, score: 10 },
        ],
      },
    );
    assert.deepEqual(s, { 'node-0': 1, 'node-1': 2, 'node-2': 4 });
  });
});

describe('TestStorageCapacityScoringMultiDriver', () => {
  it('multiple CSI drivers with storage capacity reporting enabled', async () => {
    const nodes = [
      makeNode('node-1', { 'topology.kubernetes.io/zone': 'zone-a' }),
      makeNode('node-2', { 'topology.kubernetes.io/zone': 'zone-b' }),
    ];
    const scA = {
      ...makeDynamicProvisionerStorageClass('wait-driver-a', 'WaitForFirstConsumer'),
      provisioner: 'driver-a.csi.k8s.io',
    };
    const scB = {
      ...makeDynamicProvisionerStorageClass('wait-driver-b', 'WaitForFirstConsumer'),
      provisioner: 'driver-b.csi.k8s.io',
    };
    const objects: AnyObject[] = [
      scA,
      scB,
      makeCSIDriver('driver-a.csi.k8s.io', { storageCapacity: true }),
      makeCSIDriver('driver-b.csi.k8s.io', { storageCapacity: true }),
      makeCapacity('a-zone-a', 'wait-driver-a', '12Gi', { matchLabels: { 'topology.kubernetes.io/zone': 'zone-a' } }),
      makeCapacity('a-zone-b', 'wait-driver-a', '6Gi', { matchLabels: { 'topology.kubernetes.io/zone': 'zone-b' } }),
      makeCapacity('b-zone-a', 'wait-driver-b', '6Gi', { matchLabels: { 'topology.kubernetes.io/zone': 'zone-a' } }),
      makeCapacity('b-zone-b', 'wait-driver-b', '12Gi', { matchLabels: { 'topology.kubernetes.io/zone': 'zone-b' } }),
    ];
    assert.equal(best(await scores(objects, nodes, [makePVC('pvc-driver-a', 'wait-driver-a')])), 'node-1');
    assert.equal(best(await scores(objects, nodes, [makePVC('pvc-driver-b', 'wait-driver-b')])), 'node-2');
  });
});
