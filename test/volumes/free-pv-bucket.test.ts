// The topology buckets of free PVs keep them smallest first, so FindMatchingVolume's walk can start at the first PV
// large enough and stop at the first that passes. These tests pin the order rules the walk depends on.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PersistentVolume } from '../../src/cluster/types.ts';
import { PVAssumeCache } from '../../src/volumes/assume-cache.ts';
import { claimMatchInput } from '../../src/volumes/pv-matching.ts';
import { makePV, makePVC } from '../helpers/objects.ts';

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
