// volumebinding/scorer_test.go (TestScore). Shapes are given in the configuration's 0..10 score units.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Value } from 'typebox/value';
import { defaultSettings } from '../../src/config.ts';
import { buildCapacityScorer, type ShapePoint, type StorageResource, shapeSchema } from '../../src/volumes/scorer.ts';

const classes = (hdd: number, ssd?: number) => {
  const m = new Map<string, StorageResource>([['hdd', { requested: hdd, capacity: 100 }]]);
  if (ssd !== undefined) m.set('ssd', { requested: ssd, capacity: 100 });
  return m;
};

describe('TestScore', () => {
  const volumeCapacityPriority: ShapePoint[] = [
    { utilization: 0, score: 0 },
    { utilization: 100, score: 10 },
  ];
  const tests: { name: string; shape: ShapePoint[]; cases: [Map<string, StorageResource>, number][] }[] = [
    {
      name: 'default shape, single class',
      shape: volumeCapacityPriority,
      cases: [
        [classes(0), 0],
        [classes(30), 30],
        [classes(50), 50],
        [classes(100), 100],
      ],
    },
    {
      name: 'default shape, multiple classes',
      shape: volumeCapacityPriority,
      cases: [
        [classes(0, 0), 0],
        [classes(0, 30), 15],
        [classes(30, 30), 30],
        [classes(30, 60), 45],
        [classes(50, 50), 50],
        [classes(50, 100), 75],
        [classes(100, 100), 100],
      ],
    },
    {
      name: 'custom shape, multiple classes',
      shape: [
        { utilization: 50, score: 0 },
        { utilization: 80, score: 3 },
        { utilization: 100, score: 5 },
      ],
      cases: [
        [classes(0, 0), 0],
        [classes(0, 30), 0],
        [classes(30, 30), 0],
        [classes(30, 60), 5],
        [classes(50, 100), 25],
        [classes(90, 90), 40],
        [classes(100, 100), 50],
      ],
    },
  ];
  for (const t of tests) {
    it(t.name, () => {
      const f = buildCapacityScorer(t.shape);
      for (const [resources, want] of t.cases) assert.equal(f(resources), want);
    });
  }

  it('StorageCapacityScoring default shape prefers free space', () => {
    const f = buildCapacityScorer(defaultSettings().storageScoringShape);
    assert.equal(f(classes(0)), 100);
    assert.equal(f(classes(25)), 75);
    assert.equal(f(classes(100)), 0);
  });

  it('capacity 0 or exceeded counts as full utilization', () => {
    const f = buildCapacityScorer(volumeCapacityPriority);
    assert.equal(f(new Map([['x', { requested: 1, capacity: 0 }]])), 100);
    assert.equal(f(new Map([['x', { requested: 200, capacity: 100 }]])), 100);
    assert.equal(f(new Map()), 0);
  });

  it('one class scores as the map of that class alone (the fast path filter takes per node)', () => {
    const shape = fc
      .uniqueArray(fc.integer({ min: 0, max: 100 }), { minLength: 1, maxLength: 5 })
      .chain((us) =>
        fc.tuple(
          ...us
            .sort((a, b) => a - b)
            .map((utilization) =>
              fc.record({ utilization: fc.constant(utilization), score: fc.integer({ min: 0, max: 10 }) }),
            ),
        ),
      );
    fc.assert(
      fc.property(shape, fc.nat(2 ** 40), fc.nat(2 ** 40), (points, requested, capacity) => {
        const f = buildCapacityScorer(points);
        assert.equal(f.oneClass(requested, capacity), f(new Map([['c', { requested, capacity }]])));
      }),
      { numRuns: 500 },
    );
  });

  it('shapes are validated as upstream validates them', () => {
    const valid = (shape: unknown) => Value.Check(shapeSchema(), shape);
    assert.equal(valid(volumeCapacityPriority), true);
    assert.equal(valid([]), false, 'at least one point');
    assert.equal(
      valid([
        { utilization: 50, score: 1 },
        { utilization: 50, score: 2 },
      ]),
      false,
      'utilization strictly increasing',
    );
    assert.equal(valid([{ utilization: 0, score: 11 }]), false, 'score in 0..10');
    assert.equal(valid([{ utilization: 101, score: 1 }]), false, 'utilization in 0..100');
  });
});
