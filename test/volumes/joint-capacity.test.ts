// Joint capacity accounting (docs/design.md "Capacity that never over-commits"): a pod's claims on one CSIStorageCapacity
// must fit together, after the provisions in flight it does not show yet; `upstream` keeps the per-claim check.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newNodeInfo } from '../../src/cache/node-info.ts';
import type { AnyObject, CSIStorageCapacity, PersistentVolumeClaim } from '../../src/cluster/types.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import { VolumeBindingPlugin } from '../../src/plugins/volume-binding.ts';
import type { CapacityAccountingMode } from '../../src/volumes/provisioning.ts';
import { buildCapacityScorer } from '../../src/volumes/scorer.ts';
import { ClusterVolumeBinder } from '../../src/volumes/volume-binder.ts';
import { makeCSIDriver } from '../helpers/objects.ts';
import {
  makeCapacity,
  makePod,
  makeTestPVC,
  node1,
  PROVISIONER,
  PVC_SELECTED_NODE,
  PVC_UNBOUND,
  storageClasses,
  TestCluster,
  WAIT_CLASS_WITH_PROVISIONER,
} from './fixtures.ts';

const NOT_ENOUGH_SPACE = 'node(s) did not have enough free storage';
const GI = 2 ** 30;

function claim(name: string, size: string, selectedNode = ''): PersistentVolumeClaim {
  const state = selectedNode === '' ? PVC_UNBOUND : PVC_SELECTED_NODE;
  return makeTestPVC(name, size, selectedNode, state, '', '1', WAIT_CLASS_WITH_PROVISIONER);
}

function setup(mode: CapacityAccountingMode, objects: AnyObject[], capacity: CSIStorageCapacity) {
  const cluster = new TestCluster([
    ...storageClasses(),
    makeCSIDriver(PROVISIONER, { storageCapacity: true }),
    node1,
    capacity,
    ...objects,
  ]);
  const binder = new ClusterVolumeBinder({
    store: cluster.store,
    writer: cluster.writer,
    bindTimeoutSeconds: 10,
    capacityAccounting: mode,
  });
  const find = (claims: PersistentVolumeClaim[]) => {
    const pod = makePod('test-pod', { claims });
    return binder.findPodVolumes(pod, binder.getPodVolumeClaims(pod), node1);
  };
  return { cluster, binder, find };
}

const cap100 = makeCapacity('node1-cap', WAIT_CLASS_WITH_PROVISIONER, node1, '100Gi', '');

describe('a pod’s claims on one capacity object must fit together', () => {
  const a = claim('a', '60Gi');
  const b = claim('b', '60Gi');
  it('joint: two 60Gi claims against 100Gi are rejected with upstream’s reason, and counted as joint-only', () => {
    const { find } = setup('joint', [a, b], cap100);
    assert.deepEqual(find([a]).reasons, []);
    assert.deepEqual(find([b]).reasons, []);
    const both = find([a, b]);
    assert.deepEqual(both.reasons, [NOT_ENOUGH_SPACE]);
    assert.equal(both.jointOnly, true);
  });
  it('upstream: the same two claims are admitted (each fits alone)', () => {
    const { find } = setup('upstream', [a, b], cap100);
    const both = find([a, b]);
    assert.deepEqual(both.reasons, []);
    assert.deepEqual(
      both.podVolumes.dynamicProvisions.map((p) => [p.pvc.metadata.name, p.nodeCapacity?.metadata.name]),
      [
        ['a', 'node1-cap'],
        ['b', 'node1-cap'],
      ],
    );
  });
  it('claims that fit together are admitted in joint mode', () => {
    const small = claim('small', '40Gi');
    const { find } = setup('joint', [a, small], cap100);
    assert.deepEqual(find([a, small]).reasons, []);
  });
  it('maximumVolumeSize still limits each claim alone', () => {
    const capped = makeCapacity('node1-cap', WAIT_CLASS_WITH_PROVISIONER, node1, '100Gi', '50Gi');
    const c40 = claim('c40', '40Gi');
    const d40 = claim('d40', '40Gi');
    const { find } = setup('joint', [a, c40, d40], capped);
    assert.deepEqual(find([c40, d40]).reasons, []);
    const tooBig = find([a]);
    assert.deepEqual(tooBig.reasons, [NOT_ENOUGH_SPACE]);
    assert.equal(tooBig.jointOnly, false, 'upstream rejects a claim over maximumVolumeSize as well');
  });
  it('a capacity object with only maximumVolumeSize is checked per claim, as upstream does', () => {
    const maxOnly = makeCapacity('node1-cap', WAIT_CLASS_WITH_PROVISIONER, node1, '', '60Gi');
    const { find } = setup('joint', [a, b], maxOnly);
    assert.deepEqual(find([a, b]).reasons, []);
  });
});

