// volumebinding/assume_cache_test.go (PV and PVC assume caches), plus the indexes this project adds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/cluster/types.ts';
import { PVAssumeCache, PVCAssumeCache } from '../../src/volumes/assume-cache.ts';
import { claimMatchInput } from '../../src/volumes/pv-matching.ts';
import * as build from '../helpers/objects.ts';

// Upstream's makePV and makeClaim: the uid is the name.
const makePV = (name: string, className: string, version: string): PersistentVolume =>
  build.makePV(name, { uid: name, className, resourceVersion: version });
const makeClaim = (name: string, version: string, namespace: string): PersistentVolumeClaim =>
  build.makePVC(name, { uid: name, namespace, resourceVersion: version });

function assertListPVs(cache: PVAssumeCache, expected: Map<string, PersistentVolume>, className: string): void {
  const list = [...cache.listByClass(className)];
  assert.equal(list.length, expected.size);
  for (const pv of list) assert.equal(pv, expected.get(pv.metadata.name), `ListPVs() returned ${pv.metadata.name}`);
}

describe('TestAssumePV', () => {
  const scenarios: Record<string, { oldPV: PersistentVolume; newPV: PersistentVolume; shouldSucceed: boolean }> = {
    'success-same-version': { oldPV: makePV('pv1', '', '5'), newPV: makePV('pv1', '', '5'), shouldSucceed: true },
    'success-storageclass-same-version': {
      oldPV: makePV('pv1', 'class1', '5'),
      newPV: makePV('pv1', 'class1', '5'),
      shouldSucceed: true,
    },
    'success-new-higher-version': { oldPV: makePV('pv1', '', '5'), newPV: makePV('pv1', '', '6'), shouldSucceed: true },
    'fail-old-not-found': { oldPV: makePV('pv2', '', '5'), newPV: makePV('pv1', '', '5'), shouldSucceed: false },
    'fail-new-lower-version': { oldPV: makePV('pv1', '', '5'), newPV: makePV('pv1', '', '4'), shouldSucceed: false },
    'fail-new-bad-version': { oldPV: makePV('pv1', '', '5'), newPV: makePV('pv1', '', 'a'), shouldSucceed: false },
    'fail-old-bad-version': { oldPV: makePV('pv1', '', 'a'), newPV: makePV('pv1', '', '5'), shouldSucceed: false },
  };
  for (const [name, s] of Object.entries(scenarios)) {
    it(name, () => {
      const cache = new PVAssumeCache();
      cache.add(s.oldPV);
      assert.equal(cache.get(s.oldPV.metadata.name), s.oldPV);
      if (s.shouldSucceed) cache.assume(s.newPV);
      else assert.throws(() => cache.assume(s.newPV));
      assert.equal(cache.get(s.oldPV.metadata.name), s.shouldSucceed ? s.newPV : s.oldPV);
    });
  }

  it('error texts name the type, the key and both versions', () => {
    const cache = new PVAssumeCache();
    cache.add(makePV('pv1', '', '5'));
    assert.throws(() => cache.assume(makePV('pv1', '', '4')), {
      message: 'v1.PersistentVolume "pv1" is out of sync (stored: 5, assume: 4)',
    });
    assert.throws(() => cache.assume(makePV('pv9', '', '4')), { message: 'could not find v1.PersistentVolume "pv9"' });
  });
});

it('TestRestorePV', () => {
  const cache = new PVAssumeCache();
  const oldPV = makePV('pv1', '', '5');
  const newPV = makePV('pv1', '', '5');
  cache.restore('nothing');
  cache.add(oldPV);
  cache.restore('pv1');
  assert.equal(cache.get('pv1'), oldPV);
  cache.assume(newPV);
  assert.equal(cache.get('pv1'), newPV);
  cache.restore('pv1');
  assert.equal(cache.get('pv1'), oldPV);
});

it('TestBasicPVCache', () => {
  const cache = new PVAssumeCache();
  assert.equal(cache.get('nothere'), undefined);
  const pvs = new Map<string, PersistentVolume>();
  for (let i = 0; i < 10; i++) {
    const pv = makePV(`test-pv${i}`, '', '1');
    pvs.set(pv.metadata.name, pv);
    cache.add(pv);
  }
  assertListPVs(cache, pvs, '');
  const updated = makePV('test-pv3', '', '2');
  pvs.set('test-pv3', updated);
  cache.add(updated);
  assertListPVs(cache, pvs, '');
  cache.delete(pvs.get('test-pv7')!);
  pvs.delete('test-pv7');
  assertListPVs(cache, pvs, '');
});

