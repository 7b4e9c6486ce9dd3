// The neighbouring volume plugins (upstream volumezone, volumerestrictions, nodevolumelimits): their rules, with
// case names after the upstream tests.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type {
  CSINode,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  StorageClass,
} from '../../src/cluster/types.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import type { Status } from '../../src/framework/interfaces.ts';
import { NodeVolumeLimitsPlugin } from '../../src/plugins/node-volume-limits.ts';
import { VolumeRestrictionsPlugin } from '../../src/plugins/volume-restrictions.ts';
import { VolumeZonePlugin } from '../../src/plugins/volume-zone.ts';
import { ClaimUsage } from '../../src/volumes/claim-usage.ts';
import { TestCluster } from '../volumes/fixtures.ts';
import { nodeInfo } from './helpers.ts';

const node = (name: string, labels: Record<string, string> = {}): Node => ({
  kind: 'Node',
  metadata: { name, uid: name, resourceVersion: '1', labels },
});
const pvc = (name: string, spec: PersistentVolumeClaim['spec']): PersistentVolumeClaim => ({
  kind: 'PersistentVolumeClaim',
  metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion: '1' },
  spec,
});
const pv = (name: string, spec: PersistentVolume['spec'], labels?: Record<string, string>): PersistentVolume => ({
  kind: 'PersistentVolume',
  metadata: { name, uid: `uid-${name}`, resourceVersion: '1', ...(labels ? { labels } : {}) },
  spec,
});
const pod = (name: string, volumes: Pod['spec']['volumes'], nodeName?: string): Pod => ({
  kind: 'Pod',
  metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion: '1' },
  spec: { containers: [{ name: 'c' }], volumes, ...(nodeName ? { nodeName } : {}) },
  status: { phase: nodeName ? 'Running' : 'Pending' },
});
const claimVolume = (claimName: string, name = claimName) => ({ name, persistentVolumeClaim: { claimName } });
const view = (s: Status) => [s.code, ...s.reasons];

