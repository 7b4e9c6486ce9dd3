// Property: matching a claim through the PV indexes (class → node topology, plus pre-bound claims) decides exactly
// as upstream's FindMatchingVolume over every PV of the class: same verdict, same capacity, and a pre-bound PV wins.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import type { NodeSelectorTerm, PersistentVolume, PersistentVolumeClaim } from '../../src/cluster/types.ts';
import { PVAssumeCache } from '../../src/volumes/assume-cache.ts';
import { claimMatchInput, findMatchingVolume, pvCapacity } from '../../src/volumes/pv-matching.ts';

const KEYS = ['kubernetes.io/hostname', 'topology.kubernetes.io/zone', 'rack'];
const VALUES = ['a', 'b', 'c'];

const requirement = fc.record({
  key: fc.constantFrom(...KEYS),
  operator: fc.constantFrom('In', 'In', 'In', 'NotIn', 'Exists', 'DoesNotExist'),
  values: fc.subarray(VALUES, { minLength: 1 }),
});
const term: fc.Arbitrary<NodeSelectorTerm> = fc.array(requirement, { minLength: 0, maxLength: 3 }).map((reqs) => ({
  matchExpressions: reqs.map((r) =>
    r.operator === 'Exists' || r.operator === 'DoesNotExist' ? { key: r.key, operator: r.operator } : r,
  ),
}));

const pvArb = fc.record({
  cls: fc.constantFrom('x', 'y'),
  size: fc.integer({ min: 1, max: 6 }),
  terms: fc.option(fc.array(term, { minLength: 0, maxLength: 3 }), { nil: undefined }),
  claimRef: fc.constantFrom(undefined, undefined, undefined, 'mine', 'other'),
  available: fc.boolean(),
});

it('index-backed matching decides as a scan of the whole class does', () => {
  fc.assert(
    fc.property(
      fc.array(pvArb, { maxLength: 25 }),
      fc.record({ cls: fc.constantFrom('x', 'y'), size: fc.integer({ min: 1, max: 6 }) }),
      fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES)),
      (specs, want, labels) => {
        const cache = new PVAssumeCache();
        // Two PVs pre-bound to one claim make upstream's answer depend on its (random) list order: keep one.
        const firstMine = specs.findIndex((s) => s.claimRef === 'mine');
        for (const [i, s] of specs.entries()) if (s.claimRef === 'mine' && i !== firstMine) s.claimRef = undefined;
        const pvs: PersistentVolume[] = specs.map((s, i) => ({
          metadata: { name: `pv-${i}`, uid: `pv-${i}`, resourceVersion: '1' },
          spec: {
            storageClassName: s.cls,
            capacity: { storage: `${s.size}Gi` },
            ...(s.terms ? { nodeAffinity: { required: { nodeSelectorTerms: s.terms } } } : {}),
            ...(s.claimRef ? { claimRef: { name: s.claimRef, namespace: 'ns' } } : {}),
          },
          status: { phase: s.available ? 'Available' : 'Released' },
        }));
        for (const pv of pvs) cache.add(pv);
        const claim: PersistentVolumeClaim = {
          metadata: { name: 'mine', namespace: 'ns', uid: 'u', resourceVersion: '1' },
          spec: { storageClassName: want.cls, resources: { requests: { storage: `${want.size}Gi` } } },
        };
        const input = claimMatchInput(claim);
        const scan = findMatchingVolume(input, [...cache.listByClass(want.cls)], labels, new Set());
        const indexed = findMatchingVolume(input, cache.candidates(want.cls, labels, 'ns/mine'), labels, new Set());
        assert.equal(indexed === undefined, scan === undefined);
        if (!scan || !indexed) return;
        assert.equal(pvCapacity(indexed), pvCapacity(scan));
        assert.equal(indexed.spec.claimRef?.name, scan.spec.claimRef?.name);
      },
    ),
    { numRuns: 500 },
  );
});
