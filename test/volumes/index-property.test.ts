// Property: matching a claim through the PV indexes (class → node topology of the free PVs, plus pre-bound claims)
// decides exactly as upstream's FindMatchingVolume over every PV of the class: same verdict, same capacity, and a
// pre-bound PV wins; also after PVs are bound, released, assumed and restored in any order.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import type {
  NodeSelectorTerm,
  ObjectReference,
  PersistentVolume,
  PersistentVolumeClaim,
} from '../../src/cluster/types.ts';
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
        const direct = cache.findMatchingVolume(input, labels, new Set());
        for (const found of [indexed, direct]) {
          assert.equal(found === undefined, scan === undefined);
          if (!scan || !found) continue;
          assert.equal(pvCapacity(found), pvCapacity(scan));
          assert.equal(found.spec.claimRef?.name, scan.spec.claimRef?.name);
        }
      },
    ),
    { numRuns: 500 },
  );
});

// Claim references a PV can carry: this claim (uid matching or absent), this claim's name with another uid (an old
// claim of the same name: skipped), another claim, a reference without a name.
const REFS: Record<string, ObjectReference | undefined> = {
  none: undefined,
  mine: { name: 'mine', namespace: 'ns', uid: 'u' },
  mineNoUID: { name: 'mine', namespace: 'ns' },
  mineStale: { name: 'mine', namespace: 'ns', uid: 'old' },
  other: { name: 'other', namespace: 'ns', uid: 'o' },
  otherNamespace: { name: 'mine', namespace: 'elsewhere', uid: 'u' },
  nameless: { name: '', namespace: 'ns' },
};
const refArb = fc.constantFrom(...Object.keys(REFS));
const phaseArb = fc.constantFrom('Available', 'Available', 'Bound', 'Released', 'Pending', 'Failed', undefined);

const richPVArb = fc.record({
  cls: fc.constantFrom('x', 'y'),
  size: fc.integer({ min: 1, max: 6 }),
  terms: fc.option(fc.array(term, { minLength: 0, maxLength: 3 }), { nil: undefined }),
  ref: refArb,
  phase: phaseArb,
  deleting: fc.boolean(),
});

const opArb = fc.oneof(
  // reserve: bindVolumeToClaim's result, in the cache only
  fc.record({ op: fc.constant('assume' as const), pv: fc.nat(), ref: fc.constantFrom('mine', 'other') }),
  fc.record({ op: fc.constant('restore' as const), pv: fc.nat() }),
  // informer update: the PV controller bound, released or recycled it
  fc.record({ op: fc.constant('update' as const), pv: fc.nat(), ref: refArb, phase: phaseArb }),
  // informer update: the volume was expanded (or its object rewritten with another size)
  fc.record({ op: fc.constant('resize' as const), pv: fc.nat(), size: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ op: fc.constant('delete' as const), pv: fc.nat() }),
);

/** Bound to `mine` as upstream's IsVolumeBoundToClaim sees it. */
const boundToMine = (pv: PersistentVolume | undefined) => {
  const ref = pv?.spec.claimRef;
  return !!ref && ref.name === 'mine' && ref.namespace === 'ns' && (!ref.uid || ref.uid === 'u');
};

