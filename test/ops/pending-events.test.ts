// The pending report's cluster event log (src/ops/pending-events.ts): an event makes out of date only the explanations
// that read what it changed. A pending pod's own change leaves the others current; a scheduled pod's labels alone only
// those that read other pods; a pod bound, deleted or resized, an explanation kept per node only on its nodes (but
// everywhere for one naming the same claim); a pod with required pod (anti-)affinity terms, or any other kind, every
// explanation everywhere.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from '../../src/cluster/types.ts';
import { ClusterEventLog } from '../../src/ops/pending-events.ts';
import { pod } from '../helpers/objects.ts';

/** A log whose clock the test sets. */
function log() {
  const clock = { now: 0 };
  return { events: new ClusterEventLog(() => clock.now), clock };
}

/** `p` as its next version, changed by `change`. */
function next(p: Pod, change: (p: Pod) => void): Pod {
  const q = structuredClone(p);
  q.metadata.resourceVersion = String(Number(q.metadata.resourceVersion ?? '1') + 1);
  change(q);
  return q;
}

/** An explanation kept per node, as the log reads it: its claims and its preemption candidate. */
const kept = (claims: string[] = [], candidate?: string) => ({ claims: new Set(claims), candidate });

const antiAffinity = (p: Pod) => {
  p.spec.affinity = {
    podAntiAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: [
        { labelSelector: { matchLabels: { app: 'web' } }, topologyKey: 'kubernetes.io/hostname' },
      ],
    },
  };
};

describe('what a Pod event makes out of date', () => {
  it('a pending pod changing leaves every other explanation current (its own is the cache’s)', () => {
    const { events } = log();
    const waiting = pod('waiting', { cpu: '2' });
    const computed = { generation: events.generation, readsOtherPods: true };
    assert.equal(events.podChanged(waiting, undefined, false), 'more');
    assert.equal(
      events.podChanged(
        next(waiting, (p) => (p.metadata.labels = { x: 'y' })),
        waiting,
        false,
      ),
      'more',
    );
    assert.equal(events.generation, computed.generation, 'no generation bumped');
    assert.equal(events.current(computed), true);
  });

  it('a scheduled pod’s labels alone: out of date only for the explanations that read other pods', () => {
    const { events } = log();
    const running = pod('running', { nodeName: 'n0' });
    const reads = { generation: events.generation, readsOtherPods: true };
    const readsNot = { generation: events.generation, readsOtherPods: false };
    const relabelled = next(running, (p) => (p.metadata.labels = { app: 'other' }));
    assert.equal(events.podChanged(relabelled, running, false), 'labels');
    assert.equal(events.current(reads), false);
    assert.equal(events.current(readsNot), true);
    // Not logged as a change of the node's pods: only a preemption candidate there is judged again.
    assert.deepEqual(events.changedNodes(kept(), readsNot.generation), new Set());
    assert.deepEqual(events.changedNodes(kept([], 'n0'), readsNot.generation), new Set(['n0']));
    assert.deepEqual(events.changedNodes(kept([], 'n1'), readsNot.generation), new Set());
  });

  it('a pod bound: every explanation out of date, one kept per node only on that node', () => {
    const { events } = log();
    const waiting = pod('web-0', { cpu: '1' });
    events.podChanged(waiting, undefined, false);
    const before = { generation: events.generation, readsOtherPods: false };
    const bound = next(waiting, (p) => (p.spec.nodeName = 'n2'));
    assert.equal(events.podChanged(bound, waiting, false), 'more');
    assert.equal(events.current(before), false);
    assert.equal(events.followsNodeByNode(before.generation), true);
    assert.deepEqual(events.changedNodes(kept(), before.generation), new Set(['n2']));
    // A later explanation sees none of it.
    assert.deepEqual(events.changedNodes(kept(), events.generation), new Set());
  });

  it('a pod deleted, moved, or nominated: the nodes it left and the nodes it went to', () => {
    const { events } = log();
    const running = pod('running', { nodeName: 'n0' });
    const g = events.generation;
    const nominated = next(running, (p) => {
      p.spec.nodeName = 'n1';
      p.status = { ...p.status, nominatedNodeName: 'n3' };
    });
    events.podChanged(nominated, running, false);
    assert.deepEqual(events.changedNodes(kept(), g), new Set(['n0', 'n1', 'n3']));
    const h = events.generation;
    events.podChanged(nominated, undefined, true);
    assert.deepEqual(events.changedNodes(kept(), h), new Set(['n1', 'n3']));
  });

  it('a pod naming a claim the explanation names: explained afresh (ReadWriteOncePod counts users everywhere)', () => {
    const { events } = log();
    const running = pod('running', { nodeName: 'n0', claims: ['data'] });
    const g = events.generation;
    events.podChanged(
      next(running, (p) => (p.spec.nodeName = 'n1')),
      running,
      false,
    );
    assert.equal(events.changedNodes(kept(['default/data']), g), undefined);
    assert.deepEqual(events.changedNodes(kept(['default/other']), g), new Set(['n0', 'n1']));
  });

  it('a pod with required pod (anti-)affinity terms: not followed node by node (InterPodAffinity reads every node)', () => {
    const { events } = log();
    const running = next(pod('running', { nodeName: 'n0' }), antiAffinity);
    const g = events.generation;
    events.podChanged(running, undefined, false);
    assert.equal(events.followsNodeByNode(g), false);
    assert.equal(events.followsNodeByNode(events.generation), true, 'an explanation computed after it follows');
  });

  it('the node fingerprints move with the pods on the node, not with their labels', () => {
    const { events } = log();
    const running = pod('running', { nodeName: 'n0' });
    const empty = events.fingerprints.of('n0');
    events.listed(running);
    const withPod = events.fingerprints.of('n0');
    assert.notDeepEqual(withPod, empty);
    const relabelled = next(running, (p) => (p.metadata.labels = { app: 'other' }));
    events.podChanged(relabelled, running, false);
    assert.deepEqual(events.fingerprints.of('n0'), withPod, 'labels alone keep the fingerprint');
    events.podChanged(relabelled, undefined, true);
    assert.deepEqual(events.fingerprints.of('n0'), empty, 'the pod gone, the node is as it was');
  });
});

