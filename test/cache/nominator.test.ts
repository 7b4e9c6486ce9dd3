// The nominated-pod tracker, re-expressing upstream's nominator cases (scheduling_queue_test.go
// TestPriorityQueue_UpdateNominatedPodForNode, TestPriorityQueue_NominatedPodDeleted, nominator.go's update rule)
// through the store events that feed it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Nominator } from '../../src/cache/nominator.ts';
import { ClusterStore } from '../../src/cluster/store.ts';
import type { Pod, PriorityClass } from '../../src/cluster/types.ts';
import { makePod } from '../helpers/objects.ts';

let rv = 0;
function pending(name: string, nnn?: string, priority?: number): Pod {
  return makePod(name, { resourceVersion: `${++rv}`, priority, nominatedNodeName: nnn });
}

function withStatus(pod: Pod, patch: Partial<NonNullable<Pod['status']>>, spec: Partial<Pod['spec']> = {}): Pod {
  return {
    ...pod,
    metadata: { ...pod.metadata, resourceVersion: `${++rv}` },
    spec: { ...pod.spec, ...spec },
    status: { ...pod.status, ...patch },
  };
}

const names = (n: Nominator, node: string) => n.nominatedPodsForNode(node).map((p) => p.pod.metadata.name);

function tracked(...pods: Pod[]): { store: ClusterStore; nominator: Nominator; off: () => void } {
  const store = new ClusterStore();
  for (const p of pods) store.upsert('Pod', p);
  const nominator = new Nominator(store);
  return { store, nominator, off: nominator.attach(store) };
}

describe('Nominator', () => {
  it('UpdateNominatedPodForNode: a pending pod with status.nominatedNodeName is nominated there; a new node moves it', () => {
    const { store, nominator } = tracked();
    const med = pending('med', 'node1', 100);
    store.upsert('Pod', med);
    store.upsert('Pod', pending('high', 'node1', 1000));
    assert.deepEqual(names(nominator, 'node1'), ['med', 'high']);
    store.upsert('Pod', withStatus(med, { nominatedNodeName: 'node2' }));
    assert.deepEqual(names(nominator, 'node1'), ['high']);
    assert.deepEqual(names(nominator, 'node2'), ['med']);
    assert.equal(nominator.nodeOf('uid-med'), 'node2');
  });

  it('rebuilds nominations from status.nominatedNodeName on start (restart)', () => {
    const { nominator } = tracked(pending('a', 'node1', 5), pending('b'), pending('c', 'node2'));
    assert.deepEqual(names(nominator, 'node1'), ['a']);
    assert.deepEqual(names(nominator, 'node2'), ['c']);
    assert.equal(nominator.size, 2);
    assert.equal(nominator.nominatedPodsForNode('node1')[0]!.priority, 5);
  });

  it('keeps a nomination when an update has no nominatedNodeName in either the old or the new object', () => {
    const nominator = new Nominator();
    const p = pending('p');
    nominator.add(p, 'node1'); // nominated in memory before the status patch lands
    nominator.update(p, withStatus(p, { conditions: [{ type: 'PodScheduled', status: 'False' }] }));
    assert.equal(nominator.nodeOf('uid-p'), 'node1');
  });

  it('removes the nomination when the update clears nominatedNodeName', () => {
    const { store, nominator } = tracked();
    const p = pending('p', 'node1');
    store.upsert('Pod', p);
    store.upsert('Pod', withStatus(p, { nominatedNodeName: '' }));
    assert.deepEqual(names(nominator, 'node1'), []);
    assert.equal(nominator.size, 0);
  });

  it('NominatedPodDeleted: a deleted pod leaves the tracker', () => {
    const { store, nominator } = tracked(pending('p', 'node1'));
    store.delete('Pod', { metadata: { name: 'p', namespace: 'default' } });
    assert.deepEqual(nominator.entries(), []);
  });

  it('a pod that gets bound, or finishes, leaves the tracker', () => {
    const a = pending('a', 'node1');
    const b = pending('b', 'node1');
    const { store, nominator } = tracked(a, b);
    store.upsert('Pod', withStatus(a, {}, { nodeName: 'node1' }));
    store.upsert('Pod', withStatus(b, { phase: 'Failed' }));
    assert.equal(nominator.size, 0);
  });

  it('a pod without spec.priority takes its PriorityClass value (the PriorityClass watch is read here)', () => {
    const store = new ClusterStore();
    const pc: PriorityClass = { metadata: { name: 'gold', uid: 'pc-gold', resourceVersion: '1' }, value: 7000 };
    store.upsert('PriorityClass', pc);
    const nominator = new Nominator(store);
    nominator.attach(store);
    store.upsert('Pod', { ...pending('p', 'node1'), spec: { containers: [], priorityClassName: 'gold' } });
    assert.equal(nominator.nominatedPodsForNode('node1')[0]!.priority, 7000);
  });

  it('stops following the store once unsubscribed', () => {
    const { store, nominator, off } = tracked();
    off();
    store.upsert('Pod', pending('p', 'node1'));
    assert.equal(nominator.size, 0);
  });
});
