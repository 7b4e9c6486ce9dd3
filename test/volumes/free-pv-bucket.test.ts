// The topology buckets of free PVs keep them smallest first, so FindMatchingVolume's walk can start at the first PV
// large enough and stop at the first that passes; a node finds its buckets (and its CSIStorageCapacity buckets) once
// per labels object. These tests pin the order rules the walk depends on and when a node's buckets are found again.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PersistentVolume } from '../../src/cluster/types.ts';
import { PVAssumeCache } from '../../src/volumes/assume-cache.ts';
import { CapacityIndex } from '../../src/volumes/capacity-index.ts';
import { claimMatchInput } from '../../src/volumes/pv-matching.ts';
import { makeCSIStorageCapacity, makePV, makePVC } from '../helpers/objects.ts';

const HOST = 'kubernetes.io/hostname';
const onNode = (name: string, size: string): PersistentVolume =>
  makePV(name, { className: 'local', size, phase: 'Available', affinity: { [HOST]: ['a'] } });
const claim = (size: string) => claimMatchInput(makePVC('c', { namespace: 'ns', className: 'local', size }));
const labels = { [HOST]: 'a' };
const NONE = new Set<string>();

describe('free PV buckets', () => {
  it('the smallest PV that fits is chosen, whatever order the PVs arrived in', () => {
    const cache = new PVAssumeCache();
    for (const [name, size] of [
      ['big', '100Gi'],
      ['small', '10Gi'],
      ['mid', '50Gi'],
    ]) {
      cache.add(onNode(name, size));
    }
    assert.equal(cache.findMatchingVolume(claim('5Gi'), labels, NONE)?.metadata.name, 'small');
    assert.equal(cache.findMatchingVolume(claim('20Gi'), labels, NONE)?.metadata.name, 'mid');
    assert.equal(cache.findMatchingVolume(claim('60Gi'), labels, NONE)?.metadata.name, 'big');
    assert.equal(cache.findMatchingVolume(claim('200Gi'), labels, NONE), undefined);
  });

  it('among PVs of equal size the one indexed first is chosen; one chosen for another claim is passed over', () => {
    const cache = new PVAssumeCache();
    cache.add(onNode('first', '10Gi'));
    cache.add(onNode('second', '10Gi'));
    assert.equal(cache.findMatchingVolume(claim('10Gi'), labels, NONE)?.metadata.name, 'first');
    assert.equal(cache.findMatchingVolume(claim('10Gi'), labels, new Set(['first']))?.metadata.name, 'second');
  });

  it('a resized free PV is found at its new size (its place in the bucket moves with it)', () => {
    const cache = new PVAssumeCache();
    const pv = onNode('grown', '1Gi');
    cache.add(pv);
    cache.add(onNode('other', '3Gi'));
    cache.add({
      ...pv,
      metadata: { ...pv.metadata, resourceVersion: '2' },
      spec: { ...pv.spec, capacity: { storage: '2Gi' } },
    });
    assert.equal(cache.findMatchingVolume(claim('2Gi'), labels, NONE)?.metadata.name, 'grown');
    const shrunk = cache.entry('grown')!.latest;
    cache.add({
      ...shrunk,
      metadata: { ...shrunk.metadata, resourceVersion: '3' },
      spec: { ...shrunk.spec, capacity: { storage: '5Gi' } },
    });
    assert.equal(cache.findMatchingVolume(claim('2Gi'), labels, NONE)?.metadata.name, 'other');
    assert.equal(cache.findMatchingVolume(claim('4Gi'), labels, NONE)?.metadata.name, 'grown');
  });
});

describe("a node's buckets, found once per labels object", () => {
  it('a bucket made after the node was looked up is found (the first PV on the node)', () => {
    const cache = new PVAssumeCache();
    const node = { [HOST]: 'a' };
    cache.add(makePV('on-b', { className: 'local', size: '10Gi', phase: 'Available', affinity: { [HOST]: ['b'] } }));
    assert.equal(cache.findMatchingVolume(claim('1Gi'), node, NONE), undefined);
    cache.add(onNode('late', '10Gi'));
    assert.equal(cache.findMatchingVolume(claim('1Gi'), node, NONE)?.metadata.name, 'late');
  });

  it('an emptied bucket that fills again is found (the last free PV bound, another released)', () => {
    const cache = new PVAssumeCache();
    const node = { [HOST]: 'a' };
    const only = onNode('only', '10Gi');
    cache.add(only);
    assert.equal(cache.findMatchingVolume(claim('1Gi'), node, NONE)?.metadata.name, 'only');
    cache.assume({ ...only, spec: { ...only.spec, claimRef: { namespace: 'ns', name: 'other' } } });
    assert.equal(cache.findMatchingVolume(claim('1Gi'), node, NONE), undefined);
    cache.add(onNode('released', '20Gi'));
    assert.equal(cache.findMatchingVolume(claim('1Gi'), node, NONE)?.metadata.name, 'released');
    cache.restore('only');
    assert.equal(cache.findMatchingVolume(claim('1Gi'), node, NONE)?.metadata.name, 'only');
  });

  it('a node whose labels change reads the buckets of its new labels', () => {
    const cache = new PVAssumeCache();
    cache.add(onNode('on-a', '10Gi'));
    cache.add(makePV('on-b', { className: 'local', size: '10Gi', phase: 'Available', affinity: { [HOST]: ['b'] } }));
    assert.equal(cache.findMatchingVolume(claim('1Gi'), { [HOST]: 'a' }, NONE)?.metadata.name, 'on-a');
    assert.equal(cache.findMatchingVolume(claim('1Gi'), { [HOST]: 'b' }, NONE)?.metadata.name, 'on-b');
  });

  it('CSIStorageCapacity: a capacity republished for a node, or published after the node was looked up, is found', () => {
    const index = new CapacityIndex();
    const node = { [HOST]: 'a' };
    const find = () => index.find('lvm', node, (c) => c.capacity === '10Gi' || c.capacity === '20Gi', undefined);
    const published = (capacity: string) =>
      makeCSIStorageCapacity('lvm-a', { className: 'lvm', capacity, nodeTopology: { matchLabels: { [HOST]: 'a' } } });
    index.upsert(
      makeCSIStorageCapacity('lvm-b', {
        className: 'lvm',
        capacity: '10Gi',
        nodeTopology: { matchLabels: { [HOST]: 'b' } },
      }),
    );
    assert.equal(find(), undefined);
    index.upsert(published('10Gi'));
    assert.equal(find()?.capacity, '10Gi');
    index.upsert(published('20Gi'));
    assert.equal(find()?.capacity, '20Gi');
    index.delete(published('20Gi'));
    assert.equal(find(), undefined);
    index.upsert(published('10Gi'));
    assert.equal(find()?.capacity, '10Gi');
  });
});

