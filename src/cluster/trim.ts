// Trimming keeps only what scheduling reads, so 150,000 cached pods fit comfortably in memory, and normalises
// timestamps: objects from a list carry Date objects, objects from a watch carry strings; inside we use strings.
import {
  type Container,
  type Kind,
  type KindMap,
  type LabelSelector,
  type ObjectMeta,
  type OwnerReference,
  type Pod,
  type ReplicaSet,
  type Service,
  SPREAD_SELECTOR_KINDS,
  type Volume,
} from './types.ts';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

// Values repeated across thousands of pods (namespaces, label keys and values, scheduler names, quantities) are kept
// once: a parsed JSON string is a fresh copy per object, an interned one is shared. Short strings only; bounded pool.
const INTERN_MAX_LENGTH = 64;
const INTERN_MAX_ENTRIES = 100_000;
const pool = new Map<string, string>();
function intern<T extends string | undefined>(s: T): T {
  if (s === undefined || s.length > INTERN_MAX_LENGTH) return s;
  const hit = pool.get(s);
  if (hit !== undefined) return hit as T;
  if (pool.size < INTERN_MAX_ENTRIES) pool.set(s, s);
  return s;
}
function internRecord<V extends string | number>(r: Record<string, V>): Record<string, V> {
  const out: Record<string, V> = {};
  for (const [k, v] of Object.entries(r)) out[intern(k)] = (typeof v === 'string' ? intern(v) : v) as V;
  return out;
}

// Pods of one workload carry the same containers and labels: a trimmed container list or pod label set equal to one
// already held is replaced by it (held objects are never mutated, see `trimmed` below). Bounded like the string pool.
const SHARED_MAX_ENTRIES = 50_000;
const sharedPool = new Map<string, object>();
/** PVs' and claims' parts, apart from the pods' so that neither crowds the other out of its bound. */
const volumePool = new Map<string, object>();
function shared<T extends object>(value: T, pool = sharedPool): T {
  const key = JSON.stringify(value);
  const hit = pool.get(key);
  if (hit !== undefined) return hit as T;
  if (pool.size < SHARED_MAX_ENTRIES) pool.set(key, value);
  return value;
}

/**
 * A PV or claim repeats its class's capacity, access modes and source, and a local PV its node's affinity (ten PVs
 * a node): those parts of the spec, the status and the annotations are held once. A claim reference and a CSI source
 * name one volume's own claim and handle: pooling them would only fill the pool.
 */
function shareVolumeParts(obj: { metadata: ObjectMeta; spec?: object; status?: object }): void {
  const spec = obj.spec as Record<string, unknown> | undefined;
  if (spec) {
    for (const key of Object.keys(spec)) {
      const value = spec[key];
      if (key !== 'claimRef' && key !== 'csi' && value !== null && typeof value === 'object')
        spec[key] = shared(value, volumePool);
    }
  }
  if (obj.status) obj.status = shared(obj.status, volumePool);
  if (obj.metadata.annotations) obj.metadata.annotations = shared(obj.metadata.annotations, volumePool);
}

/**
 * A parsed JSON value with its strings interned: PV and claim specs repeat class names, access modes, volume modes and
 * topology keys in every object. Objects that are not plain (a Date from a list) are kept as they are.
 */
function internDeep<T>(value: T): T {
  if (typeof value === 'string') return intern(value);
  if (Array.isArray(value)) return value.map(internDeep) as T;
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = internDeep(v);
    return out as T;
  }
  return value;
}

/** Interned too: a rollout creates its pods within the same few seconds, and a cluster-state file often has one. */
function timestamp(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (value instanceof Date) return intern(value.toISOString().replace(/\.\d{3}Z$/, 'Z'));
  return intern(String(value));
}

function trimMeta(meta: ObjectMeta): ObjectMeta {
  const out: ObjectMeta = { name: meta.name, uid: meta.uid, resourceVersion: meta.resourceVersion };
  if (meta.namespace !== undefined) out.namespace = meta.namespace;
  if (meta.labels && Object.keys(meta.labels).length > 0) out.labels = meta.labels;
  if (meta.annotations) {
    const { [LAST_APPLIED]: _dropped, ...rest } = meta.annotations;
    if (Object.keys(rest).length > 0) out.annotations = rest;
  }
  const created = timestamp(meta.creationTimestamp);
  if (created) out.creationTimestamp = created;
  const deleted = timestamp(meta.deletionTimestamp);
  if (deleted) out.deletionTimestamp = deleted;
  if (meta.ownerReferences?.length) {
    out.ownerReferences = meta.ownerReferences.map(({ apiVersion, kind, name, uid, controller }) =>
      controller === undefined ? { apiVersion, kind, name, uid } : { apiVersion, kind, name, uid, controller },
    );
  }
  return out;
}