it('index-backed matching decides as a whole-class scan after binds, releases, assumptions and restores', () => {
  fc.assert(
    fc.property(
      fc.array(richPVArb, { maxLength: 20 }),
      fc.array(opArb, { maxLength: 30 }),
      fc.record({ cls: fc.constantFrom('x', 'y'), size: fc.integer({ min: 1, max: 6 }) }),
      fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES)),
      fc.array(fc.nat(), { maxLength: 3 }),
      (specs, ops, want, labels, excludedIdx) => {
        const cache = new PVAssumeCache();
        const rv = new Map<string, number>();
        // Two PVs pre-bound to one claim make upstream's answer depend on its (random) list order: never more than one.
        const mineCount = () => [...cache.values()].filter((e) => boundToMine(e.latest)).length;
        const names: string[] = [];
        for (const [i, s] of specs.entries()) {
          const name = `pv-${i}`;
          names.push(name);
          let ref = REFS[s.ref];
          if (boundToMine({ spec: { claimRef: ref } } as PersistentVolume) && mineCount() > 0) ref = undefined;
          rv.set(name, 1);
          cache.add({
            metadata: {
              name,
              uid: name,
              resourceVersion: '1',
              ...(s.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
            },
            spec: {
              storageClassName: s.cls,
              capacity: { storage: `${s.size}Gi` },
              ...(s.terms ? { nodeAffinity: { required: { nodeSelectorTerms: s.terms } } } : {}),
              ...(ref ? { claimRef: ref } : {}),
            },
            status: s.phase === undefined ? {} : { phase: s.phase },
          });
        }
        // Rows built now, for this node and another, must follow every change below.
        const early = claimMatchInput({
          metadata: { name: 'early', namespace: 'ns', uid: 'e', resourceVersion: '1' },
          spec: { storageClassName: want.cls, resources: { requests: { storage: '1Gi' } } },
        });
        cache.findMatchingVolume(early, labels, new Set(), 3);
        cache.findMatchingVolume(early, { [KEYS[0]]: 'a' }, new Set(), 4);
        for (const o of ops) {
          if (names.length === 0) break;
          const name = names[o.pv % names.length];
          const entry = cache.entry(name);
          if (o.op === 'restore') {
            cache.restore(name);
            continue;
          }
          if (!entry) continue;
          const current = entry.latest;
          if (o.op === 'delete') {
            cache.delete(current);
            continue;
          }
          if (o.op === 'resize') {
            const v = (rv.get(name) ?? 1) + 1;
            rv.set(name, v);
            cache.add({
              ...current,
              metadata: { ...current.metadata, resourceVersion: String(v) },
              spec: { ...current.spec, capacity: { storage: `${o.size}Gi` } },
            });
            continue;
          }
          const ref = REFS[o.ref];
          if (
            boundToMine({ spec: { claimRef: ref } } as PersistentVolume) &&
            !boundToMine(current) &&
            mineCount() > 0
          ) {
            continue;
          }
          const next: PersistentVolume = {
            ...current,
            spec: { ...current.spec, claimRef: ref },
            ...(o.op === 'update' ? { status: o.phase === undefined ? {} : { phase: o.phase } } : {}),
          };
          if (o.op === 'assume') {
            cache.assume(next);
          } else {
            const v = (rv.get(name) ?? 1) + 1;
            rv.set(name, v);
            const wasAssumed = cache.isAssumed(name);
            cache.add({ ...next, metadata: { ...next.metadata, resourceVersion: String(v) } });
            // An assumption survives an update only while newer; ours never are, so the update replaced it.
            assert.equal(cache.isAssumed(name), false, `update after assume (${wasAssumed})`);
          }
        }
        // A restore may bring back an API version bound to `mine` next to an assumed one: keep the scenario upstream
        // can answer deterministically.
        fc.pre(mineCount() <= 1);
        const claim: PersistentVolumeClaim = {
          metadata: { name: 'mine', namespace: 'ns', uid: 'u', resourceVersion: '1' },
          spec: { storageClassName: want.cls, resources: { requests: { storage: `${want.size}Gi` } } },
        };
        const excluded = new Set(excludedIdx.filter((i) => i < names.length).map((i) => names[i]));
        const input = claimMatchInput(claim);
        const all = [...cache.listByClass(want.cls)];
        const candidates = [...cache.candidates(want.cls, labels, 'ns/mine')];
        // The index never hides a PV the claim could take on this node, whatever equal-sized PVs would mask.
        for (const pv of all) {
          if (findMatchingVolume(input, [pv], labels, excluded)) {
            assert.ok(candidates.includes(pv), `${pv.metadata.name} matches but is not a candidate`);
          }
        }
        const scan = findMatchingVolume(input, all, labels, excluded);
        const indexed = findMatchingVolume(input, candidates, labels, excluded);
        const direct = cache.findMatchingVolume(input, labels, excluded);
        // The node's dense row (built before the operations above, stale since) picks the very PV the walk picks.
        assert.equal(cache.findMatchingVolume(input, labels, excluded, 3), direct);
        for (const found of [indexed, direct]) {
          assert.equal(found === undefined, scan === undefined);
          if (!scan || !found) continue;
          assert.equal(pvCapacity(found), pvCapacity(scan));
          assert.equal(boundToMine(found), boundToMine(scan));
          if (boundToMine(scan)) assert.equal(found, scan);
        }
      },
    ),
    { numRuns: 1000 },
  );
});

