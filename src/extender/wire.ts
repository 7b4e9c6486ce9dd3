// The extender wire types of k8s.io/kube-scheduler/extender/v1 as TypeBox schemas: PascalCase keys (the Go types have
// no JSON tags), null for absent pointers and maps. Embedded Kubernetes objects keep the API's camelCase JSON and any
// field we do not read passes through untouched. The HTTP layer validates with these; the verbs take their Static types.
import { type Static, type TSchema, Type } from 'typebox';
import { QUANTITY_PATTERN } from '../cluster/quantity.ts';

const open = { additionalProperties: true } as const;
const StringMap = Type.Record(Type.String(), Type.String());
/** Optional, and null like Go's zero value for a pointer, slice or map. */
const maybe = <T extends TSchema>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));
const text = Type.Optional(Type.String());
const Quantity = Type.Union([Type.String({ pattern: QUANTITY_PATTERN }), Type.Number()]);
const ResourceList = Type.Record(Type.String(), Quantity);
/** metav1.Time in its RFC 3339 JSON form. */
const Time = maybe(Type.String());

// Only the fields scheduling reads are typed (the types of src/cluster/types.ts); every other field passes as sent.
const ObjectMeta = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    namespace: text,
    uid: text,
    resourceVersion: text,
    labels: maybe(StringMap),
    annotations: maybe(StringMap),
    creationTimestamp: Time,
    deletionTimestamp: Time,
    ownerReferences: maybe(
      Type.Array(Type.Object({ kind: text, name: text, uid: text, controller: maybe(Type.Boolean()) }, open)),
    ),
  },
  open,
);

const ContainerPort = Type.Object(
  {
    containerPort: Type.Optional(Type.Integer()),
    hostPort: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
    hostIP: text,
    protocol: text,
  },
  open,
);

const Container = Type.Object(
  {
    name: Type.String(),
    image: text,
    resources: maybe(Type.Object({ requests: maybe(ResourceList), limits: maybe(ResourceList) }, open)),
    ports: maybe(Type.Array(ContainerPort)),
    restartPolicy: text,
  },
  open,
);

const Volume = Type.Object(
  {
    name: Type.String(),
    persistentVolumeClaim: maybe(
      Type.Object({ claimName: Type.String(), readOnly: Type.Optional(Type.Boolean()) }, open),
    ),
    ephemeral: maybe(Type.Object({}, open)),
    csi: maybe(Type.Object({ driver: Type.String() }, open)),
    // The in-tree sources VolumeRestrictions compares (isVolumeConflict).
    gcePersistentDisk: maybe(Type.Object({ pdName: Type.String(), readOnly: Type.Optional(Type.Boolean()) }, open)),
    awsElasticBlockStore: maybe(Type.Object({ volumeID: Type.String() }, open)),
    iscsi: maybe(Type.Object({ iqn: Type.String(), readOnly: Type.Optional(Type.Boolean()) }, open)),
    rbd: maybe(
      Type.Object(
        {
          monitors: maybe(Type.Array(Type.String())),
          pool: text,
          image: Type.String(),
          readOnly: Type.Optional(Type.Boolean()),
        },
        open,
      ),
    ),
  },
  open,
);

export const Pod = Type.Object(
  {
    metadata: Type.Object(
      { ...ObjectMeta.properties, uid: Type.String({ minLength: 1, description: 'kube-scheduler always sends it' }) },
      open,
    ),
    spec: Type.Optional(
      Type.Object(
        {
          nodeName: text,
          schedulerName: text,
          priority: maybe(Type.Integer()),
          priorityClassName: text,
          preemptionPolicy: text,
          containers: maybe(Type.Array(Container)),
          initContainers: maybe(Type.Array(Container)),
          overhead: maybe(ResourceList),
          volumes: maybe(Type.Array(Volume)),
          nodeSelector: maybe(StringMap),
        },
        open,
      ),
    ),
    status: Type.Optional(
      Type.Object(
        {
          phase: text,
          nominatedNodeName: text,
          startTime: Time,
          conditions: maybe(Type.Array(Type.Object({ type: text, status: text }, open))),
        },
        open,
      ),
    ),
  },
  { ...open, description: 'A v1 Pod in the API JSON form' },
);

export const Node = Type.Object(
  {
    metadata: ObjectMeta,
    spec: Type.Optional(
      Type.Object(
        {
          unschedulable: Type.Optional(Type.Boolean()),
          taints: maybe(Type.Array(Type.Object({ key: Type.String(), value: text, effect: Type.String() }, open))),
        },
        open,
      ),
    ),
    status: Type.Optional(
      Type.Object(
        {
          allocatable: maybe(ResourceList),
          capacity: maybe(ResourceList),
          images: maybe(
            Type.Array(
              Type.Object({ names: maybe(Type.Array(Type.String())), sizeBytes: Type.Optional(Type.Integer()) }, open),
            ),
          ),
        },
        open,
      ),
    ),
  },
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

/** The answer to a request refused before any verb ran: it names what is wrong. */
const HttpError = (description: string) =>
  Type.Object(
    { statusCode: Type.Integer(), code: Type.Optional(Type.String()), error: Type.String(), message: Type.String() },
    { description },
  );

/** The 4xx answers every verb may give, for the OpenAPI document. */
export const RequestErrors = {
  400: HttpError('Invalid JSON, or a field of the wrong type (the message names it)'),
  413: HttpError('The body is larger than --body-limit'),
  415: HttpError('The Content-Type is not application/json'),
};

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
