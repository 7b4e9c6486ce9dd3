// Small builders for cluster objects in tests: only what a case needs is spelled out at the call site.
import type { Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '../../src/cluster/types.ts';

let counter = 0;
const uid = (kind: string, name: string) => `${kind}-${name}-${++counter}`;

export function node(name: string, opts: { zone?: string; labels?: Record<string, string>; cpu?: string } = {}): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      uid: uid('node', name),
      resourceVersion: '1',
      labels: {
        'kubernetes.io/hostname': name,
        ...(opts.zone ? { 'topology.kubernetes.io/region': 'r1', 'topology.kubernetes.io/zone': opts.zone } : {}),
        ...opts.labels,
      },
    },
    status: { allocatable: { cpu: opts.cpu ?? '4', memory: '16Gi', pods: '110', 'ephemeral-storage': '100Gi' } },
  };
}

export function pod(
  name: string,
  opts: {
    namespace?: string;
    nodeName?: string;
    claims?: string[];
    cpu?: string;
    priority?: number;
    uid?: string;
  } = {},
): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: opts.namespace ?? 'default', uid: opts.uid ?? uid('pod', name), resourceVersion: '1' },
    spec: {
      ...(opts.nodeName ? { nodeName: opts.nodeName } : {}),
      ...(opts.priority === undefined ? {} : { priority: opts.priority }),
      containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: opts.cpu ?? '100m' } } }],
      ...(opts.claims
        ? { volumes: opts.claims.map((c, i) => ({ name: `v${i}`, persistentVolumeClaim: { claimName: c } })) }
        : {}),
    },
    status: { phase: opts.nodeName ? 'Running' : 'Pending' },
  };
}

export function storageClass(name: string, opts: { provisioner?: string; mode?: string } = {}): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name, uid: uid('sc', name), resourceVersion: '1' },
    provisioner: opts.provisioner ?? 'kubernetes.io/no-provisioner',
    volumeBindingMode: opts.mode ?? 'WaitForFirstConsumer',
  };
}

export function localPV(
  name: string,
  nodeName: string,
  opts: { size?: string; className?: string } = {},
): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, uid: uid('pv', name), resourceVersion: '1' },
    spec: {
      capacity: { storage: opts.size ?? '10Gi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: opts.className ?? 'local',
      local: { path: `/mnt/${name}` },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [nodeName] }] },
          ],
        },
      },
    },
    status: { phase: 'Available' },
  };
}

export function claim(
  name: string,
  opts: { namespace?: string; size?: string; className?: string; volumeName?: string } = {},
): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name,
      namespace: opts.namespace ?? 'default',
      uid: uid('pvc', name),
      resourceVersion: '1',
      ...(opts.volumeName ? { annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } } : {}),
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: opts.size ?? '5Gi' } },
      storageClassName: opts.className ?? 'local',
      ...(opts.volumeName ? { volumeName: opts.volumeName } : {}),
    },
    status: { phase: opts.volumeName ? 'Bound' : 'Pending' },
  };
}