// The flat records free PVs are matched from: every field FindMatchingVolume reads, varied.
const MODES = ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod', 'SomethingNew'];
const fieldsArb = fc.record({
  accessModes: fc.option(fc.subarray(MODES), { nil: undefined }),
  volumeMode: fc.constantFrom(undefined, 'Filesystem', 'Block'),
  attributesClass: fc.constantFrom(undefined, '', 'gold'),
  labels: fc.option(fc.dictionary(fc.constantFrom('tier', 'team'), fc.constantFrom('a', 'b')), { nil: undefined }),
});
const selectorArb = fc.option(
  fc.oneof(
    fc.record({ matchLabels: fc.dictionary(fc.constantFrom('tier', 'team'), fc.constantFrom('a', 'b')) }),
    fc.record({
      matchExpressions: fc.array(
        fc.record({
          key: fc.constantFrom('tier', 'team'),
          // `In` without values is invalid: SelectorError, as soon as some PV reaches the selector check
          operator: fc.constantFrom('In', 'NotIn', 'Exists', 'DoesNotExist'),
          values: fc.subarray(['a', 'b']),
        }),
        { maxLength: 2 },
      ),
    }),
  ),
  { nil: undefined },
);

function outcome(f: () => PersistentVolume | undefined): { pv?: PersistentVolume; error?: string } {
  try {
    return { pv: f() };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

it('the flat free-PV records decide as the PV objects do: sizes, modes, attributes classes, selectors', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(pvArb, fieldsArb), { maxLength: 20 }),
      fc.record({ size: fc.integer({ min: 1, max: 6 }) }),
      fieldsArb,
      selectorArb,
      fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES)),
      (specs, want, claimFields, selector, labels) => {
        const cache = new PVAssumeCache();
        const firstMine = specs.findIndex(([s]) => s.claimRef === 'mine');
        for (const [i, [s]] of specs.entries()) if (s.claimRef === 'mine' && i !== firstMine) s.claimRef = undefined;
        for (const [i, [s, f]] of specs.entries()) {
          cache.add({
            metadata: {
              name: `pv-${i}`,
              uid: `pv-${i}`,
              resourceVersion: '1',
              ...(f.labels ? { labels: f.labels } : {}),
            },
            spec: {
              storageClassName: 'x',
              capacity: { storage: `${s.size}Gi` },
              ...(f.accessModes ? { accessModes: f.accessModes } : {}),
              ...(f.volumeMode ? { volumeMode: f.volumeMode } : {}),
              ...(f.attributesClass !== undefined ? { volumeAttributesClassName: f.attributesClass } : {}),
              ...(s.terms ? { nodeAffinity: { required: { nodeSelectorTerms: s.terms } } } : {}),
              ...(s.claimRef ? { claimRef: { name: s.claimRef, namespace: 'ns' } } : {}),
            },
            status: { phase: s.available ? 'Available' : 'Released' },
          });
        }
        const claim: PersistentVolumeClaim = {
          metadata: { name: 'mine', namespace: 'ns', uid: 'u', resourceVersion: '1' },
          spec: {
            storageClassName: 'x',
            resources: { requests: { storage: `${want.size}Gi` } },
            ...(claimFields.accessModes ? { accessModes: claimFields.accessModes } : {}),
            ...(claimFields.volumeMode ? { volumeMode: claimFields.volumeMode } : {}),
            ...(claimFields.attributesClass !== undefined
              ? { volumeAttributesClassName: claimFields.attributesClass }
              : {}),
            ...(selector ? { selector } : {}),
          },
        };
        const input = claimMatchInput(claim);
        const none = new Set<string>();
        const scan = outcome(() => findMatchingVolume(input, [...cache.listByClass('x')], labels, none));
        const indexed = outcome(() =>
          findMatchingVolume(input, cache.candidates('x', labels, 'ns/mine'), labels, none),
        );
        const direct = outcome(() => cache.findMatchingVolume(input, labels, none));
        // Both index paths walk the same PVs in the same order: the same error, or the same answer.
        assert.equal(direct.error, indexed.error);
        if (direct.error !== undefined || scan.error !== undefined) return; // the scan may reach PVs of other nodes
        for (const found of [indexed.pv, direct.pv]) {
          assert.equal(found === undefined, scan.pv === undefined);
          if (!scan.pv || !found) continue;
          assert.equal(pvCapacity(found), pvCapacity(scan.pv));
          assert.equal(found.spec.claimRef?.name, scan.pv.spec.claimRef?.name);
        }
        if (indexed.pv && direct.pv) assert.equal(direct.pv, indexed.pv);
        // The node's dense row answers claims without selector, with the very PV the walk picks.
        if (!selector)
          assert.deepEqual(
            outcome(() => cache.findMatchingVolume(input, labels, none, 0)),
            direct,
          );
      },
    ),
    { numRuns: 1000 },
  );
});
