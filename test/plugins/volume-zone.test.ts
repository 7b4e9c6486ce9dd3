// VolumeZone (upstream volumezone): its rules, with case names after the upstream tests.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Node, Pod, StorageClass } from '../../src/cluster/types.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import { VolumeZonePlugin } from '../../src/plugins/volume-zone.ts';
import { TestCluster } from '../volumes/fixtures.ts';
import { claimVolume, node, nodeInfo, pod, pv, pvc, view } from './helpers.ts';

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
