// Conformance harness: a cluster state per case, served by the whole extender (cluster-state source, simulated volume
// controller, cache, plugins, verbs, HTTP), and driven the way kube-scheduler drives it: filter, prioritize, bind.
// Builders follow upstream's test/integration/volumescheduling/util.go (makePV, makePVC, makePod, storage classes).
import type {
  AnyObject,
  CSIStorageCapacity,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  StorageClass,
} from '../../src/cluster/types.ts';
import type { Settings } from '../../src/config.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import * as build from '../helpers/objects.ts';

export const NS = 'volume-scheduling';
export const PROVISIONER = 'mock-provisioner.kubernetes.io';
let seq = 0;
const uid = (s: string) => `${s}-${++seq}`;

export function makeNode(name: string, labels: Record<string, string> = {}): Node {
  return build.makeNode(name, { labels, uid: uid(name), allocatable: { cpu: '4', memory: '16Gi', pods: '110' } });
}

export function makeStorageClass(
  name: string,
  mode: string,
  provisioner = 'kubernetes.io/no-provisioner',
): StorageClass {
  return build.makeStorageClass(name, { uid: uid(name), mode, provisioner });
}

export function makeDynamicProvisionerStorageClass(
  name: string,
  mode: string,
  allowedTopologies?: StorageClass['allowedTopologies'],
): StorageClass {
  return { ...makeStorageClass(name, mode, PROVISIONER), ...(allowedTopologies ? { allowedTopologies } : {}) };
}

/** A local PV on `node` (5Gi, RWO), optionally pre-bound to a claim of NS; `phase` Available unless bound. */
export function makePV(
  name: string,
  scName: string,
  preboundPVC: string,
  node: string,
  opts: { size?: string; boundClaimUID?: string } = {},
): PersistentVolume {
  return build.makePV(name, {
    uid: uid(name),
    className: scName,
    size: opts.size ?? '5Gi',
    phase: preboundPVC && opts.boundClaimUID ? 'Bound' : 'Available',
    ...(node ? { affinity: { 'kubernetes.io/hostname': [node] } } : {}),
    spec: {
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      local: { path: '/test-path' },
      ...(preboundPVC
        ? { claimRef: { name: preboundPVC, namespace: NS, ...(opts.boundClaimUID ? { uid: opts.boundClaimUID } : {}) } }
        : {}),
    },
  });
}

/** A 5Gi RWO claim of NS; `volumeName` pre-binds it; `bound` marks the PV controller's work as done. */
export function makePVC(
  name: string,
  scName: string,
  volumeName = '',
  opts: { bound?: boolean; uid?: string; size?: string } = {},
): PersistentVolumeClaim {
  return build.makePVC(name, {
    namespace: NS,
    uid: opts.uid ?? uid(name),
    className: scName,
    volumeName,
    size: opts.size ?? '5Gi',
    phase: opts.bound ? 'Bound' : 'Pending',
    bindCompleted: opts.bound ?? false,
    spec: { accessModes: ['ReadWriteOnce'] },
  });
}

/** A claim and its PV as the PV controller leaves them once bound (what an Immediate claim looks like at scheduling). */
export function boundPair(
  pvName: string,
  pvcName: string,
  scName: string,
  node: string,
): [PersistentVolume, PersistentVolumeClaim] {
  const claimUID = uid(pvcName);
  return [
    makePV(pvName, scName, pvcName, node, { boundClaimUID: claimUID }),
    makePVC(pvcName, scName, pvName, { bound: true, uid: claimUID }),
  ];
}

export function makePod(name: string, claims: string[]): Pod {
  return build.makePod(name, {
    namespace: NS,
    uid: uid(name),
    containers: [{ name: 'c', image: 'registry.k8s.io/pause', resources: { requests: { cpu: '10m' } } }],
    claims,
  });
}

export function makeCapacity(
  name: string,
  scName: string,
  capacity: string,
  nodeTopology: CSIStorageCapacity['nodeTopology'] = {},
): CSIStorageCapacity {
  return build.makeCSIStorageCapacity(name, { uid: uid(name), className: scName, nodeTopology, capacity });
}

export interface FilterAnswer {
  NodeNames: string[];
  FailedNodes: Record<string, string>;
  FailedAndUnresolvableNodes: Record<string, string>;
  Error: string;
}

export class Conformance {
  readonly t: TestExtender;
  constructor(t: TestExtender) {
    this.t = t;
  }

  static async start(objects: AnyObject[], settings: Partial<Settings> = {}): Promise<Conformance> {
    return new Conformance(await createTestExtender(objects, settings));
  }

  /** kube-scheduler's filter request in node-cache mode. */
  async filter(pod: Pod, nodeNames: string[]): Promise<FilterAnswer> {
    const res = await this.t.request
      .post('/scheduler/filter')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ Pod: pod, Nodes: null, NodeNames: nodeNames }));
    if (res.status !== 200) throw new Error(`filter answered ${res.status}: ${res.text}`);
    return res.body as FilterAnswer;
  }

  async prioritize(pod: Pod, nodeNames: string[]): Promise<Record<string, number>> {
    const res = await this.t.request
      .post('/scheduler/prioritize')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ Pod: pod, Nodes: null, NodeNames: nodeNames }));
    if (res.status !== 200) throw new Error(`prioritize answered ${res.status}: ${res.text}`);
    return Object.fromEntries((res.body as { Host: string; Score: number }[]).map((h) => [h.Host, h.Score]));
  }

  /** kube-scheduler's bind request; resolves to the answer's Error ('' on success). */
  async bind(pod: Pod, node: string): Promise<string> {
    const res = await this.t.request
      .post('/scheduler/bind')
      .set('Content-Type', 'application/json')
      .send(
        JSON.stringify({
          PodName: pod.metadata.name,
          PodNamespace: pod.metadata.namespace,
          PodUID: pod.metadata.uid,
          Node: node,
        }),
      );
    if (res.status !== 200) throw new Error(`bind answered ${res.status}: ${res.text}`);
    return (res.body as { Error: string }).Error;
  }

  claim(name: string): PersistentVolumeClaim | undefined {
    return this.t.store.get('PersistentVolumeClaim', `${NS}/${name}`);
  }

  volume(name: string): PersistentVolume | undefined {
    return this.t.store.get('PersistentVolume', name);
  }

  /** Waits until the (simulated) PV controller has bound these claims. */
  async claimsBound(names: string[]): Promise<void> {
    await this.t.waitFor(() =>
      names.every(
        (n) =>
          !!this.claim(n)?.spec.volumeName &&
          !!this.claim(n)?.metadata.annotations?.['pv.kubernetes.io/bind-completed'],
      ),
    );
  }

  close(): Promise<void> {
    return this.t.close();
  }
}
