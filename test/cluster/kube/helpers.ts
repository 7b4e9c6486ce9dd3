// Shared pieces of the live-cluster tests: object factories in API shape, polling waits.
import type { FakeObject } from '../../e2e/fake-apiserver.ts';

/** Polls `check` until it returns a truthy value; fails with `what` after a generous deadline. */
// The ceiling only bounds a hang and measures nothing: generous, since CI machines are small and shared.
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  timeoutMs = 30_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function node(name: string, labels: Record<string, string> = {}): FakeObject {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } },
    spec: {},
    status: {
      allocatable: { cpu: '4', memory: '16Gi', pods: '110' },
      capacity: { cpu: '4', memory: '16Gi', pods: '110' },
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' }],
    },
  };
}

export function pod(name: string, opts: { namespace?: string; nodeName?: string; claims?: string[] } = {}): FakeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: opts.namespace ?? 'default', labels: { app: name } },
    spec: {
      schedulerName: 'default-scheduler',
      ...(opts.nodeName ? { nodeName: opts.nodeName } : {}),
      containers: [{ name: 'app', image: 'nginx', resources: { requests: { cpu: '100m', memory: '128Mi' } } }],
      volumes: (opts.claims ?? []).map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })),
    },
    status: { phase: 'Pending' },
  };
}

export function pv(
  name: string,
  opts: { storageClassName?: string; node?: string; claimRef?: object } = {},
): FakeObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, finalizers: ['kubernetes.io/pv-protection'] },
    spec: {
      capacity: { storage: '10Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: opts.storageClassName ?? 'local',
      local: { path: `/mnt/${name}` },
      ...(opts.claimRef ? { claimRef: opts.claimRef } : {}),
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [opts.node ?? 'node-a'] }] },
          ],
        },
      },
    },
    status: { phase: 'Available' },
  };
}

export function pvc(name: string, opts: { namespace?: string; storageClassName?: string } = {}): FakeObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: opts.namespace ?? 'default', finalizers: ['kubernetes.io/pvc-protection'] },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '5Gi' } },
      storageClassName: opts.storageClassName ?? 'local',
      volumeMode: 'Filesystem',
    },
    status: { phase: 'Pending' },
  };
}

/** One object of every stored kind besides nodes and pods. */
export function storageObjects(): FakeObject[] {
  return [
    pv('pv-1'),
    pvc('claim-1'),
    {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'local' },
      provisioner: 'kubernetes.io/no-provisioner',
      volumeBindingMode: 'WaitForFirstConsumer',
    },
    {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: { name: 'node-a' },
      spec: { drivers: [{ name: 'ebs.csi.aws.com', nodeID: 'i-1', topologyKeys: ['topology.kubernetes.io/zone'] }] },
    },
    {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: { name: 'ebs.csi.aws.com' },
      spec: { attachRequired: true, storageCapacity: true },
    },
    {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIStorageCapacity',
      metadata: { name: 'cap-1', namespace: 'kube-system' },
      storageClassName: 'ebs',
      capacity: '100Gi',
    },
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'pdb-1', namespace: 'default' },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
      status: { disruptionsAllowed: 0 },
    },
    {
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: 'high' },
      value: 1000,
    },
  ];
}