// A workload's pods name the same controller: one held list per controller, found by its identity (cheaper than
// `shared`'s JSON key on every pod). Bounded like the other pools.
const controllerPool = new Map<string, OwnerReference[]>();
function controllerReference({ apiVersion, kind, name, uid }: OwnerReference): OwnerReference[] {
  const hit = controllerPool.get(uid);
  const held = hit?.[0];
  if (held && held.name === name && held.kind === kind && held.apiVersion === apiVersion) return hit;
  const refs = [{ apiVersion: intern(apiVersion), kind: intern(kind), name, uid, controller: true }];
  if (controllerPool.size < SHARED_MAX_ENTRIES) controllerPool.set(uid, refs);
  return refs;
}

/**
 * Pods: scheduling reads no pod annotation, and of the owner references only the controller's (PodTopologySpread's
 * default selector looks its ReplicaSet, StatefulSet or ReplicationController up), shared across its pods; there are
 * 150,000 of them. Built by a constructor (see `plain`) so that every property lives in the object itself.
 */
function PodMeta(this: ObjectMeta, meta: ObjectMeta) {
  this.name = meta.name;
  this.uid = meta.uid;
  this.resourceVersion = meta.resourceVersion;
  if (meta.namespace !== undefined) this.namespace = intern(meta.namespace);
  if (meta.labels && Object.keys(meta.labels).length > 0) this.labels = shared(internRecord(meta.labels));
  const controller = meta.ownerReferences?.find((r) => r.controller === true);
  if (controller) this.ownerReferences = controllerReference(controller);
  const created = timestamp(meta.creationTimestamp);
  if (created) this.creationTimestamp = created;
  const deleted = timestamp(meta.deletionTimestamp);
  if (deleted) this.deletionTimestamp = deleted;
}

/**
 * A constructor's objects as plain objects: prototype Object.prototype, so no reader (JSON, structuredClone,
 * deepStrictEqual) tells them from literals. A literal given properties one by one keeps those beyond its own in a
 * separate array (tens of bytes more per object); V8 sizes a constructor's objects for the properties its first
 * objects were given, in the objects themselves. Held once per pod: 450,000 times at 15,000 nodes.
 */
function plain<A extends unknown[], T>(make: (this: T, ...args: A) => void): new (...args: A) => T {
  make.prototype = Object.prototype;
  return make as unknown as new (
    ...args: A
  ) => T;
}
const PodMetaObject = plain(PodMeta);

function trimContainer(c: Container): Container {
  const out: Container = { name: intern(c.name) };
  if (c.image !== undefined) out.image = intern(c.image);
  if (c.resources && (c.resources.requests || c.resources.limits)) {
    out.resources = {};
    if (c.resources.requests) out.resources.requests = internRecord(c.resources.requests);
    if (c.resources.limits) out.resources.limits = internRecord(c.resources.limits);
  }
  const hostPorts = c.ports?.filter((p) => p.hostPort);
  if (hostPorts?.length) {
    out.ports = hostPorts.map(({ containerPort, hostPort, hostIP, protocol }) => ({
      containerPort,
      hostPort,
      ...(hostIP ? { hostIP } : {}),
      ...(protocol ? { protocol } : {}),
    }));
  }
  if (c.restartPolicy) out.restartPolicy = c.restartPolicy;
  return out;
}

/** Volumes other than claims, ephemeral claims and CSI are kept by type name only (the attach-limit count needs it). */
function trimVolume(v: Volume): Volume {
  if (v.persistentVolumeClaim) return { name: v.name, persistentVolumeClaim: v.persistentVolumeClaim };
  if (v.ephemeral) return { name: v.name, ephemeral: v.ephemeral };
  if (v.csi) return { name: v.name, csi: { driver: v.csi.driver, volumeHandle: v.csi.volumeHandle } };
  const out: Volume = { name: v.name };
  for (const [key, value] of Object.entries(v)) {
    if (key !== 'name' && key !== 'configMap' && key !== 'secret' && key !== 'emptyDir' && key !== 'projected') {
      out[key] = value;
    }
  }
  return out;
}

function PodSpec(this: Pod['spec'], s: Pod['spec']) {
  this.containers = shared((s.containers ?? []).map(trimContainer));
  if (s.nodeName) this.nodeName = intern(s.nodeName);
  if (s.schedulerName) this.schedulerName = intern(s.schedulerName);
  if (s.priority !== undefined) this.priority = s.priority;
  if (s.priorityClassName) this.priorityClassName = intern(s.priorityClassName);
  if (s.preemptionPolicy) this.preemptionPolicy = intern(s.preemptionPolicy);
  if (s.initContainers?.length) this.initContainers = shared(s.initContainers.map(trimContainer));
  if (s.overhead) this.overhead = s.overhead;
  const volumes = s.volumes?.filter((v) => !v.configMap && !v.secret && !v.emptyDir && !v.projected && !v.downwardAPI);
  if (volumes?.length) this.volumes = volumes.map(trimVolume);
  if (s.nodeSelector) this.nodeSelector = s.nodeSelector;
  // What the default profile's other plugins read (explain and simulate run them); shared across a workload's pods.
  if (s.tolerations?.length) this.tolerations = shared(s.tolerations);
  if (s.affinity) this.affinity = shared(s.affinity);
  if (s.topologySpreadConstraints?.length) this.topologySpreadConstraints = shared(s.topologySpreadConstraints);
}
const PodSpecObject = plain(PodSpec);

