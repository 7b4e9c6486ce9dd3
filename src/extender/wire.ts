// The extender wire types of k8s.io/kube-scheduler/extender/v1 as TypeBox schemas: PascalCase keys (the Go types have
// no JSON tags), null for absent pointers and maps. Embedded Kubernetes objects keep the API's camelCase JSON and any
// field we do not read passes through untouched (their schemas are cluster/schemas.ts, which the cluster-state loader
// uses too). The HTTP layer validates with these; the verbs take their Static types.
import { type Static, Type } from 'typebox';
import { Node, ObjectMeta, open, Pod as PodObject, StringMap } from '../cluster/schemas.ts';

export { Node };

export const Pod = Type.Object(
  {
    ...PodObject.properties,
    metadata: Type.Object(
      { ...ObjectMeta.properties, uid: Type.String({ minLength: 1, description: 'kube-scheduler always sends it' }) },
      open,
    ),
  },
  { ...open, description: 'A v1 Pod in the API JSON form' },
);

export const NodeList = Type.Object(
  { metadata: Type.Optional(Type.Object({}, open)), items: Type.Union([Type.Array(Node), Type.Null()]) },
  open,
);

const NodeNames = Type.Union([Type.Array(Type.String()), Type.Null()]);

export const ExtenderArgs = Type.Object(
  {
    Pod: Pod,
    Nodes: Type.Optional(Type.Union([NodeList, Type.Null()], { description: 'Candidate nodes (non-cache mode)' })),
    NodeNames: Type.Optional(
      Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'Candidate node names (node-cache mode)' }),
    ),
  },
  { ...open, title: 'ExtenderArgs', description: 'Filter and prioritize request' },
);

export const ExtenderFilterResult = Type.Object(
  {
    Nodes: Type.Union([NodeList, Type.Null()]),
    NodeNames: NodeNames,
    FailedNodes: StringMap,
    FailedAndUnresolvableNodes: StringMap,
    Error: Type.String(),
  },
  { title: 'ExtenderFilterResult', description: 'Nodes that fit, and a reason for each node that does not' },
);

export const HostPriorityList = Type.Array(
  Type.Object({
    Host: Type.String(),
    Score: Type.Integer({ minimum: 0, maximum: 10 }),
  }),
  {
    title: 'HostPriorityList',
    description: 'An integer score in 0..10 per input node; nodes that score 0 are left out',
  },
);

const MetaPod = Type.Object({ UID: Type.String({ minLength: 1 }) });

export const MetaVictims = Type.Object(
  { Pods: Type.Union([Type.Array(MetaPod), Type.Null()]), NumPDBViolations: Type.Integer({ minimum: 0 }) },
  { title: 'MetaVictims' },
);

export const Victims = Type.Object(
  { Pods: Type.Union([Type.Array(Pod), Type.Null()]), NumPDBViolations: Type.Integer({ minimum: 0 }) },
  { ...open, title: 'Victims' },
);

export const ExtenderPreemptionArgs = Type.Object(
  {
    Pod: Pod,
    NodeNameToVictims: Type.Optional(Type.Union([Type.Record(Type.String(), Victims), Type.Null()])),
    NodeNameToMetaVictims: Type.Optional(Type.Union([Type.Record(Type.String(), MetaVictims), Type.Null()])),
  },
  { ...open, title: 'ExtenderPreemptionArgs', description: 'Preempt request: candidate nodes and their victims' },
);

export const ExtenderPreemptionResult = Type.Object(
  { NodeNameToMetaVictims: Type.Union([Type.Record(Type.String(), MetaVictims), Type.Null()]) },
  { title: 'ExtenderPreemptionResult', description: 'The candidates that work, victims by UID' },
);

export const ExtenderBindingArgs = Type.Object(
  {
    PodName: Type.String({ minLength: 1 }),
    PodNamespace: Type.String({ minLength: 1 }),
    PodUID: Type.String({ minLength: 1 }),
    Node: Type.String({ minLength: 1 }),
  },
  { ...open, title: 'ExtenderBindingArgs', description: 'Bind request' },
);

export const ExtenderBindingResult = Type.Object(
  { Error: Type.String({ description: 'Empty on success' }) },
  { title: 'ExtenderBindingResult' },
);

export type ExtenderArgs = Static<typeof ExtenderArgs>;
export type ExtenderFilterResult = Static<typeof ExtenderFilterResult>;
export type HostPriorityList = Static<typeof HostPriorityList>;
export type MetaVictims = Static<typeof MetaVictims>;
export type ExtenderPreemptionArgs = Static<typeof ExtenderPreemptionArgs>;
export type ExtenderPreemptionResult = Static<typeof ExtenderPreemptionResult>;
export type ExtenderBindingArgs = Static<typeof ExtenderBindingArgs>;
export type ExtenderBindingResult = Static<typeof ExtenderBindingResult>;
export type WireNode = Static<typeof Node>;
export type WirePod = Static<typeof Pod>;

/**
 * Real Pods and Nodes nest about 20 levels deep. Deeper bodies are refused before anything reads them: non-cache
 * filter echoes nodes back, and JSON.stringify overflows the stack on a structure some thousands of levels deep.
 */
export const MAX_NESTING = 256;

/** The path (JSON Pointer) of the first value nested deeper than `limit`, if any. Recursion is bounded by `limit`. */
export function tooDeeplyNested(value: unknown, limit = MAX_NESTING): string | undefined {
  if (typeof value !== 'object' || value === null || !deeper(value, limit)) return undefined;
  return pathDeeper(value, limit);
}

// The check runs on every body (about 6 ms for 500 full nodes): indexed loops, and no path kept until one is needed.
function deeper(value: object, limit: number): boolean {
  if (limit === 0) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      if (typeof v === 'object' && v !== null && deeper(v, limit - 1)) return true;
    }
    return false;
  }
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    if (typeof v === 'object' && v !== null && deeper(v, limit - 1)) return true;
  }
  return false;
}

/** Only for a body already found too deep. */
function pathDeeper(value: object, limit: number): string {
  if (limit === 0) return '';
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    if (typeof v === 'object' && v !== null && deeper(v, limit - 1)) return `/${key}${pathDeeper(v, limit - 1)}`;
  }
  return '';
}