it('TestPVCacheWithStorageClasses', () => {
  const cache = new PVAssumeCache();
  const pvs1 = new Map<string, PersistentVolume>();
  const pvs2 = new Map<string, PersistentVolume>();
  for (let i = 0; i < 10; i++) {
    const a = makePV(`test-pv${i}`, 'class1', '1');
    const b = makePV(`test2-pv${i}`, 'class2', '1');
    pvs1.set(a.metadata.name, a);
    pvs2.set(b.metadata.name, b);
    cache.add(a);
    cache.add(b);
  }
  assertListPVs(cache, pvs1, 'class1');
  assertListPVs(cache, pvs2, 'class2');
  const updated = makePV('test-pv3', 'class1', '2');
  pvs1.set('test-pv3', updated);
  cache.add(updated);
  assertListPVs(cache, pvs1, 'class1');
  assertListPVs(cache, pvs2, 'class2');
  cache.delete(pvs1.get('test-pv7')!);
  pvs1.delete('test-pv7');
  assertListPVs(cache, pvs1, 'class1');
  assertListPVs(cache, pvs2, 'class2');
});

it('TestAssumeUpdatePVCache', () => {
  const cache = new PVAssumeCache();
  const pv = makePV('test-pv0', '', '1');
  cache.add(pv);
  const newPV: PersistentVolume = { ...pv, spec: { ...pv.spec, claimRef: { name: 'test-claim' } } };
  cache.assume(newPV);
  assert.equal(cache.get('test-pv0'), newPV);
  // A resync of the old object cannot clobber the assumption.
  cache.add(pv);
  assert.equal(cache.get('test-pv0'), newPV);
});

describe('TestAssumePVC', () => {
  const scenarios: Record<
    string,
    { oldPVC: PersistentVolumeClaim; newPVC: PersistentVolumeClaim; shouldSucceed: boolean }
  > = {
    'success-same-version': {
      oldPVC: makeClaim('pvc1', '5', 'ns1'),
      newPVC: makeClaim('pvc1', '5', 'ns1'),
      shouldSucceed: true,
    },
    'success-new-higher-version': {
      oldPVC: makeClaim('pvc1', '5', 'ns1'),
      newPVC: makeClaim('pvc1', '6', 'ns1'),
      shouldSucceed: true,
    },
    'fail-old-not-found': {
      oldPVC: makeClaim('pvc2', '5', 'ns1'),
      newPVC: makeClaim('pvc1', '5', 'ns1'),
      shouldSucceed: false,
    },
    'fail-new-lower-version': {
      oldPVC: makeClaim('pvc1', '5', 'ns1'),
      newPVC: makeClaim('pvc1', '4', 'ns1'),
      shouldSucceed: false,
    },
    'fail-new-bad-version': {
      oldPVC: makeClaim('pvc1', '5', 'ns1'),
      newPVC: makeClaim('pvc1', 'a', 'ns1'),
      shouldSucceed: false,
    },
    'fail-old-bad-version': {
      oldPVC: makeClaim('pvc1', 'a', 'ns1'),
      newPVC: makeClaim('pvc1', '5', 'ns1'),
      shouldSucceed: false,
    },
  };
  for (const [name, s] of Object.entries(scenarios)) {
    it(name, () => {
      const cache = new PVCAssumeCache();
      cache.add(s.oldPVC);
      const key = `ns1/${s.oldPVC.metadata.name}`;
      assert.equal(cache.get(key), s.oldPVC);
      if (s.shouldSucceed) cache.assume(s.newPVC);
      else assert.throws(() => cache.assume(s.newPVC));
      assert.equal(cache.get(key), s.shouldSucceed ? s.newPVC : s.oldPVC);
    });
  }
});

it('TestRestorePVC', () => {
  const cache = new PVCAssumeCache();
  const oldPVC = makeClaim('pvc1', '5', 'ns1');
  const newPVC = makeClaim('pvc1', '5', 'ns1');
  cache.restore('nothing');
  cache.add(oldPVC);
  cache.restore('ns1/pvc1');
  assert.equal(cache.get('ns1/pvc1'), oldPVC);
  cache.assume(newPVC);
  assert.equal(cache.get('ns1/pvc1'), newPVC);
  cache.restore('ns1/pvc1');
  assert.equal(cache.get('ns1/pvc1'), oldPVC);
});

it('TestAssumeUpdatePVCCache', () => {
  const cache = new PVCAssumeCache();
  const pvc = makeClaim('test-pvc0', '1', 'test-ns');
  cache.add(pvc);
  const newPVC = structuredClone(pvc);
  newPVC.metadata.annotations = { 'volume.kubernetes.io/selected-node': 'test-node' };
  cache.assume(newPVC);
  assert.equal(cache.get('test-ns/test-pvc0'), newPVC);
  cache.add(pvc);
  assert.equal(cache.get('test-ns/test-pvc0'), newPVC);
});

