import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NodeInfoCache } from '../../src/cache/cache.ts';
import { Snapshot } from '../../src/cache/snapshot.ts';
import { makeNode, makePod } from '../helpers/objects.ts';

function zonedCache(): NodeInfoCache {
  const cache = new NodeInfoCache();
  cache.addNode(makeNode('a1', { zone: 'a' }));
  cache.addNode(makeNode('a2', { zone: 'a' }));
  cache.addNode(makeNode('b1', { zone: 'b' }));
  return cache;
}

const names = (s: Snapshot) => s.list().map((n) => n.name);

describe('snapshot', () => {
  it('lists the nodes in node tree order and carries the cache generation', () => {
    const cache = zonedCache();
    const s = cache.snapshot();
    assert.deepEqual(names(s), ['a1', 'b1', 'a2']);
    assert.equal(s.numNodes, 3);
    assert.equal(s.generation, cache.generation());
    assert.equal(s.get('a2'), s.list()[2]);
  });

  it('copies only the NodeInfos that changed since it was taken', () => {
    const cache = zonedCache();
    const s = cache.snapshot();
    const [a1, b1, a2] = s.list();
    cache.addPod(makePod('p', { nodeName: 'b1', requests: { cpu: '1' } }));
    cache.updateSnapshot(s);
    assert.equal(s.get('a1'), a1);
    assert.equal(s.get('a2'), a2);
    assert.notEqual(s.get('b1'), b1);
    assert.equal(s.get('b1')?.requested.milliCPU, 1000);
    assert.deepEqual(names(s), ['a1', 'b1', 'a2']);
    assert.equal(s.list()[1], s.get('b1'));
  });

  it('is not altered by later cache changes, nor are NodeInfos or lists handed out before an update', () => {
    const cache = zonedCache();
    const s = cache.snapshot();
    const before = s.get('a1')!;
    const list = s.list();
    cache.addPod(makePod('p', { nodeName: 'a1', requests: { cpu: '1' } }));
    assert.equal(s.get('a1')?.requested.milliCPU, 0);
    assert.equal(s.get('a1')?.pods.size, 0);
    cache.updateSnapshot(s);
    assert.equal(before.requested.milliCPU, 0);
    assert.equal(before.pods.size, 0);
    assert.equal(list[0], before);
    assert.equal(s.get('a1')?.requested.milliCPU, 1000);
  });

  it('is a no-op when nothing changed', () => {
    const cache = zonedCache();
    const s = cache.snapshot();
    const list = s.list();
    cache.updateSnapshot(s);
    assert.equal(s.list(), list);
  });

  it('drops deleted nodes and ghosts, and picks up added nodes in tree order', () => {
    const cache = zonedCache();
    cache.addPod(makePod('p', { nodeName: 'a2' }));
    const s = cache.snapshot();
    cache.removeNode(makeNode('a1'));
    cache.removeNode(makeNode('a2')); // a ghost: it still has pod p
    cache.addNode(makeNode('c1', { zone: 'c' }));
    cache.updateSnapshot(s);
    assert.deepEqual(names(s), ['b1', 'c1']);
    assert.equal(s.get('a1'), undefined);
    assert.equal(s.get('a2'), undefined);
    assert.equal(s.numNodes, 2);
  });

  it('follows a node moving to another zone', () => {
    const cache = zonedCache();
    const s = cache.snapshot();
    cache.updateNode(undefined, makeNode('a1', { zone: 'b' }));
    cache.updateSnapshot(s);
    assert.deepEqual(names(s), ['a2', 'b1', 'a1']);
  });

  it('catches up correctly when a node is deleted and another added between updates', () => {
    const cache = zonedCache();
    const s = cache.snapshot();
    cache.removeNode(makeNode('b1'));
    cache.addNode(makeNode('b2', { zone: 'b' }));
    cache.updateSnapshot(s);
    assert.deepEqual(names(s), ['a1', 'b2', 'a2']);
  });

  it('a node re-added under the same name gets a fresh generation and is copied again', () => {
    const cache = zonedCache();
    const s = cache.snapshot();
    cache.removeNode(makeNode('a1'));
    cache.updateSnapshot(s);
    cache.addNode(makeNode('a1', { zone: 'a', allocatable: { cpu: '1' } }));
    cache.updateSnapshot(s);
    assert.equal(s.get('a1')?.allocatable.milliCPU, 1000);
  });

  it('knows which claims pods on its nodes use, across updates', () => {
    const cache = zonedCache();
    const claim = (name: string) => [{ name: 'v', persistentVolumeClaim: { claimName: name } }];
    const p = makePod('p', { nodeName: 'a1', volumes: claim('c1') });
    cache.addPod(p);
    cache.addPod(makePod('q', { nodeName: 'b1', volumes: claim('c1') }));
    const s = cache.snapshot();
    assert.equal(s.isPVCUsedByPods('default/c1'), true);
    cache.removePod(p);
    cache.updateSnapshot(s);
    assert.equal(s.isPVCUsedByPods('default/c1'), true);
    cache.removeNode(makeNode('b1'));
    cache.updateSnapshot(s);
    assert.equal(s.isPVCUsedByPods('default/c1'), false);
  });

  it('can be built straight from objects, ignoring pods on unknown nodes', () => {
    const s = Snapshot.fromObjects(
      [makeNode('x1', { zone: 'x' }), makeNode('x2', { zone: 'x' }), makeNode('y1', { zone: 'y' })],
      [
        makePod('p', { nodeName: 'x2', requests: { cpu: '1' } }),
        makePod('lost', { nodeName: 'nowhere' }),
        makePod('pending'),
      ],
    );
    assert.deepEqual(names(s), ['x1', 'y1', 'x2']);
    assert.equal(s.get('x2')?.requested.milliCPU, 1000);
    assert.equal(s.get('nowhere'), undefined);
  });
});