describe("a node's dense row of free PVs (by ordinal)", () => {
  const find = (cache: PVAssumeCache, size: string, node = labels, excluded: ReadonlySet<string> = NONE) =>
    cache.findMatchingVolume(claim(size), node, excluded, 0)?.metadata.name;

  it('follows its bucket: a PV bound, restored, released, resized, and one chosen for another claim', () => {
    const cache = new PVAssumeCache();
    const only = onNode('only', '10Gi');
    cache.add(only);
    assert.equal(find(cache, '1Gi'), 'only');
    cache.assume({ ...only, spec: { ...only.spec, claimRef: { namespace: 'ns', name: 'other' } } });
    assert.equal(find(cache, '1Gi'), undefined);
    cache.add(onNode('released', '20Gi'));
    assert.equal(find(cache, '1Gi'), 'released');
    cache.restore('only');
    assert.equal(find(cache, '1Gi'), 'only');
    assert.equal(find(cache, '1Gi', labels, new Set(['only'])), 'released');
    const latest = cache.entry('only')!.latest;
    cache.add({
      ...latest,
      metadata: { ...latest.metadata, resourceVersion: '2' },
      spec: { ...latest.spec, capacity: { storage: '30Gi' } },
    });
    assert.equal(find(cache, '1Gi'), 'released');
    assert.equal(find(cache, '25Gi'), 'only');
  });

  it('a PV changed in place (same size and buckets) is offered as it is now', () => {
    const cache = new PVAssumeCache();
    const pv = onNode('pv', '10Gi');
    cache.add(pv);
    assert.equal(find(cache, '1Gi'), 'pv');
    cache.add({ ...pv, metadata: { ...pv.metadata, resourceVersion: '2' }, spec: { ...pv.spec, volumeMode: 'Block' } });
    assert.equal(find(cache, '1Gi'), undefined);
  });

  it('a PV any node may take (no indexable affinity) reaches rows built before it came', () => {
    const cache = new PVAssumeCache();
    cache.add(onNode('big', '50Gi'));
    assert.equal(find(cache, '1Gi'), 'big');
    cache.add(makePV('anywhere', { className: 'local', size: '5Gi', phase: 'Available' }));
    assert.equal(find(cache, '1Gi'), 'anywhere');
  });

  it('a row is rebuilt for another labels object under the same ordinal (another node, or new labels)', () => {
    const cache = new PVAssumeCache();
    cache.add(onNode('on-a', '10Gi'));
    cache.add(makePV('on-b', { className: 'local', size: '10Gi', phase: 'Available', affinity: { [HOST]: ['b'] } }));
    assert.equal(find(cache, '1Gi', { [HOST]: 'a' }), 'on-a');
    assert.equal(find(cache, '1Gi', { [HOST]: 'b' }), 'on-b');
  });

  it('among PVs of equal size the walk takes the one of the bucket it reads first: so does the row', () => {
    const cache = new PVAssumeCache();
    const ZONE = 'topology.kubernetes.io/zone';
    const at = (name: string, key: string, value: string) =>
      makePV(name, { className: 'local', size: '10Gi', phase: 'Available', affinity: { [key]: [value] } });
    cache.add(at('elsewhere', HOST, 'b')); // the hostname buckets come first in every node's bucket order
    cache.add(at('zonal', ZONE, 'z'));
    cache.add(at('local', HOST, 'a'));
    const node = { [HOST]: 'a', [ZONE]: 'z' };
    assert.equal(cache.findMatchingVolume(claim('1Gi'), node, NONE)?.metadata.name, 'local');
    assert.equal(find(cache, '1Gi', node), 'local');
  });

  it('a node with more free PVs than a row holds is still matched (by the walk), smallest first', () => {
    const cache = new PVAssumeCache();
    for (let i = 100; i > 0; i--) cache.add(onNode(`pv-${i}`, `${i}Gi`));
    assert.equal(find(cache, '42Gi'), 'pv-42');
  });
});