describe('PV indexes (node topology, pre-bound claims)', () => {
  const local = (name: string, node: string, className = 'local'): PersistentVolume => ({
    metadata: { name, uid: name, resourceVersion: '1' },
    spec: {
      storageClassName: className,
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] },
          ],
        },
      },
    },
    status: { phase: 'Available' },
  });
  const names = (it: Iterable<PersistentVolume>) => [...new Set([...it].map((pv) => pv.metadata.name))].sort();

  it('a node sees only the PVs whose affinity can hold there, plus those without an indexable affinity', () => {
    const cache = new PVAssumeCache();
    cache.add(local('a1', 'a'));
    cache.add(local('a2', 'a'));
    cache.add(local('b1', 'b'));
    cache.add({
      metadata: { name: 'net', uid: 'net', resourceVersion: '1' },
      spec: { storageClassName: 'local' },
      status: { phase: 'Available' },
    });
    const notIn: PersistentVolume = {
      metadata: { name: 'not-b', uid: 'not-b', resourceVersion: '1' },
      spec: {
        storageClassName: 'local',
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'NotIn', values: ['b'] }] },
            ],
          },
        },
      },
      status: { phase: 'Available' },
    };
    cache.add(notIn);
    assert.deepEqual(names(cache.candidates('local', { 'kubernetes.io/hostname': 'a' })), ['a1', 'a2', 'net', 'not-b']);
    assert.deepEqual(names(cache.candidates('local', { 'kubernetes.io/hostname': 'b' })), ['b1', 'net', 'not-b']);
    assert.deepEqual(names(cache.candidates('other', { 'kubernetes.io/hostname': 'a' })), []);
  });

  it('hostname label values are not node names: the index keys on the label the affinity names', () => {
    const cache = new PVAssumeCache();
    cache.add(local('pv', 'host-1'));
    assert.deepEqual(names(cache.candidates('local', { 'kubernetes.io/hostname': 'host-1' })), ['pv']);
    assert.deepEqual(names(cache.candidates('local', { 'kubernetes.io/hostname': 'node-1' })), []);
  });

  it('indexes follow assumptions, updates and deletes', () => {
    const cache = new PVAssumeCache();
    const pv = local('a1', 'a');
    cache.add(pv);
    cache.assume({ ...pv, spec: { ...pv.spec, claimRef: { name: 'c', namespace: 'ns' } } });
    assert.deepEqual(names(cache.candidates('local', {}, 'ns/c')), ['a1']);
    cache.restore('a1');
    assert.deepEqual(names(cache.candidates('local', {}, 'ns/c')), []);
    cache.add({ ...local('a1', 'b'), metadata: { ...pv.metadata, resourceVersion: '2' } });
    assert.deepEqual(names(cache.candidates('local', { 'kubernetes.io/hostname': 'a' })), []);
    assert.deepEqual(names(cache.candidates('local', { 'kubernetes.io/hostname': 'b' })), ['a1']);
    cache.delete(pv);
    assert.deepEqual(names(cache.candidates('local', { 'kubernetes.io/hostname': 'b' })), []);
    assert.equal(cache.classSize('local'), 0);
  });

  it('a PV whose terms name the same label value twice is in that bucket once, and a resize moves it whole', () => {
    // Multi-segment CSI topologies write one term per segment: two terms sharing the zone are common.
    const zone = 'topology.kubernetes.io/zone';
    const term = (rack: string) => ({
      matchExpressions: [
        { key: zone, operator: 'In', values: ['a'] },
        { key: 'rack', operator: 'In', values: [rack] },
      ],
    });
    const pv = build.makePV('pv', { uid: 'pv', className: 'local', size: '2Gi', phase: 'Available' });
    pv.spec.nodeAffinity = { required: { nodeSelectorTerms: [term('1'), term('2')] } };
    const cache = new PVAssumeCache();
    cache.add(pv);
    const node = { [zone]: 'a', rack: '1' };
    assert.deepEqual(
      [...cache.candidates('local', node)].map((v) => v.metadata.name),
      ['pv'],
      'offered once',
    );
    const claim = (size: string) =>
      claimMatchInput(build.makePVC('c', { uid: 'c', namespace: 'ns', className: 'local', size }));
    const row = 1; // a node's row built before the resize must follow it too
    assert.equal(cache.findMatchingVolume(claim('2Gi'), node, new Set(), row), cache.get('pv'));
    cache.add({
      ...pv,
      metadata: { ...pv.metadata, resourceVersion: '2' },
      spec: { ...pv.spec, capacity: { storage: '1Gi' } },
    });
    assert.equal(cache.findMatchingVolume(claim('2Gi'), node, new Set()), undefined, 'too small now');
    assert.equal(cache.findMatchingVolume(claim('2Gi'), node, new Set(), row), undefined, 'too small now, by the row');
    assert.equal(cache.findMatchingVolume(claim('1Gi'), node, new Set()), cache.get('pv'));
  });

  describe('free PVs only in the topology buckets', () => {
    const host = (h: string) => ({ 'kubernetes.io/hostname': h });
    const withRV = (pv: PersistentVolume, rv: string, spec: Partial<PersistentVolume['spec']>, phase?: string) => ({
      ...pv,
      metadata: { ...pv.metadata, resourceVersion: rv },
      spec: { ...pv.spec, ...spec },
      status: { phase: phase ?? pv.status?.phase },
    });

    it('a PV bound by the PV controller leaves the buckets; released and made Available again it comes back', () => {
      const cache = new PVAssumeCache();
      const pv = local('a1', 'a');
      cache.add(pv);
      assert.equal(cache.offeredSize('local'), 1);
      cache.add(withRV(pv, '2', { claimRef: { name: 'c', namespace: 'ns', uid: 'u' } }, 'Bound'));
      assert.equal(cache.offeredSize('local'), 0);
      assert.deepEqual(names(cache.candidates('local', host('a'))), []);
      assert.deepEqual(names(cache.candidates('local', host('a'), 'ns/other')), []);
      // Its own claim still finds it (through the by-claim index).
      assert.deepEqual(names(cache.candidates('local', host('a'), 'ns/c')), ['a1']);
      // Released keeps the claimRef: still only for its claim.
      cache.add(withRV(pv, '3', { claimRef: { name: 'c', namespace: 'ns', uid: 'u' } }, 'Released'));
      assert.equal(cache.offeredSize('local'), 0);
      assert.deepEqual(names(cache.candidates('local', host('a'), 'ns/c')), ['a1']);
      // The claimRef cleared but not yet Available: upstream skips it, so it stays out.
      cache.add(withRV(pv, '4', { claimRef: undefined }, 'Released'));
      assert.equal(cache.offeredSize('local'), 0);
      assert.deepEqual(names(cache.candidates('local', host('a'), 'ns/c')), []);
      cache.add(withRV(pv, '5', { claimRef: undefined }, 'Available'));
      assert.equal(cache.offeredSize('local'), 1);
      assert.deepEqual(names(cache.candidates('local', host('a'))), ['a1']);
      assert.deepEqual(names(cache.candidates('local', host('b'))), []);
      assert.equal(cache.classSize('local'), 1);
    });

    it('an assumed PV leaves the buckets and a restored one comes back', () => {
      const cache = new PVAssumeCache();
      const pv = local('a1', 'a');
      cache.add(pv);
      cache.add(local('a2', 'a'));
      cache.assume({ ...pv, spec: { ...pv.spec, claimRef: { name: 'c', namespace: 'ns', uid: 'u' } } });
      assert.equal(cache.offeredSize('local'), 1);
      assert.deepEqual(names(cache.candidates('local', host('a'))), ['a2']);
      assert.deepEqual(names(cache.candidates('local', host('a'), 'ns/c')), ['a1', 'a2']);
      // ListPVs still lists both.
      assert.equal(cache.classSize('local'), 2);
      cache.restore('a1');
      assert.equal(cache.offeredSize('local'), 2);
      assert.deepEqual(names(cache.candidates('local', host('a'))), ['a1', 'a2']);
      assert.deepEqual(names(cache.candidates('local', host('a'), 'ns/c')), ['a1', 'a2']);
    });

    it('unbound PVs that are not Available, or being deleted, are not offered', () => {
      const cache = new PVAssumeCache();
      const pv = local('a1', 'a');
      cache.add({ ...pv, status: { phase: 'Pending' } });
      cache.add({ ...local('a2', 'a'), status: { phase: 'Failed' } });
      cache.add({ ...local('a3', 'a'), status: undefined });
      const deleting = local('a4', 'a');
      cache.add({ ...deleting, metadata: { ...deleting.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } });
      assert.equal(cache.offeredSize('local'), 0);
      assert.equal(cache.classSize('local'), 4);
      assert.deepEqual(names(cache.candidates('local', host('a'))), []);
      cache.add(withRV(pv, '2', {}, 'Available'));
      assert.deepEqual(names(cache.candidates('local', host('a'))), ['a1']);
    });

    it('a claimRef without a name is in no index but ListPVs', () => {
      const cache = new PVAssumeCache();
      cache.add({ ...local('a1', 'a'), spec: { ...local('a1', 'a').spec, claimRef: { name: '', namespace: 'ns' } } });
      assert.equal(cache.offeredSize('local'), 0);
      assert.deepEqual(names(cache.candidates('local', host('a'), 'ns/c')), []);
      assert.equal(cache.classSize('local'), 1);
    });
  });
});
