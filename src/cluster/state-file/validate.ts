// Type checks for the fields scheduling reads, so a hand-edited cluster-state file fails at load with the field's path
// instead of surfacing later as NaN capacities or a crash deep inside a filter. Pods and Nodes are checked with the
// schemas the HTTP verbs use (../schemas.ts); the kinds only the file carries have theirs here. Fields nobody reads
// are not checked.
import { type TObject, type TSchema, Type } from 'typebox';
import { Compile } from 'typebox/compile';
import { QUANTITY_PATTERN, QuantityError } from '../quantity.ts';
import {
  LabelSelector,
  maybe,
  Node,
  ObjectMeta,
  open,
  Pod,
  Quantity,
  Requirement,
  ResourceList,
  StringMap,
} from '../schemas.ts';
import type { Kind } from '../types.ts';

export type Json = Record<string, unknown>;

/** A field that does not have the shape the API documents; `path` (a JSON Pointer) is relative to the object. */
export class FieldError extends Error {
  readonly path: string;
  constructor(path: string, problem: string) {
    super(`${path} ${problem}`);
    this.path = path;
  }
}

export function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// The kinds below come only from the file, whose readers always took null for an absent field (`storageClassName:`).
const str = maybe(Type.String());
const Strings = maybe(Type.Array(Type.String()));

const ClaimSpec = Type.Object(
  {
    accessModes: Strings,
    resources: maybe(Type.Object({ requests: maybe(ResourceList), limits: maybe(ResourceList) }, open)),
    volumeName: str,
    storageClassName: str,
    volumeMode: str,
    selector: LabelSelector,
  },
  open,
);

const PersistentVolume = Type.Object(
  {
    spec: maybe(
      Type.Object(
        {
          capacity: maybe(ResourceList),
          accessModes: Strings,
          claimRef: maybe(Type.Object({ namespace: str, name: str, uid: str }, open)),
          storageClassName: str,
          volumeMode: str,
          nodeAffinity: maybe(
            Type.Object(
              {
                required: maybe(
                  Type.Object(
                    {
                      nodeSelectorTerms: maybe(
                        Type.Array(
                          Type.Object(
                            {
                              matchExpressions: maybe(Type.Array(Requirement)),
                              matchFields: maybe(Type.Array(Requirement)),
                            },
                            open,
                          ),
                        ),
                      ),
                    },
                    open,
                  ),
                ),
              },
              open,
            ),
          ),
          csi: maybe(Type.Object({ driver: str }, open)),
        },
        open,
      ),
    ),
    status: maybe(Type.Object({ phase: str }, open)),
  },
  open,
);

const PersistentVolumeClaim = Type.Object(
  {
    spec: maybe(ClaimSpec),
    status: maybe(Type.Object({ phase: str, capacity: maybe(ResourceList) }, open)),
  },
  open,
);

const StorageClass = Type.Object(
  {
    provisioner: Type.String(),
    volumeBindingMode: str,
    parameters: maybe(StringMap),
    allowedTopologies: maybe(
      Type.Array(
        Type.Object(
          { matchLabelExpressions: maybe(Type.Array(Type.Object({ key: str, values: Strings }, open))) },
          open,
        ),
      ),
    ),
  },
  open,
);

const CSINode = Type.Object(
  {
    spec: maybe(
      Type.Object(
        {
          drivers: maybe(
            Type.Array(
              Type.Object(
                {
                  name: str,
                  nodeID: str,
                  topologyKeys: Strings,
                  allocatable: maybe(Type.Object({ count: maybe(Type.Number()) }, open)),
                },
                open,
              ),
            ),
          ),
        },
        open,
      ),
    ),
  },
  open,
);

const CSIDriver = Type.Object(
  {
    spec: maybe(Type.Object({ storageCapacity: maybe(Type.Boolean()), attachRequired: maybe(Type.Boolean()) }, open)),
  },
  open,
);

const CSIStorageCapacity = Type.Object(
  {
    storageClassName: Type.String(),
    capacity: maybe(Quantity),
    maximumVolumeSize: maybe(Quantity),
    nodeTopology: LabelSelector,
  },
  open,
);

const IntOrString = maybe(Type.Union([Type.Number(), Type.String()]));

const PodDisruptionBudget = Type.Object(
  {
    spec: maybe(Type.Object({ selector: LabelSelector, minAvailable: IntOrString, maxUnavailable: IntOrString }, open)),
    status: maybe(Type.Object({ disruptionsAllowed: maybe(Type.Number()) }, open)),
  },
  open,
);

const PriorityClass = Type.Object(
  { value: Type.Number(), globalDefault: maybe(Type.Boolean()), preemptionPolicy: str },
  open,
);

// What PodTopologySpread's default selector reads: a label map (Services, ReplicationControllers) or a LabelSelector.
const MapSelectorSpec = Type.Object({ spec: maybe(Type.Object({ selector: maybe(StringMap) }, open)) }, open);
const LabelSelectorSpec = Type.Object({ spec: maybe(Type.Object({ selector: LabelSelector }, open)) }, open);

// A hand-written file may leave resourceVersion unquoted and omit uids: normalisation turns the number into the API's
// string and synthesizes the uid.
const FileMeta = Type.Object(
  { ...ObjectMeta.properties, resourceVersion: maybe(Type.Union([Type.String(), Type.Number()])) },
  open,
);

const SCHEMAS: Record<Kind, TObject> = {
  Node,
  Pod,
  PersistentVolume,
  PersistentVolumeClaim,
  StorageClass,
  CSINode,
  CSIDriver,
  CSIStorageCapacity,
  PodDisruptionBudget,
  PriorityClass,
  Service: MapSelectorSpec,
  ReplicationController: MapSelectorSpec,
  ReplicaSet: LabelSelectorSpec,
  StatefulSet: LabelSelectorSpec,
  // Its labels are checked with every object's metadata.
  Namespace: Type.Object({}, open),
};

type Validator = ReturnType<typeof Compile<TSchema>>;
const validators = new Map<Kind, Validator>();

function validator(kind: Kind): Validator {
  let v = validators.get(kind);
  if (!v) {
    const schema = SCHEMAS[kind];
    v = Compile(Type.Object({ ...schema.properties, metadata: FileMeta }, open) as TSchema);
    validators.set(kind, v);
  }
  return v;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value)}`;
}

function at(obj: unknown, pointer: string): unknown {
  let value = obj;
  for (const part of pointer.split('/').slice(1)) {
    value = (value as Json | undefined)?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  return value;
}

/** Throws FieldError for the first field that does not have the documented type. */
export function validateObject(kind: Kind, obj: Json): void {
  const check = validator(kind);
  if (check.Check(obj)) return;
  const [first] = check.Errors(obj);
  if (!first) throw new FieldError('', 'is invalid');
  const path = first.instancePath;
  const params = first.params as { requiredProperties?: string[]; pattern?: string };
  if (first.keyword === 'required') {
    throw new FieldError(`${path}/${params.requiredProperties?.[0] ?? ''}`, 'is required');
  }
  const value = at(obj, path);
  if (first.keyword === 'pattern' && params.pattern === QUANTITY_PATTERN) {
    throw new FieldError(path, `must be a quantity: ${new QuantityError(value).message}`);
  }
  throw new FieldError(path, `${first.message} (got ${describe(value)})`);
}
