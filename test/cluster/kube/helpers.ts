// Shared pieces of the live-cluster tests: the shared builders' objects as a client creates them, polling waits.
import type { AnyObject, PersistentVolume, PersistentVolumeClaim } from '../../../src/cluster/types.ts';
import * as build from '../../helpers/objects.ts';
import type { FakeApiServer, FakeObject } from './fake-apiserver.ts';

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

const CORE_KINDS = new Set(['Node', 'Pod', 'PersistentVolume', 'PersistentVolumeClaim']);

/** A shared builder's object as a client creates it: the API server assigns its uid and resourceVersion. */
export function created(obj: AnyObject, more: { finalizers?: string[] } = {}): FakeObject {
  const { uid: _uid, resourceVersion: _resourceVersion, ...metadata } = obj.metadata;
  const apiVersion = CORE_KINDS.has(obj.kind ?? '') ? 'v1' : 'storage.k8s.io/v1';
  return { apiVersion, ...obj, metadata: { ...metadata, ...more } };
}

// As a kubelet reports them: the store keeps Ready's type, status and lastTransitionTime alone.
const CONDITIONS = [
  {
    type: 'MemoryPressure',
    status: 'False',
    lastHeartbeatTime: '2026-01-01T00:05:00Z',
    reason: 'KubeletHasSufficientMemory',
  },
  {
    type: 'Ready',
    status: 'True',
    lastHeartbeatTime: '2026-01-01T00:05:00Z',
    lastTransitionTime: '2026-01-01T00:00:00Z',
    reason: 'KubeletReady',
  },
];

export function node(name: string, labels: Record<string, string> = {}): FakeObject {
  const allocatable = { cpu: '4', memory: '16Gi', pods: '110' };
  return created(
    build.makeNode(name, { labels, allocatable, status: { capacity: allocatable, conditions: CONDITIONS } }),
  );
}

export function pod(name: string, opts: { namespace?: string; nodeName?: string; claims?: string[] } = {}): FakeObject {
  return created(
    build.makePod(name, {
      ...opts,
      labels: { app: name },
      schedulerName: 'default-scheduler',
      containers: [{ name: 'app', image: 'nginx', resources: { requests: { cpu: '100m', memory: '128Mi' } } }],
      claims: opts.claims ?? [],
      phase: 'Pending',
    }),
  );
}

export function pv(
  name: string,
  opts: { storageClassName?: string; node?: string; claimRef?: PersistentVolume['spec']['claimRef'] } = {},
): FakeObject {
  return created(
    build.makePV(name, {
      className: opts.storageClassName ?? 'local',
      size: '10Gi',
      phase: 'Available',
      affinity: { 'kubernetes.io/hostname': [opts.node ?? 'node-a'] },
      spec: {
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        local: { path: `/mnt/${name}` },
        ...(opts.claimRef ? { claimRef: opts.claimRef } : {}),
      },
    }),
    { finalizers: ['kubernetes.io/pv-protection'] },
  );
}

export function pvc(
  name: string,
  opts: { namespace?: string; storageClassName?: string; size?: string } = {},
): FakeObject {
  return created(
    build.makePVC(name, {
      namespace: opts.namespace ?? 'default',
      className: opts.storageClassName ?? 'local',
      size: opts.size ?? '5Gi',
      phase: 'Pending',
      spec: { accessModes: ['ReadWriteOnce'], volumeMode: 'Filesystem' },
    }),
    { finalizers: ['kubernetes.io/pvc-protection'] },
  );
}

export function storageClass(name: string, provisioner?: string): FakeObject {
  return created(build.makeStorageClass(name, provisioner ? { provisioner } : {}));
}

