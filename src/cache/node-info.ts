// NodeInfo: everything the scheduler knows about one node, aggregated from the pods on it
// (upstream pkg/scheduler/framework/types.go). The read-only view below is what plugins see.
import type { Node, Pod } from '../cluster/types.ts';
import { orNone, type PodUsage, podClaimKeys, podHostPorts, podInlineCSIVolumes } from './pod-usage.ts';
import {
  addResource,
  cloneResource,
  emptyResource,
  type PodResource,
  resourceFromList,
  sharedPodResource,
} from './resources.ts';

/** Resource amounts in base units: milli-CPU, bytes, counts; extended resources by name. */
export interface Resource {
  milliCPU: number;
  memory: number;
  ephemeralStorage: number;
  pods: number;
  scalar: Record<string, number>;
}

export interface PodInfo {
  readonly pod: Pod;
  /** Assumed by our bind, not yet confirmed by the watch. */
  readonly assumed: boolean;
}

export interface NodeInfo {
  readonly name: string;
  /** The Node object; undefined for a ghost (node deleted while pods still reference it). */
  readonly node: Node | undefined;
  /** Pods on the node, keyed by UID. */
  readonly pods: ReadonlyMap<string, PodInfo>;
  readonly allocatable: Readonly<Resource>;
  readonly requested: Readonly<Resource>;
  /** Requested with upstream's defaults (100m CPU, 200 MB memory) for containers that request nothing. */
  readonly nonZeroRequested: Readonly<Resource>;
  /** "protocol/hostIP/port" → count. */
  readonly usedPorts: ReadonlyMap<string, number>;
  /** Image name → size in bytes, from node status. */
  readonly imageStates: ReadonlyMap<string, number>;
  /** "namespace/claimName" → number of pods on this node that use the claim. */
  readonly pvcRefCounts: ReadonlyMap<string, number>;
  /** CSI driver name → inline CSI volumes (by handle) of pods on this node. */
  readonly csiVolumes: ReadonlyMap<string, ReadonlySet<string>>;
  /** Pods with any pod affinity or anti-affinity term (upstream PodsWithAffinity), keyed by UID; kept by the cache. */
  readonly podsWithAffinity?: ReadonlyMap<string, PodInfo>;
  /** Pods with a required anti-affinity term (upstream PodsWithRequiredAntiAffinity), keyed by UID. */
  readonly podsWithRequiredAntiAffinity?: ReadonlyMap<string, PodInfo>;
  /** Value of the global generation counter at this node's last change. */
  readonly generation: number;
  /**
   * A small integer the cache gives the node while it holds it (reused after), for per-node dense arrays (see
   * src/volumes/free-pv-rows.ts); -1 or absent for a NodeInfo outside a cache. Data kept by ordinal must still check
   * it is about the same node (same labels object): a NodeInfo of another cache may carry the same number.
   */
  readonly ordinal?: number;
}

// ---------------------------------------------------------------------------------------------------------------
// The mutable NodeInfo the cache owns. Every change takes a new number from one process-wide counter, so a snapshot
// can tell which nodes changed since it was taken (upstream nextGeneration; never reused, even across node re-adds).

let lastGeneration = 0;

export function nextGeneration(): number {
  return ++lastGeneration;
}

/**
 * A pod on a node, with its usage computed once (upstream PodInfo with its cached PodResource). The cache holds one per
 * running pod, so the usage lives in its own fields rather than in objects of its own.
 */
export class CachedPodInfo implements PodInfo, PodUsage {
  readonly pod: Pod;
  readonly assumed: boolean;
  readonly resource: PodResource;
  readonly hostPorts: readonly string[];
  readonly claims: readonly string[];
  readonly csiVolumes: readonly (readonly [string, string])[];

  constructor(pod: Pod, assumed: boolean) {
    this.pod = pod;
    this.assumed = assumed;
    this.resource = sharedPodResource(pod);
    this.hostPorts = orNone(podHostPorts(pod));
    this.claims = orNone(podClaimKeys(pod));
    this.csiVolumes = orNone(podInlineCSIVolumes(pod));
  }

  /** Where the pod is: a cached pod always has one. */
  get nodeName(): string {
    return this.pod.spec.nodeName!;
  }
}