describe('VolumeZone', () => {
  const objects = [
    pvc('PVC_1', { volumeName: 'Vol_1' }),
    pvc('PVC_2', { volumeName: 'Vol_2' }),
    pvc('PVC_3', { volumeName: 'Vol_3' }),
    pvc('PVC_Stable_1', { volumeName: 'Vol_Stable_1' }),
    pvc('PVC_Stable_2', { volumeName: 'Vol_Stable_2' }),
    pvc('PVC_WaitForFirstConsumer', { storageClassName: 'Class_Wait' }),
    pv('Vol_1', {}, { 'failure-domain.beta.kubernetes.io/zone': 'us-west1-a' }),
    pv('Vol_2', {}, { 'failure-domain.beta.kubernetes.io/region': 'us-west1-b', uselessLabel: 'none' }),
    pv('Vol_3', {}, { 'failure-domain.beta.kubernetes.io/region': 'us-west1-c' }),
    pv('Vol_Stable_1', {}, { 'topology.kubernetes.io/zone': 'us-west1-a' }),
    pv('Vol_Stable_2', {}, { 'topology.kubernetes.io/region': 'us-west1-b', uselessLabel: 'none' }),
    {
      kind: 'StorageClass',
      metadata: { name: 'Class_Wait', uid: 'cw', resourceVersion: '1' },
      provisioner: 'p',
      volumeBindingMode: 'WaitForFirstConsumer',
    } satisfies StorageClass,
  ];
  const cases: { name: string; pod: Pod; node: Node; want?: string[] }[] = [
    {
      name: 'pod without volume',
      pod: pod('p', []),
      node: node('host1', { 'failure-domain.beta.kubernetes.io/zone': 'us-west1-a' }),
    },
    { name: 'node without labels', pod: pod('p', [claimVolume('PVC_1')]), node: node('host1') },
    {
      name: 'beta zone label matched',
      pod: pod('p', [claimVolume('PVC_1')]),
      node: node('host1', { 'failure-domain.beta.kubernetes.io/zone': 'us-west1-a', uselessLabel: 'none' }),
    },
    {
      name: 'beta region label matched',
      pod: pod('p', [claimVolume('PVC_2')]),
      node: node('host1', { 'failure-domain.beta.kubernetes.io/region': 'us-west1-b', uselessLabel: 'none' }),
    },
    {
      name: "beta region label doesn't match",
      pod: pod('p', [claimVolume('PVC_2')]),
      node: node('host1', { 'failure-domain.beta.kubernetes.io/region': 'no_us-west1-b', uselessLabel: 'none' }),
      want: ['UnschedulableAndUnresolvable', 'node(s) had no available volume zone'],
    },
    {
      name: "beta zone label doesn't match",
      pod: pod('p', [claimVolume('PVC_1')]),
      node: node('host1', { 'failure-domain.beta.kubernetes.io/zone': 'no_us-west1-a', uselessLabel: 'none' }),
      want: ['UnschedulableAndUnresolvable', 'node(s) had no available volume zone'],
    },
    {
      name: 'zone label matched',
      pod: pod('p', [claimVolume('PVC_Stable_1')]),
      node: node('host1', { 'topology.kubernetes.io/zone': 'us-west1-a', uselessLabel: 'none' }),
    },
    {
      name: 'region label matched',
      pod: pod('p', [claimVolume('PVC_Stable_2')]),
      node: node('host1', { 'topology.kubernetes.io/region': 'us-west1-b', uselessLabel: 'none' }),
    },
    {
      name: "region label doesn't match",
      pod: pod('p', [claimVolume('PVC_Stable_2')]),
      node: node('host1', { 'topology.kubernetes.io/region': 'no_us-west1-b', uselessLabel: 'none' }),
      want: ['UnschedulableAndUnresolvable', 'node(s) had no available volume zone'],
    },
    {
      name: 'pv with beta label,node with ga label, matched',
      pod: pod('p', [claimVolume('PVC_1')]),
      node: node('host1', { 'topology.kubernetes.io/zone': 'us-west1-a' }),
    },
    {
      name: "pv with beta label,node with ga label, don't match",
      pod: pod('p', [claimVolume('PVC_1')]),
      node: node('host1', { 'topology.kubernetes.io/zone': 'us-west1-b' }),
      want: ['UnschedulableAndUnresolvable', 'node(s) had no available volume zone'],
    },
    {
      name: 'unbound volume of a WaitForFirstConsumer class is skipped',
      pod: pod('p', [claimVolume('PVC_WaitForFirstConsumer')]),
      node: node('host1', { 'topology.kubernetes.io/zone': 'us-west1-b' }),
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const cluster = new TestCluster(objects);
      const plugin = new VolumeZonePlugin(cluster.store);
      const state = new CycleState();
      const pre = plugin.preFilter(state, c.pod);
      if (pre.code === 'Skip') {
        assert.equal(c.want, undefined);
        return;
      }
      assert.equal(pre.code, 'Success');
      assert.deepEqual(view(plugin.filter(state, c.pod, nodeInfo(c.node))), c.want ?? ['Success']);
    });
  }

  it('missing PVC / PV are unresolvable', () => {
    const cluster = new TestCluster([pvc('bound', { volumeName: 'gone' })]);
    const plugin = new VolumeZonePlugin(cluster.store);
    assert.deepEqual(view(plugin.preFilter(new CycleState(), pod('p', [claimVolume('nope')]))), [
      'UnschedulableAndUnresolvable',
      'persistentvolumeclaim "nope" not found',
    ]);
    assert.deepEqual(view(plugin.preFilter(new CycleState(), pod('p', [claimVolume('bound')]))), [
      'UnschedulableAndUnresolvable',
      'persistentvolume "gone" not found',
    ]);
  });
  // getPersistentVolumeClaimNameFromPod reads persistentVolumeClaim sources only: with VolumeBinding disabled, a pod
  // whose ephemeral claim the controller has not created yet is not VolumeZone's to refuse.
  it('generic ephemeral volumes are not read: PreFilter skips though the claim does not exist yet', () => {
    const plugin = new VolumeZonePlugin(new TestCluster([]).store);
    const scratch = {
      name: 'scratch',
      ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'] } } },
    };
    assert.deepEqual(view(plugin.preFilter(new CycleState(), pod('p', [scratch]))), ['Skip']);
  });
});