function PodStatus(this: NonNullable<Pod['status']>, st: NonNullable<Pod['status']>) {
  if (st.phase) this.phase = intern(st.phase);
  if (st.nominatedNodeName) this.nominatedNodeName = st.nominatedNodeName;
  const start = timestamp(st.startTime);
  if (start) this.startTime = start;
  // kube-scheduler tried the pod and could not place it (or it is gated): the pending report explains it from then on.
  // Its message and times are left out, so a retry that rewrites them is not a change; a bound pod's True is not kept.
  const scheduled = st.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False') {
    const reason = intern(scheduled.reason);
    this.conditions = shared([{ type: 'PodScheduled', status: 'False', ...(reason ? { reason } : {}) }]);
  }
}
const PodStatusObject = plain(PodStatus);

function trimPod(pod: Pod): Pod {
  const spec = new PodSpecObject(pod.spec ?? { containers: [] });
  const metadata = new PodMetaObject(pod.metadata);
  return pod.status ? { metadata, spec, status: new PodStatusObject(pod.status) } : { metadata, spec };
}

/**
 * Objects trimObject returned. Trimming one again returns it as is: the cluster-state source trims what it loads and
 * hands the same objects to the store, which would otherwise hold a second copy of the whole cluster (held objects
 * are never mutated: writers commit modified copies).
 */
const trimmed = new WeakSet<object>();

/**
 * Returns a trimmed copy (or `raw` itself when trimObject made it); `kind`/`apiVersion` and status fields nobody
 * schedules on are dropped.
 */
export function trimObject<K extends Kind>(kind: K, raw: KindMap[K]): KindMap[K] {
  if (trimmed.has(raw)) return raw;
  const out = trimKind(kind, raw);
  trimmed.add(out);
  return out;
}

/** Namespace, name and what the store needs to tell versions apart: nothing of these kinds but the selector is read. */
function trimSelectorMeta(meta: ObjectMeta): ObjectMeta {
  const out: ObjectMeta = { name: meta.name, uid: meta.uid, resourceVersion: meta.resourceVersion };
  if (meta.namespace !== undefined) out.namespace = intern(meta.namespace);
  return out;
}

/** Services and ReplicationControllers select by a label map, ReplicaSets and StatefulSets by a LabelSelector. */
function trimSelectorKind(raw: Service | ReplicaSet): Service | ReplicaSet {
  const selector = (raw.spec as { selector?: Record<string, string> | LabelSelector | null } | undefined)?.selector;
  return {
    metadata: trimSelectorMeta(raw.metadata),
    spec: selector === undefined || selector === null ? {} : { selector: internDeep(selector) },
  } as Service | ReplicaSet;
}

const SELECTOR_KINDS: ReadonlySet<Kind> = new Set(SPREAD_SELECTOR_KINDS);

function trimKind<K extends Kind>(kind: K, raw: KindMap[K]): KindMap[K] {
  if (kind === 'Pod') return trimPod(raw as Pod) as KindMap[K];
  if (kind === 'Namespace') {
    // Its labels only (InterPodAffinity's namespaceSelector): no spec, status, annotations or finalizers.
    const meta = trimSelectorMeta(raw.metadata);
    if (raw.metadata.labels && Object.keys(raw.metadata.labels).length > 0)
      meta.labels = internRecord(raw.metadata.labels);
    return { metadata: meta } as KindMap[K];
  }
  if (SELECTOR_KINDS.has(kind)) return trimSelectorKind(raw as Service) as KindMap[K];
  const { apiVersion: _a, kind: _k, metadata, ...rest } = raw as KindMap[K] & { status?: unknown };
  // internDeep's fresh object has room for four properties in itself: metadata added there takes no separate array
  // (a spread into a literal would).
  const out = internDeep(rest) as unknown as KindMap[K] & { status?: Record<string, unknown> };
  out.metadata = trimMeta(metadata);
  if (kind === 'PersistentVolume' || kind === 'PersistentVolumeClaim') shareVolumeParts(out);
  if (kind === 'Node') {
    const node = out as KindMap['Node'];
    const status = node.status;
    if (status) {
      node.status = {};
      if (status.allocatable) node.status.allocatable = status.allocatable;
      if (status.capacity) node.status.capacity = status.capacity;
      if (status.images?.length) node.status.images = status.images;
      // Ready alone, without its heartbeat: explain names a lost node and since when (src/ops/lost-node.ts).
      const ready = status.conditions?.find((c) => c.type === 'Ready');
      if (ready) {
        const since = timestamp(ready.lastTransitionTime);
        node.status.conditions = [
          { type: 'Ready', status: ready.status, ...(since ? { lastTransitionTime: since } : {}) },
        ];
      }
    }
  }
  return out;
}
