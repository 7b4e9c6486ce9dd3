// Storage capacity scoring (volumebinding/scorer.go): per class, utilization = requested × 100 / capacity mapped
// through a broken-linear shape; the node score is the rounded mean over classes.

export interface ShapePoint {
  utilization: number;
  score: number;
}

export interface StorageResource {
  requested: number;
  capacity: number;
}

const MAX_UTILIZATION = 100;
/** Shape scores are given in 0..10 (MaxCustomPriorityScore); plugin scores are 0..100 (MaxNodeScore). */
const SHAPE_SCORE_SCALE = 10;

/** helper.BuildBrokenLinearFunction, with Go's truncating integer division. */
export function brokenLinear(shape: readonly ShapePoint[]): (p: number) => number {
  return (p) => {
    for (let i = 0; i < shape.length; i++) {
      if (p <= shape[i].utilization) {
        if (i === 0) return shape[0].score;
        const a = shape[i - 1];
        const b = shape[i];
        return a.score + Math.trunc(((b.score - a.score) * (p - a.utilization)) / (b.utilization - a.utilization));
      }
    }
    return shape[shape.length - 1].score;
  };
}

export type CapacityScorer = (classResources: ReadonlyMap<string, StorageResource>) => number;

/** buildScorerFunction over a shape in 0..10 score units; returns 0..100. */
export function buildCapacityScorer(shape: readonly ShapePoint[]): CapacityScorer {
  const f = brokenLinear(shape.map((p) => ({ utilization: p.utilization, score: p.score * SHAPE_SCORE_SCALE })));
  const classScore = (requested: number, capacity: number) =>
    capacity === 0 || requested > capacity
      ? f(MAX_UTILIZATION)
      : f(Math.trunc((requested * MAX_UTILIZATION) / capacity));
  return (classResources) => {
    if (classResources.size === 0) return 0;
    let sum = 0;
    for (const r of classResources.values()) sum += classScore(r.requested, r.capacity);
    return Math.round(sum / classResources.size);
  };
}

/** Validates a shape as upstream's config validation does; returns the first problem, if any. */
export function shapeError(shape: readonly ShapePoint[]): string | undefined {
  if (shape.length === 0) return 'at least one point must be specified';
  for (let i = 0; i < shape.length; i++) {
    const p = shape[i];
    if (!Number.isInteger(p.utilization) || p.utilization < 0 || p.utilization > 100) {
      return `utilization values must be integers in 0..100 (point ${i})`;
    }
    if (!Number.isInteger(p.score) || p.score < 0 || p.score > 10)
      return `score values must be integers in 0..10 (point ${i})`;
    if (i > 0 && shape[i - 1].utilization >= p.utilization)
      return 'utilization values must be sorted in increasing order';
  }
  return undefined;
}