const NO_PODS: ReadonlyMap<string, CachedPodInfo> = new Map();

function bump(counts: Map<string, number>, key: string, sign: 1 | -1): void {
  const next = (counts.get(key) ?? 0) + sign;
  if (next <= 0) counts.delete(key);
  else counts.set(key, next);
}

export class MutableNodeInfo implements NodeInfo {
  readonly name: string;
  ordinal = -1;
  #node: Node | undefined;
  #pods = new Map<string, CachedPodInfo>();
  #allocatable: Resource = emptyResource();
  #requested: Resource = emptyResource();
  #nonZeroRequested: Resource = emptyResource();
  #usedPorts = new Map<string, number>();
  #imageStates = new Map<string, number>();
  #pvcRefCounts = new Map<string, number>();
  #csiVolumes = new Map<string, Set<string>>();
  // Created with the first pod that has (anti-)affinity: most nodes never hold one, and the verbs never read them.
  #podsWithAffinity: Map<string, CachedPodInfo> | undefined;
  #podsWithRequiredAntiAffinity: Map<string, CachedPodInfo> | undefined;
  /** driver → handle → number of pods using it; the public sets above are its key sets. */
  #csiRefs = new Map<string, Map<string, number>>();
  #generation: number;

  constructor(name: string, node?: Node) {
    this.name = name;
    this.#generation = nextGeneration();
    if (node) this.setNode(node);
  }

  get node(): Node | undefined {
    return this.#node;
  }
  get pods(): ReadonlyMap<string, CachedPodInfo> {
    return this.#pods;
  }
  get allocatable(): Readonly<Resource> {
    return this.#allocatable;
  }
  get requested(): Readonly<Resource> {
    return this.#requested;
  }
  get nonZeroRequested(): Readonly<Resource> {
    return this.#nonZeroRequested;
  }
  get usedPorts(): ReadonlyMap<string, number> {
    return this.#usedPorts;
  }
  get imageStates(): ReadonlyMap<string, number> {
    return this.#imageStates;
  }
  get pvcRefCounts(): ReadonlyMap<string, number> {
    return this.#pvcRefCounts;
  }
  get csiVolumes(): ReadonlyMap<string, ReadonlySet<string>> {
    return this.#csiVolumes;
  }
  get podsWithAffinity(): ReadonlyMap<string, CachedPodInfo> {
    return this.#podsWithAffinity ?? NO_PODS;
  }
  get podsWithRequiredAntiAffinity(): ReadonlyMap<string, CachedPodInfo> {
    return this.#podsWithRequiredAntiAffinity ?? NO_PODS;
  }
  get generation(): number {
    return this.#generation;
  }

  /** Upstream SetNode: the node object, its allocatable and its images. */
  setNode(node: Node): void {
    this.#node = node;
    this.#allocatable = resourceFromList(node.status?.allocatable);
    this.#imageStates = new Map();
    for (const image of node.status?.images ?? []) {
      for (const name of image.names ?? []) this.#imageStates.set(name, image.sizeBytes ?? 0);
    }
    this.#generation = nextGeneration();
  }

  /** Upstream RemoveNode: forget the node object but keep the pods (a ghost until their deletions arrive). */
  removeNode(): void {
    this.#node = undefined;
    this.#allocatable = emptyResource();
    this.#imageStates = new Map();
    this.#generation = nextGeneration();
  }

  /** Adds a pod; a pod with the same UID is replaced, so aggregates never count a pod twice. */
  addPod(pod: Pod, assumed = false): CachedPodInfo {
    const info = new CachedPodInfo(pod, assumed);
    this.addPodInfo(info);
    return info;
  }