/** A PV as a CSI provisioner creates it for `claim` (already bound to it), reachable where `affinity` says. */
export function provisionedPV(
  name: string,
  claim: FakeObject,
  o: { driver: string; volumeHandle: string; size: string; affinity: Record<string, string[]> },
): FakeObject {
  const { namespace, name: claimName, uid } = claim.metadata;
  return created(
    build.makePV(name, {
      annotations: { 'pv.kubernetes.io/provisioned-by': o.driver },
      className: (claim.spec as PersistentVolumeClaim['spec']).storageClassName,
      size: o.size,
      phase: 'Bound',
      affinity: o.affinity,
      spec: {
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        csi: { driver: o.driver, volumeHandle: o.volumeHandle },
        claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace, name: claimName, uid },
      },
    }),
  );
}

/** `claim` as the PV controller leaves it once bound to `volumeName`, which holds `size`. */
export function boundClaim(claim: FakeObject, volumeName: string, size: string): FakeObject {
  return {
    ...claim,
    metadata: {
      ...claim.metadata,
      annotations: {
        ...(claim.metadata.annotations as Record<string, string>),
        'pv.kubernetes.io/bind-completed': 'yes',
        'pv.kubernetes.io/bound-by-controller': 'yes',
      },
    },
    spec: { ...(claim.spec as object), volumeName },
    status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: size } },
  };
}

/** One object of every stored kind besides nodes and pods. */
export function storageObjects(): FakeObject[] {
  return [
    pv('pv-1'),
    pvc('claim-1'),
    storageClass('local'),
    created(
      build.makeCSINode('node-a', {
        drivers: [{ name: 'ebs.csi.aws.com', nodeID: 'i-1', topologyKeys: ['topology.kubernetes.io/zone'] }],
      }),
    ),
    created(build.makeCSIDriver('ebs.csi.aws.com', { attachRequired: true, storageCapacity: true })),
    created(build.makeCSIStorageCapacity('cap-1', { namespace: 'kube-system', className: 'ebs', capacity: '100Gi' })),
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
    ...workloadObjects(),
  ];
}

/**
 * What PodTopologySpread's default selector and InterPodAffinity's namespaceSelector read, as the API serves it
 * (templates and status included).
 */
export function workloadObjects(): FakeObject[] {
  const template = { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } };
  return [
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'data', labels: { 'kubernetes.io/metadata.name': 'data', team: 'db' } },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
      spec: { selector: { app: 'web' }, ports: [{ port: 80 }], clusterIP: '10.0.0.10' },
      status: { loadBalancer: {} },
    },
    {
      apiVersion: 'v1',
      kind: 'ReplicationController',
      metadata: { name: 'legacy', namespace: 'default' },
      spec: { replicas: 1, selector: { app: 'legacy' }, template },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: 'web-7d9f8',
        namespace: 'default',
        labels: { app: 'web', 'pod-template-hash': '7d9f8' },
        annotations: { 'deployment.kubernetes.io/revision': '3' },
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'uid-deploy', controller: true },
        ],
      },
      spec: { replicas: 2, selector: { matchLabels: { app: 'web', 'pod-template-hash': '7d9f8' } }, template },
      status: { replicas: 2, readyReplicas: 2 },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db', namespace: 'data' },
      spec: { replicas: 1, serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template },
    },
  ];
}

/**
 * An external provisioner, as far as the end-to-end tests need it: a claim annotated with a selected node (and not
 * bound yet) gets a new PV with that node's zone as affinity, and both are bound.
 */
export function provisionClaim(server: FakeApiServer, namespace: string, name: string): void {
  const claim = server.get('PersistentVolumeClaim', name, namespace);
  const selected = (claim?.metadata.annotations as Record<string, string> | undefined)?.[
    'volume.kubernetes.io/selected-node'
  ];
  if (!claim || !selected || (claim.spec as { volumeName?: string }).volumeName) return;
  const zone = (server.get('Node', selected)!.metadata.labels as Record<string, string>)['topology.kubernetes.io/zone'];
  const pvName = `pvc-${claim.metadata.uid}`;
  server.add(
    provisionedPV(pvName, claim, {
      driver: 'ebs.csi.aws.com',
      volumeHandle: `vol-${claim.metadata.uid}`,
      size: '5Gi',
      affinity: { 'topology.kubernetes.io/zone': [zone] },
    }),
  );
  server.update(boundClaim(claim, pvName, '5Gi'));
}