describe('VolumeRestrictions', () => {
  const rwop = pvc('claim-rwop', { accessModes: ['ReadWriteOncePod'] });
  const rwo = pvc('claim-rwo', { accessModes: ['ReadWriteOnce'] });
  function run(objects: (PersistentVolumeClaim | Pod)[], incoming: Pod, nodePods: Pod[]): Status {
    const cluster = new TestCluster(objects);
    const plugin = new VolumeRestrictionsPlugin(cluster.store, new ClaimUsage(cluster.store));
    const state = new CycleState();
    const pre = plugin.preFilter(state, incoming);
    if (pre.code !== 'Success') return pre;
    return plugin.filter(state, incoming, nodeInfo(node('n1'), nodePods));
  }

  it('nothing to check: Skip', () => {
    assert.equal(run([rwo], pod('p', [claimVolume('claim-rwo')]), []).code, 'Skip');
  });

  it('ReadWriteOncePod claim used by a scheduled pod elsewhere: Unschedulable on every node', () => {
    const user = pod('user', [claimVolume('claim-rwop')], 'n2');
    assert.deepEqual(view(run([rwop, user], pod('p', [claimVolume('claim-rwop')]), [])), [
      'Unschedulable',
      'node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode',
    ]);
  });

  it('ReadWriteOncePod claim used by an (assumed) pod on this node', () => {
    const user = pod('user', [claimVolume('claim-rwop')]);
    assert.equal(
      run([rwop], pod('p', [claimVolume('claim-rwop')]), [{ ...user, spec: { ...user.spec, nodeName: 'n1' } }]).code,
      'Unschedulable',
    );
  });

  it('ReadWriteOncePod claim whose user terminated: fits', () => {
    const done = { ...pod('user', [claimVolume('claim-rwop')], 'n2'), status: { phase: 'Succeeded' } };
    assert.equal(run([rwop, done], pod('p', [claimVolume('claim-rwop')]), []).code, 'Success');
  });

  // updatePVCRefCounts and readWriteOncePodPVCsForPod read persistentVolumeClaim sources only.
  it("ReadWriteOncePod claim that is another pod's generic ephemeral volume: that pod is not counted as a user", () => {
    const rwopScratch = pvc('owner-scratch', { accessModes: ['ReadWriteOncePod'] });
    const owner = pod('owner', [{ name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: {} } } }], 'n1');
    assert.equal(run([rwopScratch, owner], pod('p', [claimVolume('owner-scratch')]), [owner]).code, 'Success');
  });

  it('missing claim is unresolvable', () => {
    assert.deepEqual(view(run([], pod('p', [claimVolume('nope')]), [])), [
      'UnschedulableAndUnresolvable',
      'persistentvolumeclaim "nope" not found',
    ]);
  });

  const gce = (pdName: string, readOnly = false) => ({
    name: `gce-${pdName}`,
    gcePersistentDisk: { pdName, readOnly },
  });
  const cases: [string, Pod['spec']['volumes'], Pod['spec']['volumes'], boolean][] = [
    ['same GCE PD read-write conflicts', [gce('foo')], [gce('foo')], true],
    ['same GCE PD read-only on both fits', [gce('foo', true)], [gce('foo', true)], false],
    ['different GCE PDs fit', [gce('foo')], [gce('bar')], false],
    [
      'same EBS volume conflicts',
      [{ name: 'a', awsElasticBlockStore: { volumeID: 'v1' } }],
      [{ name: 'b', awsElasticBlockStore: { volumeID: 'v1' } }],
      true,
    ],
    [
      'same RBD image on overlapping monitors conflicts',
      [{ name: 'a', rbd: { monitors: ['a', 'b'], pool: 'p', image: 'i' } }],
      [{ name: 'b', rbd: { monitors: ['b', 'c'], pool: 'p', image: 'i' } }],
      true,
    ],
    ['same iSCSI IQN conflicts', [{ name: 'a', iscsi: { iqn: 'q' } }], [{ name: 'b', iscsi: { iqn: 'q' } }], true],
  ];
  for (const [name, incoming, existing, conflict] of cases) {
    it(`disk conflict: ${name}`, () => {
      const s = run([], pod('p', incoming), [pod('e', existing, 'n1')]);
      assert.deepEqual(view(s), conflict ? ['Unschedulable', 'node(s) had no available disk'] : ['Success']);
    });
  }
});

