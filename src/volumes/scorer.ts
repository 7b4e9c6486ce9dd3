// Storage capacity scoring (volumebinding/scorer.go): per class, utilization = requested × 100 / capacity mapped
// through a broken-linear shape; the node score is the rounded mean over classes.

import { type Static, type TSchemaOptions, Type } from 'typebox';

/** One point of a shape, written "utilization:score" where settings are text (flags, environment). */
const ShapePointSchema = Type.Object(
  {
    utilization: Type.Integer({ minimum: 0, maximum: 100 }),
    score: Type.Integer({ minimum: 0, maximum: 10 }),
  },
  {
    additionalProperties: false,
    fromText: (text: string) => {
      const [utilization, score, ...rest] = text.split(':');
      return rest.length > 0 ? text : { utilization: Number(utilization), score: Number(score) };
    },
    toText: (p: ShapePoint) => `${p.utilization}:${p.score}`,
  },
);
export type ShapePoint = Static<typeof ShapePointSchema>;

/** A shape as upstream's config validation accepts it: at least one point, utilization strictly ascending. */
export function shapeSchema(options: TSchemaOptions = {}) {
  return Type.Refine(Type.Array(ShapePointSchema, { minItems: 1, ...options }), (shape) =>
    shape.every((p, i) => i === 0 || shape[i - 1].utilization < p.utilization),
  );
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

export interface CapacityScorer {
  (classResources: ReadonlyMap<string, StorageResource>): number;
  /** The same for a single class: what filter computes for each of ~500 nodes, without a map per node. */
  oneClass(requested: number, capacity: number): number;
}

/** buildScorerFunction over a shape in 0..10 score units; returns 0..100. */
export function buildCapacityScorer(shape: readonly ShapePoint[]): CapacityScorer {
  const f = brokenLinear(shape.map((p) => ({ utilization: p.utilization, score: p.score * SHAPE_SCORE_SCALE })));
  const classScore = (requested: number, capacity: number) =>
    capacity === 0 || requested > capacity
      ? f(MAX_UTILIZATION)
      : f(Math.trunc((requested * MAX_UTILIZATION) / capacity));
  const scorer = (classResources: ReadonlyMap<string, StorageResource>) => {
    if (classResources.size === 0) return 0;
    let sum = 0;
    for (const r of classResources.values()) sum += classScore(r.requested, r.capacity);
    return Math.round(sum / classResources.size);
  };
  return Object.assign(scorer, { oneClass: classScore });
}