describe('provisions in flight count against the capacity until it is republished', () => {
  const provisioning = claim('other', '60Gi', 'node1');
  const mine = claim('mine', '60Gi');

  it('an unbound claim with selected-node for the node takes its size from the capacity', () => {
    const { find, binder } = setup('joint', [provisioning, mine], cap100);
    assert.equal(binder.inFlight.bytesFor(cap100), 60 * GI);
    const result = find([mine]);
    assert.deepEqual(result.reasons, [NOT_ENOUGH_SPACE]);
    assert.equal(result.jointOnly, true);
  });

  it('upstream mode ignores it', () => {
    const { find } = setup('upstream', [provisioning, mine], cap100);
    assert.deepEqual(find([mine]).reasons, []);
  });

  it('a claim selected for another node is not in flight here', () => {
    const elsewhere = claim('other', '60Gi', 'node2');
    const { find } = setup('joint', [elsewhere, mine], cap100);
    assert.deepEqual(find([mine]).reasons, []);
  });

  it('once bound (its PV appeared) it still counts; a newer version of the capacity object clears it', () => {
    const { cluster, find, binder } = setup('joint', [provisioning, mine], cap100);
    cluster.add({
      ...provisioning,
      spec: { ...provisioning.spec, volumeName: 'pv-other' },
      metadata: { ...provisioning.metadata, resourceVersion: '2' },
    });
    assert.equal(binder.inFlight.bytesFor(cap100), 60 * GI);
    assert.deepEqual(find([mine]).reasons, [NOT_ENOUGH_SPACE]);
    // The driver republishes: 100Gi - 60Gi = 40Gi left, which the capacity now says itself.
    const republished = { ...makeCapacity('node1-cap', WAIT_CLASS_WITH_PROVISIONER, node1, '40Gi', '') };
    republished.metadata.resourceVersion = '2';
    cluster.add(republished);
    assert.equal(binder.inFlight.bytesFor(republished), 0);
    assert.equal(binder.inFlight.size, 0);
    assert.deepEqual(find([mine]).reasons, [NOT_ENOUGH_SPACE]);
    cluster.add({
      ...makeCapacity('node1-cap', WAIT_CLASS_WITH_PROVISIONER, node1, '60Gi', ''),
      metadata: { ...republished.metadata, resourceVersion: '3' },
    });
    assert.deepEqual(find([mine]).reasons, []);
  });

  it('a republish keeps unbound claims: their volumes may not exist yet', () => {
    const { cluster, binder } = setup('joint', [provisioning], cap100);
    cluster.add({ ...cap100, metadata: { ...cap100.metadata, resourceVersion: '2' } });
    assert.equal(binder.inFlight.bytesFor(cap100), 60 * GI);
  });

  it('a claim first seen bound was provisioned before we watched: not in flight', () => {
    const bound = { ...provisioning, spec: { ...provisioning.spec, volumeName: 'pv-other' } };
    const { binder } = setup('joint', [bound], cap100);
    assert.equal(binder.inFlight.size, 0);
  });

  it('a claim losing selected-node (the provisioner gave up) or deleted leaves', () => {
    const { cluster, binder } = setup('joint', [provisioning], cap100);
    cluster.add({ ...provisioning, metadata: { ...provisioning.metadata, annotations: {}, resourceVersion: '2' } });
    assert.equal(binder.inFlight.size, 0);
    cluster.add({ ...provisioning, metadata: { ...provisioning.metadata, resourceVersion: '3' } });
    assert.equal(binder.inFlight.bytesFor(cap100), 60 * GI);
    cluster.remove(provisioning);
    assert.equal(binder.inFlight.bytesFor(cap100), 0);
  });

  it('claims arriving before their node and capacity are counted once those arrive', () => {
    const cluster = new TestCluster([
      ...storageClasses(),
      makeCSIDriver(PROVISIONER, { storageCapacity: true }),
      provisioning,
    ]);
    const binder = new ClusterVolumeBinder({ store: cluster.store, writer: cluster.writer, bindTimeoutSeconds: 10 });
    assert.equal(binder.inFlight.size, 1);
    cluster.add(cap100);
    assert.equal(binder.inFlight.bytesFor(cap100), 0, 'node unknown yet');
    cluster.add(node1);
    assert.equal(binder.inFlight.bytesFor(cap100), 60 * GI);
    cluster.remove(cap100);
    cluster.add({ ...cap100, metadata: { ...cap100.metadata, name: 'renamed' } });
    assert.equal(binder.inFlight.bytesFor({ ...cap100, metadata: { ...cap100.metadata, name: 'renamed' } }), 60 * GI);
  });

  it('the pod’s own claims, already annotated for the node, are not counted twice', () => {
    const own = claim('own', '60Gi', 'node1');
    const { find } = setup('joint', [own], cap100);
    assert.deepEqual(find([own]).reasons, []);
  });

  it('assumed provisions of a bind in flight count (the assume cache holds their annotation)', () => {
    const first = claim('first', '60Gi');
    const { find, binder } = setup('joint', [first, mine], cap100);
    const pod = makePod('first-pod', { claims: [first] });
    const found = find([first]);
    binder.assumePodVolumes(pod, 'node1', found.podVolumes);
    assert.equal(binder.inFlight.bytesFor(cap100), 60 * GI);
    assert.deepEqual(find([mine]).reasons, [NOT_ENOUGH_SPACE]);
    binder.revertAssumedPodVolumes(found.podVolumes);
    assert.equal(binder.inFlight.bytesFor(cap100), 0);
    assert.deepEqual(find([mine]).reasons, []);
  });
});

