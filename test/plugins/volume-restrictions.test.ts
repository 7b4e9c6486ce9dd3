// VolumeRestrictions (upstream volumerestrictions): its rules, with case names after the upstream tests.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PersistentVolumeClaim, Pod } from '../../src/cluster/types.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import type { Status } from '../../src/framework/interfaces.ts';
import { VolumeRestrictionsPlugin } from '../../src/plugins/volume-restrictions.ts';
import { ClaimUsage } from '../../src/volumes/claim-usage.ts';
import { makeNode, makePod, makePVC } from '../helpers/objects.ts';
import { TestCluster } from '../volumes/fixtures.ts';
import { claimVolume, nodeInfo, view } from './helpers.ts';

describe('VolumeRestrictions', () => {
  const rwop = makePVC('claim-rwop', { spec: { accessModes: ['ReadWriteOncePod'] } });
  const rwo = makePVC('claim-rwo', { spec: { accessModes: ['ReadWriteOnce'] } });
  function run(objects: (PersistentVolumeClaim | Pod)[], incoming: Pod, nodePods: Pod[]): Status {
    const cluster = new TestCluster(objects);
    const plugin = new VolumeRestrictionsPlugin(cluster.store, new ClaimUsage(cluster.store));
    const state = new CycleState();
    const pre = plugin.preFilter(state, incoming);
    if (pre.code !== 'Success') return pre;
    return plugin.filter(state, incoming, nodeInfo(makeNode('n1'), nodePods));
  }

  it('nothing to check: Skip', () => {
    assert.equal(run([rwo], makePod('p', { volumes: [claimVolume('claim-rwo')] }), []).code, 'Skip');
  });

  it('ReadWriteOncePod claim used by a scheduled pod elsewhere: Unschedulable on every node', () => {
    const user = makePod('user', { volumes: [claimVolume('claim-rwop')], nodeName: 'n2' });
    assert.deepEqual(view(run([rwop, user], makePod('p', { volumes: [claimVolume('claim-rwop')] }), [])), [
      'Unschedulable',
      'node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode',
    ]);
  });

  it('ReadWriteOncePod claim used by an (assumed) pod on this node', () => {
    const user = makePod('user', { volumes: [claimVolume('claim-rwop')] });
    assert.equal(
      run([rwop], makePod('p', { volumes: [claimVolume('claim-rwop')] }), [
        { ...user, spec: { ...user.spec, nodeName: 'n1' } },
      ]).code,
      'Unschedulable',
    );
  });

  it('ReadWriteOncePod claim whose user terminated: fits', () => {
    const done = {
      ...makePod('user', { volumes: [claimVolume('claim-rwop')], nodeName: 'n2' }),
      status: { phase: 'Succeeded' },
    };
    assert.equal(run([rwop, done], makePod('p', { volumes: [claimVolume('claim-rwop')] }), []).code, 'Success');
  });

  // updatePVCRefCounts and readWriteOncePodPVCsForPod read persistentVolumeClaim sources only.
  it("ReadWriteOncePod claim that is another pod's generic ephemeral volume: that pod is not counted as a user", () => {
    const rwopScratch = makePVC('owner-scratch', { spec: { accessModes: ['ReadWriteOncePod'] } });
    const owner = makePod('owner', {
      volumes: [{ name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: {} } } }],
      nodeName: 'n1',
    });
    assert.equal(
      run([rwopScratch, owner], makePod('p', { volumes: [claimVolume('owner-scratch')] }), [owner]).code,
      'Success',
    );
  });

  it('missing claim is unresolvable', () => {
    assert.deepEqual(view(run([], makePod('p', { volumes: [claimVolume('nope')] }), [])), [
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
      const s = run([], makePod('p', { volumes: incoming }), [makePod('e', { volumes: existing, nodeName: 'n1' })]);
      assert.deepEqual(view(s), conflict ? ['Unschedulable', 'node(s) had no available disk'] : ['Success']);
    });
  }
});
