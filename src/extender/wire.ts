// The extender wire types of k8s.io/kube-scheduler/extender/v1 as TypeBox schemas: PascalCase keys (the Go types have
// no JSON tags), null for absent pointers and maps. Embedded Kubernetes objects keep the API's camelCase JSON and any
// field we do not read passes through untouched. The HTTP layer validates with these; the verbs take their Static types.
import { type Static, Type } from 'typebox';

const open = { additionalProperties: true } as const;
const StringMap = Type.Record(Type.String(), Type.String());

const ObjectMeta = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    namespace: Type.Optional(Type.String()),
    uid: Type.Optional(Type.String()),
    resourceVersion: Type.Optional(Type.String()),
    labels: Type.Optional(Type.Union([StringMap, Type.Null()])),
    annotations: Type.Optional(Type.Union([StringMap, Type.Null()])),
  },
  open,
);

const Container = Type.Object({ name: Type.String() }, open);

export const Pod = Type.Object(
  {
    metadata: Type.Object(
      { ...ObjectMeta.properties, uid: Type.String({ minLength: 1, description: 'kube-scheduler always sends it' }) },
      open,
    ),
    spec: Type.Optional(
      Type.Object(
        {
          nodeName: Type.Optional(Type.String()),
          priority: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
          containers: Type.Optional(Type.Union([Type.Array(Container), Type.Null()])),
          initContainers: Type.Optional(Type.Union([Type.Array(Container), Type.Null()])),
          volumes: Type.Optional(Type.Union([Type.Array(Type.Object({ name: Type.String() }, open)), Type.Null()])),
        },
        open,
      ),
    ),
    status: Type.Optional(Type.Object({}, open)),
  },
  { ...open, description: 'A v1 Pod in the API JSON form' },
);

export const Node = Type.Object(
  { metadata: ObjectMeta, spec: Type.Optional(Type.Object({}, open)), status: Type.Optional(Type.Object({}, open)) },
  { ...open, description: 'A v1 Node in the API JSON form' },
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
  { title: 'HostPriorityList', description: 'One integer score in 0..10 per input node' },
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
