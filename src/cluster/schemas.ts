// TypeBox schemas of the Pod and Node fields scheduling reads (the types of ./types.ts), in the API's camelCase JSON.
// One set of rules for every edge: the HTTP verbs validate request bodies with them and the cluster-state loader
// validates file objects with them, so a shape that would break scheduling code is refused the same way by both.
// Only read fields are typed; every other field passes as sent.
import { type TSchema, Type } from 'typebox';
import { QUANTITY_PATTERN } from './quantity.ts';

export const open = { additionalProperties: true } as const;
export const StringMap = Type.Record(Type.String(), Type.String());
/** Optional, and null like Go's zero value for a pointer, slice or map. */
export const maybe = <T extends TSchema>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));
export const text = Type.Optional(Type.String());
export const Quantity = Type.Union([Type.String({ pattern: QUANTITY_PATTERN }), Type.Number()]);
export const ResourceList = Type.Record(Type.String(), Quantity);
/** metav1.Time in its RFC 3339 JSON form. */
const Time = maybe(Type.String());

/** A label selector requirement (and a node selector requirement, which has the same fields). */
export const Requirement = Type.Object(
  { key: maybe(Type.String()), operator: maybe(Type.String()), values: maybe(Type.Array(Type.String())) },
  open,
);
export const LabelSelector = maybe(
  Type.Object({ matchLabels: maybe(StringMap), matchExpressions: maybe(Type.Array(Requirement)) }, open),
);

export const ObjectMeta = Type.Object(
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
      Type.Array(
        Type.Object({ apiVersion: text, kind: text, name: text, uid: text, controller: maybe(Type.Boolean()) }, open),
      ),
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

/** A Pod; its uid may be absent (a manifest not created yet, a hand-written file): each edge says whether it needs one. */
export const Pod = Type.Object(
  {
    metadata: ObjectMeta,
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
          tolerations: maybe(Type.Array(Type.Object({ key: text, operator: text, value: text, effect: text }, open))),
          affinity: maybe(Type.Object({}, open)),
          topologySpreadConstraints: maybe(
            Type.Array(
              Type.Object(
                { maxSkew: Type.Integer({ minimum: 1 }), topologyKey: Type.String(), whenUnsatisfiable: Type.String() },
                open,
              ),
            ),
          ),
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
  open,
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
