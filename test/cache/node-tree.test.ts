import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NodeTree, zoneKey } from '../../src/cache/node-tree.ts';
import { makeNode } from '../helpers/objects.ts';

function tree(...nodes: ReturnType<typeof makeNode>[]): NodeTree {
  const t = new NodeTree();
  for (const n of nodes) t.addNode(n);
  return t;
}

describe('zone key', () => {
  it('joins region and zone with a NUL-guarded separator', () => {
    assert.equal(zoneKey(makeNode('n', { region: 'r1', zone: 'z1' })), 'r1:\x00:z1');
  });

  it('is empty for a node without region and zone labels', () => {
    assert.equal(zoneKey(makeNode('n')), '');
    assert.equal(zoneKey({ metadata: { name: 'n', uid: 'u', resourceVersion: '1' } }), '');
  });

  it('falls back to the failure-domain beta labels only when the GA label is absent', () => {
    const beta = { 'failure-domain.beta.kubernetes.io/region': 'br', 'failure-domain.beta.kubernetes.io/zone': 'bz' };
    assert.equal(zoneKey(makeNode('n', { labels: beta })), 'br:\x00:bz');
    assert.equal(zoneKey(makeNode('n', { labels: beta, zone: 'gz' })), 'br:\x00:gz');
    assert.equal(zoneKey(makeNode('n', { labels: beta, zone: '', region: '' })), '');
  });
});

describe('node tree', () => {
  it('lists the first node of every zone, then the second, and so on', () => {
    const t = tree(
      makeNode('a1', { zone: 'a' }),
      makeNode('a2', { zone: 'a' }),
      makeNode('a3', { zone: 'a' }),
      makeNode('b1', { zone: 'b' }),
      makeNode('c1', { zone: 'c' }),
      makeNode('c2', { zone: 'c' }),
    );
    assert.deepEqual(t.list(), ['a1', 'b1', 'c1', 'a2', 'c2', 'a3']);
    assert.equal(t.numNodes, 6);
  });

  it('ignores adding a node already filed under the same zone', () => {
    const t = tree(makeNode('a1', { zone: 'a' }), makeNode('a1', { zone: 'a' }));
    assert.deepEqual(t.list(), ['a1']);
    assert.equal(t.numNodes, 1);
  });

  it('moves a node whose zone label changed to the end of its new zone', () => {
    const t = tree(makeNode('a1', { zone: 'a' }), makeNode('a2', { zone: 'a' }), makeNode('b1', { zone: 'b' }));
    t.updateNode(makeNode('a1', { zone: 'b' }));
    assert.deepEqual(t.list(), ['a2', 'b1', 'a1']);
  });

  it('drops an emptied zone, and a refilled zone comes after the existing ones', () => {
    const t = tree(makeNode('a1', { zone: 'a' }), makeNode('b1', { zone: 'b' }), makeNode('b2', { zone: 'b' }));
    assert.equal(t.removeNode('a1'), true);
    t.addNode(makeNode('a9', { zone: 'a' }));
    assert.deepEqual(t.list(), ['b1', 'a9', 'b2']);
  });

  it('reports removing an unknown node', () => {
    assert.equal(new NodeTree().removeNode('ghost'), false);
  });

  it('changes version on membership or zone changes only', () => {
    const t = tree(makeNode('a1', { zone: 'a' }));
    const v = t.version;
    t.updateNode(makeNode('a1', { zone: 'a', labels: { other: 'label' } }));
    assert.equal(t.version, v);
    t.updateNode(makeNode('a1', { zone: 'b' }));
    assert.notEqual(t.version, v);
  });
});