describe('what other events make out of date', () => {
  it('any other kind: every explanation, everywhere; the storage kinds move the storage generation', () => {
    const { events } = log();
    const g = events.generation;
    const storage = events.storageGeneration;
    events.changed('PodDisruptionBudget');
    assert.equal(events.current({ generation: g, readsOtherPods: false }), false);
    assert.equal(events.followsNodeByNode(g), false);
    assert.equal(events.storageGeneration, storage, 'a PDB is not read by the storage view');
    for (const kind of [
      'Node',
      'PersistentVolume',
      'PersistentVolumeClaim',
      'CSIStorageCapacity',
      'StorageClass',
    ] as const)
      events.changed(kind);
    assert.equal(events.storageGeneration, storage + 5);
  });

  it('forgets, in an explanation kept per node, the nodes whose pods changed after it was computed', () => {
    const { events } = log();
    const running = pod('running', { nodeName: 'n0' });
    events.podChanged(
      next(running, (p) => (p.spec.nodeName = 'n1')),
      running,
      false,
    );
    const g = events.generation;
    const other = pod('other', { nodeName: 'n4' });
    events.podChanged(other, undefined, false);
    const forgotten: (string | undefined)[] = [];
    events.forgetChangedNodes({ forget: (n) => forgotten.push(n) }, g);
    assert.deepEqual(forgotten, ['n4']);
  });
});

describe('how far behind', () => {
  it('counts from the first change of more than labels after the explanation, by the log’s clock', () => {
    const { events, clock } = log();
    const running = pod('running', { nodeName: 'n0' });
    clock.now = 10;
    events.podChanged(
      next(running, (p) => (p.metadata.labels = { app: 'x' })),
      running,
      false,
    );
    const g = events.generation;
    clock.now = 20;
    events.changed('Node');
    clock.now = 35;
    events.changed('Node');
    clock.now = 50;
    assert.equal(events.behindMs(g), 30, 'since the first Node change at 20, not the relabel at 10');
  });
});
