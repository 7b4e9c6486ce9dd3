// Trimmed Kubernetes object types: only the fields scheduling reads, in the API's own JSON shape.
// Timestamps are RFC 3339 strings everywhere inside the process (sources normalise Date objects at the edge).

export type Quantity = string | number;
export type ResourceList = Record<string, Quantity>;

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid: string;
  resourceVersion: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  ownerReferences?: OwnerReference[];
}

export interface LabelSelectorRequirement {
  key: string;
  operator: string; // In | NotIn | Exists | DoesNotExist
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export interface NodeSelectorRequirement {
  key: string;
  operator: string; // In | NotIn | Exists | DoesNotExist | Gt | Lt
  values?: string[];
}

export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

export interface NodeSelector {
  nodeSelectorTerms: NodeSelectorTerm[];
}

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export interface Node {
  apiVersion?: string;
  kind?: 'Node';
  metadata: ObjectMeta;
  spec?: { unschedulable?: boolean; taints?: Taint[]; providerID?: string };
  status?: {
    allocatable?: ResourceList;
    capacity?: ResourceList;
    images?: { names?: string[]; sizeBytes?: number }[];
    /** Trimmed to Ready alone (explain's lost-node note). */
    conditions?: { type: string; status: string; lastTransitionTime?: string }[];
  };
}

export interface ContainerPort {
  containerPort: number;
  hostPort?: number;
  hostIP?: string;
  protocol?: string;
}

export interface Container {
  name: string;
  image?: string;
  resources?: { requests?: ResourceList; limits?: ResourceList };
  ports?: ContainerPort[];
  restartPolicy?: string; // "Always" marks a sidecar init container
}

export interface PersistentVolumeClaimSpec {
  accessModes?: string[];
  selector?: LabelSelector;
  resources?: { requests?: ResourceList; limits?: ResourceList };
  volumeName?: string;
  storageClassName?: string;
  volumeMode?: string;
  volumeAttributesClassName?: string;
  dataSource?: { kind: string; name: string; apiGroup?: string };
}

export interface Volume {
  name: string;
  persistentVolumeClaim?: { claimName: string; readOnly?: boolean };
  ephemeral?: { volumeClaimTemplate?: { metadata?: Partial<ObjectMeta>; spec: PersistentVolumeClaimSpec } };
  csi?: { driver: string; volumeHandle?: string };
  [inTree: string]: unknown; // in-tree sources (awsElasticBlockStore, gcePersistentDisk, ...) kept as given
}

export interface Toleration {
  key?: string;
  operator?: string; // Equal (default) | Exists
  value?: string;
  effect?: string; // empty matches every effect
  tolerationSeconds?: number;
}

export interface PreferredSchedulingTerm {
  weight: number;
  preference: NodeSelectorTerm;
}

export interface PodAffinityTerm {
  labelSelector?: LabelSelector | null;
  namespaces?: string[];
  namespaceSelector?: LabelSelector | null;
  topologyKey: string;
  matchLabelKeys?: string[];
  mismatchLabelKeys?: string[];
}

export interface WeightedPodAffinityTerm {
  weight: number;
  podAffinityTerm: PodAffinityTerm;
}

export interface PodAffinity {
  requiredDuringSchedulingIgnoredDuringExecution?: PodAffinityTerm[];
  preferredDuringSchedulingIgnoredDuringExecution?: WeightedPodAffinityTerm[];
}

export interface Affinity {
  nodeAffinity?: {
    requiredDuringSchedulingIgnoredDuringExecution?: NodeSelector | null;
    preferredDuringSchedulingIgnoredDuringExecution?: PreferredSchedulingTerm[];
  } | null;
  podAffinity?: PodAffinity | null;
  podAntiAffinity?: PodAffinity | null;
}

export interface TopologySpreadConstraint {
  maxSkew: number;
  topologyKey: string;
  whenUnsatisfiable: string; // DoNotSchedule | ScheduleAnyway
  labelSelector?: LabelSelector | null;
  minDomains?: number | null;
  nodeAffinityPolicy?: string | null; // Honor (default) | Ignore
  nodeTaintsPolicy?: string | null; // Ignore (default) | Honor
  matchLabelKeys?: string[] | null;
}

export interface Pod {
  apiVersion?: string;
  kind?: 'Pod';
  metadata: ObjectMeta;
  spec: {
    nodeName?: string;
    schedulerName?: string;
    priority?: number;
    priorityClassName?: string;
    preemptionPolicy?: string;
    containers: Container[];
    initContainers?: Container[];
    overhead?: ResourceList;
    volumes?: Volume[];
    nodeSelector?: Record<string, string>;
    tolerations?: Toleration[];
    affinity?: Affinity;
    topologySpreadConstraints?: TopologySpreadConstraint[];
  };
  status?: {
    phase?: string;
    nominatedNodeName?: string;
    startTime?: string;
    conditions?: { type: string; status: string; reason?: string }[];
  };
}

export interface ObjectReference {
  kind?: string;
  apiVersion?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  resourceVersion?: string;
}

export interface PersistentVolume {
  apiVersion?: string;
  kind?: 'PersistentVolume';
  metadata: ObjectMeta;
  spec: {
    capacity?: ResourceList;
    accessModes?: string[];
    claimRef?: ObjectReference;
    persistentVolumeReclaimPolicy?: string;
    storageClassName?: string;
    volumeMode?: string;
    volumeAttributesClassName?: string;
    nodeAffinity?: { required?: NodeSelector };
    csi?: { driver: string; volumeHandle: string; [key: string]: unknown };
    local?: { path: string };
    hostPath?: { path: string };
    [inTree: string]: unknown;
  };
  status?: { phase?: string };
}

export interface PersistentVolumeClaim {
  apiVersion?: string;
  kind?: 'PersistentVolumeClaim';
  metadata: ObjectMeta;
  spec: PersistentVolumeClaimSpec;
  status?: {
    phase?: string;
    capacity?: ResourceList;
    accessModes?: string[];
    /** Not read by any verdict (the PVC protection controller's Unused). */
    conditions?: { type: string; status: string; reason?: string }[];
  };
}

export interface TopologySelectorTerm {
  matchLabelExpressions?: { key: string; values: string[] }[];
}

export interface StorageClass {
  apiVersion?: string;
  kind?: 'StorageClass';
  metadata: ObjectMeta;
  provisioner: string;
  parameters?: Record<string, string>;
  reclaimPolicy?: string;
  volumeBindingMode?: string; // Immediate | WaitForFirstConsumer
  allowedTopologies?: TopologySelectorTerm[];
  allowVolumeExpansion?: boolean;
}

export interface CSINode {
  apiVersion?: string;
  kind?: 'CSINode';
  metadata: ObjectMeta;
  spec: { drivers?: { name: string; nodeID: string; topologyKeys?: string[]; allocatable?: { count?: number } }[] };
}

export interface CSIDriver {
  apiVersion?: string;
  kind?: 'CSIDriver';
  metadata: ObjectMeta;
  spec: { attachRequired?: boolean; storageCapacity?: boolean; volumeLifecycleModes?: string[] };
}

export interface CSIStorageCapacity {
  apiVersion?: string;
  kind?: 'CSIStorageCapacity';
  metadata: ObjectMeta;
  storageClassName: string;
  nodeTopology?: LabelSelector;
  capacity?: Quantity;
  maximumVolumeSize?: Quantity;
}

export interface PodDisruptionBudget {
  apiVersion?: string;
  kind?: 'PodDisruptionBudget';
  metadata: ObjectMeta;
  spec: { selector?: LabelSelector; minAvailable?: number | string; maxUnavailable?: number | string };
  status?: { disruptionsAllowed?: number; disruptedPods?: Record<string, string> };
}

export interface PriorityClass {
  apiVersion?: string;
  kind?: 'PriorityClass';
  metadata: ObjectMeta;
  value: number;
  globalDefault?: boolean;
  preemptionPolicy?: string;
}

/**
 * The objects kube-scheduler's PodTopologySpread reads to build a pod's default spreading selector
 * (helper.DefaultSelector): a Service by the labels its selector matches, the controllers by the pod's controller
 * reference. Trimmed to namespace, name and selector: a large cluster holds tens of thousands of ReplicaSets.
 */
export interface Service {
  apiVersion?: string;
  kind?: 'Service';
  metadata: ObjectMeta;
  /** A Service without a selector (absent, or null in the API) selects nothing. */
  spec: { selector?: Record<string, string> };
}

export interface ReplicationController {
  apiVersion?: string;
  kind?: 'ReplicationController';
  metadata: ObjectMeta;
  spec: { selector?: Record<string, string> };
}

export interface ReplicaSet {
  apiVersion?: string;
  kind?: 'ReplicaSet';
  metadata: ObjectMeta;
  spec: { selector?: LabelSelector };
}

export interface StatefulSet {
  apiVersion?: string;
  kind?: 'StatefulSet';
  metadata: ObjectMeta;
  spec: { selector?: LabelSelector };
}

/** A namespace's labels, which InterPodAffinity's namespaceSelector matches; nothing else of it is read. */
export interface Namespace {
  apiVersion?: string;
  kind?: 'Namespace';
  metadata: ObjectMeta;
}

/** Every kind the extender stores, by its API `kind` name. */
export interface KindMap {
  Node: Node;
  Pod: Pod;
  PersistentVolume: PersistentVolume;
  PersistentVolumeClaim: PersistentVolumeClaim;
  StorageClass: StorageClass;
  CSINode: CSINode;
  CSIDriver: CSIDriver;
  CSIStorageCapacity: CSIStorageCapacity;
  PodDisruptionBudget: PodDisruptionBudget;
  PriorityClass: PriorityClass;
  Service: Service;
  ReplicationController: ReplicationController;
  ReplicaSet: ReplicaSet;
  StatefulSet: StatefulSet;
  Namespace: Namespace;
}

export type Kind = keyof KindMap;
export type AnyObject = KindMap[Kind];

export const KINDS: readonly Kind[] = [
  'Node',
  'Pod',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'StorageClass',
  'CSINode',
  'CSIDriver',
  'CSIStorageCapacity',
  'PodDisruptionBudget',
  'PriorityClass',
  'Service',
  'ReplicationController',
  'ReplicaSet',
  'StatefulSet',
  'Namespace',
];

/** The kinds only PodTopologySpread's default constraints read (explain and simulate), never the verbs. */
export const SPREAD_SELECTOR_KINDS: readonly Kind[] = ['Service', 'ReplicationController', 'ReplicaSet', 'StatefulSet'];

/** Kinds whose objects live in a namespace; their store key is `namespace/name`. */
export const NAMESPACED: ReadonlySet<Kind> = new Set<Kind>([
  'Pod',
  'PersistentVolumeClaim',
  'CSIStorageCapacity',
  'PodDisruptionBudget',
  'Service',
  'ReplicationController',
  'ReplicaSet',
  'StatefulSet',
]);

/** The store key of an object: `namespace/name` for namespaced kinds, `name` otherwise. */
/** The namespace of a namespaced object that omits it: the API server defaults it, requests and files may not. */
export const DEFAULT_NAMESPACE = 'default';

/** An object's namespace, DEFAULT_NAMESPACE when the field is absent (an empty one is kept, as the API keeps it). */
export function namespaceOf(obj: { metadata: { namespace?: string } }): string {
  return obj.metadata.namespace ?? DEFAULT_NAMESPACE;
}

// Every namespaced key held (the store's, the cluster-state file's, the caches' and indexes') starts with its
// namespace: built on one held `namespace/` per namespace, a key is a single concatenation instead of a copied prefix
// plus one. Bounded: namespaces are few.
const PREFIX_MAX_ENTRIES = 100_000;
const namespacePrefixes = new Map<string, string>();
function namespacePrefix(namespace: string): string {
  let prefix = namespacePrefixes.get(namespace);
  if (prefix === undefined) {
    prefix = `${namespace}/`;
    if (namespacePrefixes.size < PREFIX_MAX_ENTRIES) namespacePrefixes.set(namespace, prefix);
  }
  return prefix;
}

/** `namespace/name`, on the held prefix (for keys that are kept, like the store's). */
export function namespacedKey(namespace: string, name: string): string {
  return namespacePrefix(namespace) + name;
}

export function objectKey(kind: Kind, obj: { metadata: { name: string; namespace?: string } }): string {
  return NAMESPACED.has(kind) ? namespacedKey(namespaceOf(obj), obj.metadata.name) : obj.metadata.name;
}