  addPodInfo(info: CachedPodInfo): void {
    const uid = info.pod.metadata.uid;
    if (this.#pods.has(uid)) this.removePod(uid);
    this.#pods.set(uid, info);
    this.#apply(info, 1);
  }

  /** Subtracts what the pod added; returns it, or undefined when the node does not hold that UID. */
  removePod(uid: string): CachedPodInfo | undefined {
    const info = this.#pods.get(uid);
    if (!info) return undefined;
    this.#pods.delete(uid);
    this.#apply(info, -1);
    return info;
  }

  /** A deep copy of the aggregates sharing the (immutable) pod objects; keeps the generation. */
  clone(): MutableNodeInfo {
    const c = new MutableNodeInfo(this.name);
    c.#node = this.#node;
    c.#pods = new Map(this.#pods);
    c.#allocatable = cloneResource(this.#allocatable);
    c.#requested = cloneResource(this.#requested);
    c.#nonZeroRequested = cloneResource(this.#nonZeroRequested);
    c.#usedPorts = new Map(this.#usedPorts);
    c.#imageStates = this.#imageStates; // replaced, never mutated, by setNode/removeNode
    c.#pvcRefCounts = new Map(this.#pvcRefCounts);
    for (const [driver, set] of this.#csiVolumes) c.#csiVolumes.set(driver, new Set(set));
    for (const [driver, refs] of this.#csiRefs) c.#csiRefs.set(driver, new Map(refs));
    if (this.#podsWithAffinity) c.#podsWithAffinity = new Map(this.#podsWithAffinity);
    if (this.#podsWithRequiredAntiAffinity)
      c.#podsWithRequiredAntiAffinity = new Map(this.#podsWithRequiredAntiAffinity);
    c.#generation = this.#generation;
    c.ordinal = this.ordinal;
    return c;
  }

  #apply(info: CachedPodInfo, sign: 1 | -1): void {
    const { resource, hostPorts, claims, csiVolumes } = info;
    addResource(this.#requested, resource.requests, sign);
    addResource(
      this.#nonZeroRequested,
      { ...resource.requests, milliCPU: resource.nonZeroMilliCPU, memory: resource.nonZeroMemory },
      sign,
    );
    for (const key of hostPorts) bump(this.#usedPorts, key, sign);
    for (const key of claims) bump(this.#pvcRefCounts, key, sign);
    for (const [driver, handle] of csiVolumes) this.#updateCSI(driver, handle, sign);
    const affinity = info.pod.spec.affinity;
    if (affinity?.podAffinity || affinity?.podAntiAffinity) {
      const uid = info.pod.metadata.uid;
      this.#podsWithAffinity ??= new Map();
      if (sign > 0) this.#podsWithAffinity.set(uid, info);
      else this.#podsWithAffinity.delete(uid);
      if (affinity.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.length) {
        this.#podsWithRequiredAntiAffinity ??= new Map();
        if (sign > 0) this.#podsWithRequiredAntiAffinity.set(uid, info);
        else this.#podsWithRequiredAntiAffinity.delete(uid);
      }
    }
    this.#generation = nextGeneration();
  }

  #updateCSI(driver: string, handle: string, sign: 1 | -1): void {
    let refs = this.#csiRefs.get(driver);
    if (!refs) {
      refs = new Map();
      this.#csiRefs.set(driver, refs);
    }
    bump(refs, handle, sign);
    if (refs.has(handle)) {
      let set = this.#csiVolumes.get(driver);
      if (!set) {
        set = new Set();
        this.#csiVolumes.set(driver, set);
      }
      set.add(handle);
    } else {
      this.#csiVolumes.get(driver)?.delete(handle);
    }
    if (refs.size === 0) {
      this.#csiRefs.delete(driver);
      this.#csiVolumes.delete(driver);
    }
  }
}

/** A NodeInfo built from scratch (upstream NewNodeInfo), for snapshots built from lists and for tests. */
export function newNodeInfo(
  node: Node | undefined,
  pods: readonly Pod[] = [],
  name = node?.metadata.name,
): MutableNodeInfo {
  if (name === undefined) throw new Error('newNodeInfo needs a node or a name');
  const info = new MutableNodeInfo(name, node);
  for (const pod of pods) info.addPod(pod);
  return info;
}

/**
 * A private mutable copy of any NodeInfo, for "what if" questions (upstream nodeInfo.Snapshot() before preemption
 * removes victims or filters add nominated pods). Cheap for NodeInfos from the cache or a snapshot.
 */
export function copyNodeInfo(info: NodeInfo): MutableNodeInfo {
  if (info instanceof MutableNodeInfo) return info.clone();
  const copy = new MutableNodeInfo(info.name, info.node);
  copy.ordinal = info.ordinal ?? -1;
  for (const p of info.pods.values()) copy.addPod(p.pod, p.assumed);
  return copy;
}
