// Small object builders for the cache tests: only the fields a test is about.
import type { Container, Node, Pod, ResourceList, Volume } from '../../src/cluster/types.ts';

let rv = 0;

export interface PodOptions {
  uid?: string;
  namespace?: string;
  node?: string;
  requests?: ResourceList;
  containers?: Container[];
  initContainers?: Container[];
  overhead?: ResourceList;
  volumes?: Volume[];
  phase?: string;
}

export function makePod(name: string, o: PodOptions = {}): Pod {
  const pod: Pod = {
    metadata: { name, namespace: o.namespace ?? 'default', uid: o.uid ?? `uid-${name}`, resourceVersion: `${++rv}` },
    spec: { containers: o.containers ?? [{ name: 'c', resources: o.requests ? { requests: o.requests } : undefined }] },
  };
  if (o.node) pod.spec.nodeName = o.node;
  if (o.initContainers) pod.spec.initContainers = o.initContainers;
  if (o.overhead) pod.spec.overhead = o.overhead;
  if (o.volumes) pod.spec.volumes = o.volumes;
  if (o.phase) pod.status = { phase: o.phase };
  return pod;
}

/** The same pod (same UID) with changes, as the next watch event would carry it. */
export function withChanges(pod: Pod, o: PodOptions): Pod {
  const next = makePod(pod.metadata.name, {
    uid: pod.metadata.uid,
    namespace: pod.metadata.namespace,
    node: pod.spec.nodeName,
    containers: pod.spec.containers,
    volumes: pod.spec.volumes,
    ...o,
  });
  return next;
}

export interface NodeOptions {
  zone?: string;
  region?: string;
  labels?: Record<string, string>;
  allocatable?: ResourceList;
  images?: { names?: string[]; sizeBytes?: number }[];
}

export function makeNode(name: string, o: NodeOptions = {}): Node {
  const labels: Record<string, string> = { ...o.labels };
  if (o.zone !== undefined) labels['topology.kubernetes.io/zone'] = o.zone;
  if (o.region !== undefined) labels['topology.kubernetes.io/region'] = o.region;
  const node: Node = { metadata: { name, uid: `node-uid-${name}`, resourceVersion: `${++rv}`, labels }, status: {} };
  node.status!.allocatable = o.allocatable ?? { cpu: '4', memory: '8Gi', pods: '110' };
  if (o.images) node.status!.images = o.images;
  return node;
}