describe('nominated pods’ provisions count with the in-flight ones', () => {
  it('40Gi nominated + 30Gi in flight + this pod’s 40Gi exceed 100Gi in joint mode; upstream sees 40 + 40', () => {
    const inFlight = claim('other', '30Gi', 'node1');
    const mine = claim('mine', '40Gi');
    for (const [mode, reasons] of [
      ['joint', [NOT_ENOUGH_SPACE]],
      ['upstream', []],
    ] as const) {
      const { binder } = setup(mode, [inFlight, mine], cap100);
      // Held amounts are keyed by the capacity object the binder holds (what the nominated pod's check admitted on).
      const stored = binder.findCapacity(WAIT_CLASS_WITH_PROVISIONER, node1.metadata.labels, () => true, undefined)!;
      const held = { pvs: new Set<string>(), capacity: new Map([[stored, 40 * GI]]) };
      const pod = makePod('test-pod', { claims: [mine] });
      assert.deepEqual(
        binder.findPodVolumes(pod, binder.getPodVolumeClaims(pod), node1, { held }).reasons,
        reasons,
        mode,
      );
    }
  });
});

describe('scoring uses the same accounting', () => {
  // 0:0,100:10: the tightest fit scores best, which would favour an over-committed node without in-flight counting.
  const tightest = buildCapacityScorer([
    { utilization: 0, score: 0 },
    { utilization: 100, score: 10 },
  ]);
  const score = (binder: ClusterVolumeBinder, claims: PersistentVolumeClaim[]) => {
    const plugin = new VolumeBindingPlugin(binder, tightest);
    const pod = makePod('test-pod', { claims });
    const state = new CycleState();
    plugin.preFilter(state, pod);
    return plugin.score(state, pod, newNodeInfo(node1));
  };
  it('in-flight bytes are requested bytes: 30Gi in flight + 30Gi of the pod on 100Gi scores as 60 % used', () => {
    const inFlight = claim('other', '30Gi', 'node1');
    const mine = claim('mine', '30Gi');
    assert.equal(score(setup('joint', [inFlight, mine], cap100).binder, [mine]), 60);
    assert.equal(score(setup('upstream', [inFlight, mine], cap100).binder, [mine]), 30);
  });
  it('prioritize scores what its cycle’s filter decided, as upstream’s Score does; the next filter counts a new provision in flight', () => {
    const mine = claim('mine', '30Gi');
    const { cluster, binder } = setup('joint', [mine], cap100);
    const plugin = new VolumeBindingPlugin(binder, tightest);
    const pod = makePod('test-pod', { claims: [mine] });
    const cycle = () => {
      const state = new CycleState();
      plugin.preFilter(state, pod);
      return state;
    };
    // filter remembers the decision; each prioritize is a new cycle reading it.
    assert.equal(plugin.filter(cycle(), pod, newNodeInfo(node1)).code, 'Success');
    assert.equal(plugin.score(cycle(), pod, newNodeInfo(node1)), 30);
    assert.equal(plugin.score(cycle(), pod, newNodeInfo(node1)), 30);
    cluster.add(claim('other', '30Gi', 'node1'));
    assert.equal(plugin.score(cycle(), pod, newNodeInfo(node1)), 30, "the filter's decision, made before it");
    assert.equal(plugin.filter(cycle(), pod, newNodeInfo(node1)).code, 'Success');
    assert.equal(plugin.score(cycle(), pod, newNodeInfo(node1)), 60);
  });
  it('a node joint accounting rejects scores 0', () => {
    const inFlight = claim('other', '60Gi', 'node1');
    const mine = claim('mine', '60Gi');
    assert.equal(score(setup('joint', [inFlight, mine], cap100).binder, [mine]), 0);
  });
  it('two claims on one capacity object count its capacity once', () => {
    const a = claim('a', '25Gi');
    const b = claim('b', '25Gi');
    assert.equal(score(setup('joint', [a, b], cap100).binder, [a, b]), 50);
    // Upstream adds the capacity once per claim: 50Gi of 200Gi.
    assert.equal(score(setup('upstream', [a, b], cap100).binder, [a, b]), 25);
  });
});