describe('NodeVolumeLimits (CSI)', () => {
  const csiNode = (count: number | undefined, migrated = ''): CSINode => ({
    kind: 'CSINode',
    metadata: {
      name: 'n1',
      uid: 'csinode',
      resourceVersion: '1',
      annotations: { 'storage.alpha.kubernetes.io/migrated-plugins': migrated },
    },
    spec: {
      drivers: [{ name: 'ebs.csi.aws.com', nodeID: 'n1', ...(count === undefined ? {} : { allocatable: { count } }) }],
    },
  });
  const csiPV = (name: string) => pv(name, { csi: { driver: 'ebs.csi.aws.com', volumeHandle: `h-${name}` } });
  const boundClaim = (name: string, pvName: string) => pvc(name, { volumeName: pvName });
  const sc: StorageClass = {
    kind: 'StorageClass',
    metadata: { name: 'ebs', uid: 'ebs', resourceVersion: '1' },
    provisioner: 'ebs.csi.aws.com',
    volumeBindingMode: 'WaitForFirstConsumer',
  };
  const objects = [
    csiPV('pv-1'),
    csiPV('pv-2'),
    csiPV('pv-3'),
    boundClaim('c1', 'pv-1'),
    boundClaim('c2', 'pv-2'),
    boundClaim('c3', 'pv-3'),
    pvc('unbound', { storageClassName: 'ebs' }),
    sc,
    pv('intree', { awsElasticBlockStore: { volumeID: 'aws://us-east-1a/vol-123' } }),
    boundClaim('intree-claim', 'intree'),
  ];
  function run(extra: (CSINode | Pod)[], incoming: Pod, nodePods: Pod[]): Status {
    const cluster = new TestCluster([...objects, ...extra]);
    const plugin = new NodeVolumeLimitsPlugin(cluster.store);
    const state = new CycleState();
    const pre = plugin.preFilter(state, incoming);
    if (pre.code !== 'Success') return pre;
    return plugin.filter(state, incoming, nodeInfo(node('n1'), nodePods));
  }
  const exceeded = ['Unschedulable', 'node(s) exceed max volume count'];

  it('pod without claims: Skip', () => assert.equal(run([], pod('p', [{ name: 'e', emptyDir: {} }]), []).code, 'Skip'));
  it('fits when attached + new ≤ allocatable.count', () => {
    assert.deepEqual(view(run([csiNode(2)], pod('p', [claimVolume('c2')]), [pod('e', [claimVolume('c1')], 'n1')])), [
      'Success',
    ]);
  });
  it('exceeds max volume count', () => {
    assert.deepEqual(
      view(run([csiNode(1)], pod('p', [claimVolume('c2')]), [pod('e', [claimVolume('c1')], 'n1')])),
      exceeded,
    );
  });
  it('a volume already attached for another pod is not counted twice', () => {
    assert.deepEqual(view(run([csiNode(1)], pod('p', [claimVolume('c1')]), [pod('e', [claimVolume('c1')], 'n1')])), [
      'Success',
    ]);
  });
  it('unbound claims count by their class provisioner', () => {
    assert.deepEqual(
      view(run([csiNode(1)], pod('p', [claimVolume('unbound')]), [pod('e', [claimVolume('c1')], 'n1')])),
      exceeded,
    );
  });
  it('no limit published: fits', () => {
    assert.deepEqual(
      view(run([csiNode(undefined)], pod('p', [claimVolume('c2')]), [pod('e', [claimVolume('c1')], 'n1')])),
      ['Success'],
    );
  });
  it('in-tree PV counts against its CSI driver only where the plugin is migrated', () => {
    const existing = [pod('e', [claimVolume('c1')], 'n1')];
    assert.deepEqual(view(run([csiNode(1)], pod('p', [claimVolume('intree-claim')]), existing)), ['Success']);
    assert.deepEqual(
      view(run([csiNode(1, 'kubernetes.io/aws-ebs')], pod('p', [claimVolume('intree-claim')]), existing)),
      exceeded,
    );
  });
  it('missing claim of the new pod is unresolvable', () => {
    assert.deepEqual(view(run([csiNode(1)], pod('p', [claimVolume('nope')]), [])), [
      'UnschedulableAndUnresolvable',
      'looking up PVC default/nope: persistentvolumeclaim "nope" not found',
    ]);
  });
});
