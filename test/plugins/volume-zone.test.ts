// VolumeZone (upstream volumezone): its rules, with case names after the upstream tests.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Node, Pod } from '../../src/cluster/types.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import { VolumeZonePlugin } from '../../src/plugins/volume-zone.ts';
import { makeNode, makePod, makePV, makePVC, makeStorageClass } from '../helpers/objects.ts';
import { TestCluster } from '../volumes/fixtures.ts';
import { claimVolume, nodeInfo, view } from './helpers.ts';

describe('VolumeZone', () => {
  const objects = [
    makePVC('PVC_1', { spec: { volumeName: 'Vol_1' } }),
    makePVC('PVC_2', { spec: { volumeName: 'Vol_2' } }),
    makePVC('PVC_3', { spec: { volumeName: 'Vol_3' } }),
    makePVC('PVC_Stable_1', { spec: { volumeName: 'Vol_Stable_1' } }),
    makePVC('PVC_Stable_2', { spec: { volumeName: 'Vol_Stable_2' } }),
    makePVC('PVC_WaitForFirstConsumer', { spec: { storageClassName: 'Class_Wait' } }),
    makePV('Vol_1', { spec: {}, labels: { 'failure-domain.beta.kubernetes.io/zone': 'us-west1-a' } }),
    makePV('Vol_2', {
      spec: {},
      labels: { 'failure-domain.beta.kubernetes.io/region': 'us-west1-b', uselessLabel: 'none' },
    }),
    makePV('Vol_3', { spec: {}, labels: { 'failure-domain.beta.kubernetes.io/region': 'us-west1-c' } }),
    makePV('Vol_Stable_1', { spec: {}, labels: { 'topology.kubernetes.io/zone': 'us-west1-a' } }),
    makePV('Vol_Stable_2', {
      spec: {},
      labels: { 'topology.kubernetes.io/region': 'us-west1-b', uselessLabel: 'none' },
    }),
    makeStorageClass('Class_Wait', { provisioner: 'p' }),
  ];
  const cases: { name: string; pod: Pod; node: Node; want?: string[] }[] = [
    {
      name: 'pod without volume',
      pod: makePod('p', { volumes: [] }),
      node: makeNode('host1', { labels: { 'failure-domain.beta.kubernetes.io/zone': 'us-west1-a' } }),
    },
    { name: 'node without labels', pod: makePod('p', { volumes: [claimVolume('PVC_1')] }), node: makeNode('host1') },
    {
      name: 'beta zone label matched',
      pod: makePod('p', { volumes: [claimVolume('PVC_1')] }),
      node: makeNode('host1', {
        labels: { 'failure-domain.beta.kubernetes.io/zone': 'us-west1-a', uselessLabel: 'none' },
      }),
    },
    {
      name: 'beta region label matched',
      pod: makePod('p', { volumes: [claimVolume('PVC_2')] }),
      node: makeNode('host1', {
        labels: { 'failure-domain.beta.kubernetes.io/region': 'us-west1-b', uselessLabel: 'none' },
      }),
    },
    {
      name: "beta region label doesn't match",
      pod: makePod('p', { volumes: [claimVolume('PVC_2')] }),
      node: makeNode('host1', {
        labels: { 'failure-domain.beta.kubernetes.io/region': 'no_us-west1-b', uselessLabel: 'none' },
      }),
      want: ['UnschedulableAndUnresolvable', 'node(s) had no available volume zone'],
    },
    {
      name: "beta zone label doesn't match",
      pod: makePod('p', { volumes: [claimVolume('PVC_1')] }),
      node: makeNode('host1', {
        labels: { 'failure-domain.beta.kubernetes.io/zone': 'no_us-west1-a', uselessLabel: 'none' },
      }),
      want: ['UnschedulableAndUnresolvable', 'node(s) had no available volume zone'],
    },
    {
      name: 'zone label matched',
      pod: makePod('p', { volumes: [claimVolume('PVC_Stable_1')] }),
      node: makeNode('host1', { labels: { 'topology.kubernetes.io/zone': 'us-west1-a', uselessLabel: 'none' } }),
    },
    {
      name: 'region label matched',
      pod: makePod('p', { volumes: [claimVolume('PVC_Stable_2')] }),
      node: makeNode('host1', { labels: { 'topology.kubernetes.io/region': 'us-west1-b', uselessLabel: 'none' } }),
    },
    {
      name: "region label doesn't match",
      pod: makePod('p', { volumes: [claimVolume('PVC_Stable_2')] }),
      node: makeNode('host1', { labels: { 'topology.kubernetes.io/region': 'no_us-west1-b', uselessLabel: 'none' } }),
      want: ['UnschedulableAndUnresolvable', 'node(s) had no available volume zone'],
    },
    {
      name: 'pv with beta label,node with ga label, matched',
      pod: makePod('p', { volumes: [claimVolume('PVC_1')] }),
      node: makeNode('host1', { labels: { 'topology.kubernetes.io/zone': 'us-west1-a' } }),
    },
    {
      name: "pv with beta label,node with ga label, don't match",
      pod: makePod('p', { volumes: [claimVolume('PVC_1')] }),
      node: makeNode('host1', { labels: { 'topology.kubernetes.io/zone': 'us-west1-b' } }),
      want: ['UnschedulableAndUnresolvable', 'node(s) had no available volume zone'],
    },
    {
      name: 'unbound volume of a WaitForFirstConsumer class is skipped',
      pod: makePod('p', { volumes: [claimVolume('PVC_WaitForFirstConsumer')] }),
      node: makeNode('host1', { labels: { 'topology.kubernetes.io/zone': 'us-west1-b' } }),
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
    const cluster = new TestCluster([makePVC('bound', { spec: { volumeName: 'gone' } })]);
    const plugin = new VolumeZonePlugin(cluster.store);
    assert.deepEqual(view(plugin.preFilter(new CycleState(), makePod('p', { volumes: [claimVolume('nope')] }))), [
      'UnschedulableAndUnresolvable',
      'persistentvolumeclaim "nope" not found',
    ]);
    assert.deepEqual(view(plugin.preFilter(new CycleState(), makePod('p', { volumes: [claimVolume('bound')] }))), [
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
    assert.deepEqual(view(plugin.preFilter(new CycleState(), makePod('p', { volumes: [scratch] }))), ['Skip']);
  });
});
