// Type checks for the fields scheduling reads, so a hand-edited snapshot fails at load with the field's path
// instead of surfacing later as NaN capacities or a crash deep inside a filter. Fields nobody reads are not checked.
import { parseQuantity, QuantityError } from '../quantity.ts';
import type { Kind } from '../types.ts';

export type Json = Record<string, unknown>;

/** A field that does not have the shape the API documents; `path` is relative to the object. */
export class FieldError extends Error {
  readonly path: string;
  constructor(path: string, problem: string) {
    super(`${path}: ${problem}`);
    this.path = path;
  }

  static required(path: string): FieldError {
    const err = new FieldError(path, '');
    err.message = `${path} is required`;
    return err;
  }
}

export function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value)}`;
}

// Each reader accepts a missing field (undefined or null) and returns undefined for it.
function record(value: unknown, path: string): Json | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value)) throw new FieldError(path, `expected an object, got ${describe(value)}`);
  return value;
}

function array(value: unknown, path: string): unknown[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw new FieldError(path, `expected an array, got ${describe(value)}`);
  return value;
}

function typed(value: unknown, path: string, type: 'string' | 'number' | 'boolean'): void {
  if (value === undefined || value === null) return;
  if (typeof value !== type) throw new FieldError(path, `expected a ${type}, got ${describe(value)}`);
}

function intOrString(value: unknown, path: string): void {
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' && typeof value !== 'string') {
    throw new FieldError(path, `expected an integer or a percentage string, got ${describe(value)}`);
  }
}

function strings(value: unknown, path: string): void {
  array(value, path)?.forEach((v, i) => {
    typed(v, `${path}[${i}]`, 'string');
  });
}

function stringMap(value: unknown, path: string): void {
  for (const [k, v] of Object.entries(record(value, path) ?? {})) typed(v, `${path}.${k}`, 'string');
}

function quantity(value: unknown, path: string): void {
  if (value === undefined || value === null) return;
  if (typeof value !== 'string' && typeof value !== 'number') {
    throw new FieldError(path, `expected a quantity, got ${describe(value)}`);
  }
  try {
    parseQuantity(value);
  } catch (err) {
    if (err instanceof QuantityError) throw new FieldError(path, err.message);
    throw err;
  }
}

function resourceList(value: unknown, path: string): void {
  for (const [k, v] of Object.entries(record(value, path) ?? {})) quantity(v, `${path}.${k}`);
}

function each(value: unknown, path: string, check: (item: Json, path: string) => void): void {
  array(value, path)?.forEach((item, i) => {
    const p = `${path}[${i}]`;
    const r = record(item, p);
    if (!r) throw new FieldError(p, 'expected an object, got null');
    check(r, p);
  });
}

function requirement(r: Json, p: string): void {
  typed(r.key, `${p}.key`, 'string');
  typed(r.operator, `${p}.operator`, 'string');
  strings(r.values, `${p}.values`);
}

function labelSelector(value: unknown, path: string): void {
  const s = record(value, path);
  if (!s) return;
  stringMap(s.matchLabels, `${path}.matchLabels`);
  each(s.matchExpressions, `${path}.matchExpressions`, requirement);
}

function metadata(obj: Json): void {
  const meta = record(obj.metadata, 'metadata');
  if (!meta) throw FieldError.required('metadata');
  if (typeof meta.name !== 'string' || meta.name === '') throw FieldError.required('metadata.name');
  typed(meta.namespace, 'metadata.namespace', 'string');
  typed(meta.uid, 'metadata.uid', 'string');
  // A hand-written file may leave resourceVersion unquoted; normalisation turns the number into the API's string.
  if (typeof meta.resourceVersion !== 'number') typed(meta.resourceVersion, 'metadata.resourceVersion', 'string');
  stringMap(meta.labels, 'metadata.labels');
  stringMap(meta.annotations, 'metadata.annotations');
  typed(meta.deletionTimestamp, 'metadata.deletionTimestamp', 'string');
  each(meta.ownerReferences, 'metadata.ownerReferences', (r, p) => {
    for (const f of ['apiVersion', 'kind', 'name', 'uid']) typed(r[f], `${p}.${f}`, 'string');
  });
}

function container(c: Json, p: string): void {
  if (typeof c.name !== 'string') throw new FieldError(`${p}.name`, `expected a string, got ${describe(c.name)}`);
  const resources = record(c.resources, `${p}.resources`);
  resourceList(resources?.requests, `${p}.resources.requests`);
  resourceList(resources?.limits, `${p}.resources.limits`);
  each(c.ports, `${p}.ports`, (port, pp) => {
    typed(port.containerPort, `${pp}.containerPort`, 'number');
    typed(port.hostPort, `${pp}.hostPort`, 'number');
    typed(port.hostIP, `${pp}.hostIP`, 'string');
    typed(port.protocol, `${pp}.protocol`, 'string');
  });
}

function pod(o: Json): void {
  const spec = record(o.spec, 'spec');
  if (!spec || spec.containers === undefined) throw FieldError.required('spec.containers');
  each(spec.containers, 'spec.containers', container);
  each(spec.initContainers, 'spec.initContainers', container);
  each(spec.volumes, 'spec.volumes', (v, p) => {
    typed(v.name, `${p}.name`, 'string');
    const claim = record(v.persistentVolumeClaim, `${p}.persistentVolumeClaim`);
    if (claim && typeof claim.claimName !== 'string') {
      throw new FieldError(
        `${p}.persistentVolumeClaim.claimName`,
        `expected a string, got ${describe(claim.claimName)}`,
      );
    }
    const template = record(
      record(v.ephemeral, `${p}.ephemeral`)?.volumeClaimTemplate,
      `${p}.ephemeral.volumeClaimTemplate`,
    );
    if (template)
      claimSpec(
        record(template.spec, `${p}.ephemeral.volumeClaimTemplate.spec`) ?? {},
        `${p}.ephemeral.volumeClaimTemplate.spec`,
      );
  });
  typed(spec.nodeName, 'spec.nodeName', 'string');
  typed(spec.priority, 'spec.priority', 'number');
  typed(spec.priorityClassName, 'spec.priorityClassName', 'string');
  stringMap(spec.nodeSelector, 'spec.nodeSelector');
  resourceList(spec.overhead, 'spec.overhead');
  const status = record(o.status, 'status');
  typed(status?.phase, 'status.phase', 'string');
  typed(status?.nominatedNodeName, 'status.nominatedNodeName', 'string');
}

function node(o: Json): void {
  const spec = record(o.spec, 'spec');
  typed(spec?.unschedulable, 'spec.unschedulable', 'boolean');
  each(spec?.taints, 'spec.taints', (t, p) => {
    typed(t.key, `${p}.key`, 'string');
    typed(t.value, `${p}.value`, 'string');
    typed(t.effect, `${p}.effect`, 'string');
  });
  const status = record(o.status, 'status');
  resourceList(status?.allocatable, 'status.allocatable');
  resourceList(status?.capacity, 'status.capacity');
}

function persistentVolume(o: Json): void {
  const spec = record(o.spec, 'spec') ?? {};
  resourceList(spec.capacity, 'spec.capacity');
  strings(spec.accessModes, 'spec.accessModes');
  const ref = record(spec.claimRef, 'spec.claimRef');
  for (const f of ['namespace', 'name', 'uid']) typed(ref?.[f], `spec.claimRef.${f}`, 'string');
  typed(spec.storageClassName, 'spec.storageClassName', 'string');
  typed(spec.volumeMode, 'spec.volumeMode', 'string');
  const affinity = record(record(spec.nodeAffinity, 'spec.nodeAffinity')?.required, 'spec.nodeAffinity.required');
  each(affinity?.nodeSelectorTerms, 'spec.nodeAffinity.required.nodeSelectorTerms', (term, p) => {
    each(term.matchExpressions, `${p}.matchExpressions`, requirement);
    each(term.matchFields, `${p}.matchFields`, requirement);
  });
  typed(record(spec.csi, 'spec.csi')?.driver, 'spec.csi.driver', 'string');
  typed(record(o.status, 'status')?.phase, 'status.phase', 'string');
}

function claimSpec(spec: Json, path: string): void {
  strings(spec.accessModes, `${path}.accessModes`);
  const resources = record(spec.resources, `${path}.resources`);
  resourceList(resources?.requests, `${path}.resources.requests`);
  resourceList(resources?.limits, `${path}.resources.limits`);
  typed(spec.volumeName, `${path}.volumeName`, 'string');
  typed(spec.storageClassName, `${path}.storageClassName`, 'string');
  typed(spec.volumeMode, `${path}.volumeMode`, 'string');
  labelSelector(spec.selector, `${path}.selector`);
}

function persistentVolumeClaim(o: Json): void {
  claimSpec(record(o.spec, 'spec') ?? {}, 'spec');
  const status = record(o.status, 'status');
  typed(status?.phase, 'status.phase', 'string');
  resourceList(status?.capacity, 'status.capacity');
}

function storageClass(o: Json): void {
  if (typeof o.provisioner !== 'string')
    throw new FieldError('provisioner', `expected a string, got ${describe(o.provisioner)}`);
  typed(o.volumeBindingMode, 'volumeBindingMode', 'string');
  stringMap(o.parameters, 'parameters');
  each(o.allowedTopologies, 'allowedTopologies', (term, p) => {
    each(term.matchLabelExpressions, `${p}.matchLabelExpressions`, (e, pe) => {
      typed(e.key, `${pe}.key`, 'string');
      strings(e.values, `${pe}.values`);
    });
  });
}

function csiNode(o: Json): void {
  each(record(o.spec, 'spec')?.drivers, 'spec.drivers', (d, p) => {
    typed(d.name, `${p}.name`, 'string');
    typed(d.nodeID, `${p}.nodeID`, 'string');
    strings(d.topologyKeys, `${p}.topologyKeys`);
    typed(record(d.allocatable, `${p}.allocatable`)?.count, `${p}.allocatable.count`, 'number');
  });
}

function csiDriver(o: Json): void {
  const spec = record(o.spec, 'spec');
  typed(spec?.storageCapacity, 'spec.storageCapacity', 'boolean');
  typed(spec?.attachRequired, 'spec.attachRequired', 'boolean');
}

function csiStorageCapacity(o: Json): void {
  if (typeof o.storageClassName !== 'string') {
    throw new FieldError('storageClassName', `expected a string, got ${describe(o.storageClassName)}`);
  }
  quantity(o.capacity, 'capacity');
  quantity(o.maximumVolumeSize, 'maximumVolumeSize');
  labelSelector(o.nodeTopology, 'nodeTopology');
}

function podDisruptionBudget(o: Json): void {
  const spec = record(o.spec, 'spec');
  labelSelector(spec?.selector, 'spec.selector');
  intOrString(spec?.minAvailable, 'spec.minAvailable');
  intOrString(spec?.maxUnavailable, 'spec.maxUnavailable');
  typed(record(o.status, 'status')?.disruptionsAllowed, 'status.disruptionsAllowed', 'number');
}

function priorityClass(o: Json): void {
  if (typeof o.value !== 'number') throw new FieldError('value', `expected a number, got ${describe(o.value)}`);
  typed(o.globalDefault, 'globalDefault', 'boolean');
  typed(o.preemptionPolicy, 'preemptionPolicy', 'string');
}

const CHECKS: Record<Kind, (o: Json) => void> = {
  Node: node,
  Pod: pod,
  PersistentVolume: persistentVolume,
  PersistentVolumeClaim: persistentVolumeClaim,
  StorageClass: storageClass,
  CSINode: csiNode,
  CSIDriver: csiDriver,
  CSIStorageCapacity: csiStorageCapacity,
  PodDisruptionBudget: podDisruptionBudget,
  PriorityClass: priorityClass,
};

/** Throws FieldError for the first field that does not have the documented type. */
export function validateObject(kind: Kind, obj: Json): void {
  metadata(obj);
  CHECKS[kind](obj);
}
