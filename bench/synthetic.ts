// bench-helper
// A deterministic synthetic cluster for benchmarks, shaped like examples/cluster.yaml at scale: N nodes over three
// zones of one region, a CSINode per node, the example's StorageClasses (local-storage: static local PVs, WFFC;
// fast-ssd: zonal CSI disks with capacity tracking, WFFC; standard: NFS, Immediate), CSIDrivers, a CSIStorageCapacity
// per zone (or, in the local-storage shape, also a local CSI class with one per node), k local PVs per node (mixed
// sizes, some bound), running pods (realistic requests, a node-exporter per node with a host port, some with bound
// local, fast-ssd or shared NFS claims), and pending pods for the requests: with a WFFC local-storage claim, with a
// WFFC fast-ssd claim, with two local claims and a capacity-tracked CSI claim, and without claims.
//
// Same options and seed → the same objects (uids included), so runs are comparable.
//
//   import { generateCluster } from './synthetic.ts';
//   const c = generateCluster({ nodes: 5000, podsPerNode: 30, pvsPerNode: 2, seed: 1 });
//   c.objects            // every object, for a cluster-state List or a fake API server
//   c.pending.localClaim // pending pods whose only claim is an unbound local-storage (WFFC) claim
//   c.nodeNames          // node names in zone-interleaved order, as kube-scheduler walks them
//   generateCluster({ ...LOCAL_STORAGE_SHAPE, seed: 1 }) // per-node capacity, 10 local PVs per node, 30 % bound
import type {
  AnyObject,
  CSIDriver,
  CSINode,
  CSIStorageCapacity,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  PriorityClass,
  StorageClass,
} from '../src/cluster/types.ts';

export interface ClusterOptions {
  /** Nodes, spread round-robin over three zones. Default 5,000. */
  nodes?: number;
  /** Running pods per node on average (node-exporter included). Default 30. */
  podsPerNode?: number;
  /** Local PVs per node (class local-storage). Default 2. */
  pvsPerNode?: number;
  /** Fraction of local PVs bound to a running pod's claim. Default 0.4. */
  boundPvFraction?: number;
  /** Fraction of running pods with a bound fast-ssd claim. Default 0.02. */
  fastSsdPodFraction?: number;
  /** Pending pods of each flavour (local claim, fast-ssd claim, no claim). Default 50. */
  pendingPerKind?: number;
  /**
   * Where CSI storage capacity is published. 'zone' (default): the zonal fast-ssd disk driver's capacity per zone.
   * 'node': also a local-storage CSI driver (class local-lvm, TopoLVM-like) with one CSIStorageCapacity per node,
   * pinned by the node's hostname, the shape local-storage drivers publish.
   */
  capacityPer?: 'zone' | 'node';
  /** Namespaces the workloads are spread over. Default 40. */
  namespaces?: number;
  seed?: number;
}

export interface PendingPods {
  /** Each with one unbound WaitForFirstConsumer local-storage claim (static local PVs). */
  localClaim: Pod[];
  /** Each with one unbound WaitForFirstConsumer fast-ssd claim (CSI provisioning, capacity checked per zone). */
  fastSsdClaim: Pod[];
  /** No volumes at all. */
  noClaims: Pod[];
  /**
   * Two unbound WFFC local-storage claims and one capacity-tracked CSI claim (local-lvm with per-node capacity,
   * fast-ssd with per-zone capacity).
   */
  localAndCsi: Pod[];
}

/**
 * The local-storage cluster: per-node CSIStorageCapacity, ten local PVs per node, 30 % bound. With the defaults
 * (5,000 nodes, 30 pods per node): 150,000 running pods, 50,000 local PVs, 5,000 capacity objects of one class.
 */
export const LOCAL_STORAGE_SHAPE: ClusterOptions = { capacityPer: 'node', pvsPerNode: 10, boundPvFraction: 0.3 };

export interface SyntheticCluster {
  objects: AnyObject[];
  /** Every node name, zone-interleaved (a, b, c, a, b, c, ...), as kube-scheduler's node tree lists them. */
  nodeNames: string[];
  pending: PendingPods;
  counts: Record<string, number>;
}

export const REGION = 'eu-west-1';
export const ZONES = ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'] as const;
export const DISK_DRIVER = 'disk.csi.example.com';
const NFS_DRIVER = 'nfs.csi.example.com';
export const LVM_DRIVER = 'lvm.csi.example.com';
const LVM_CLASS = 'local-lvm';
const DISK_ZONE_KEY = 'topology.disk.csi.example.com/zone';

/** mulberry32: small, fast, good enough for picking sizes and placements. */
/** The reference a bound PV holds to its claim. */
function claimRefTo(pvc: PersistentVolumeClaim): NonNullable<PersistentVolume['spec']['claimRef']> {
  const { name, namespace, uid } = pvc.metadata;
  return { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace, name, uid };
}

export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function nodeName(i: number): string {
  return `node-${String(i).padStart(5, '0')}`;
}

export function generateCluster(options: ClusterOptions = {}): SyntheticCluster {
  const nodes = options.nodes ?? 5_000;
  const podsPerNode = options.podsPerNode ?? 30;
  const pvsPerNode = options.pvsPerNode ?? 2;
  const boundPvFraction = options.boundPvFraction ?? 0.4;
  const fastSsdPodFraction = options.fastSsdPodFraction ?? 0.02;
  const pendingPerKind = options.pendingPerKind ?? 50;
  const namespaceCount = options.namespaces ?? 40;
  const perNodeCapacity = options.capacityPer === 'node';
  const seed = options.seed ?? 1;
  const rand = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)];
  let uidCounter = 0;
  // UUID-shaped and unique; derived from the seed so two seeds never share uids.
  const uid = () => {
    const n = ++uidCounter;
    const hex = (v: number, len: number) => (v >>> 0).toString(16).padStart(len, '0').slice(-len);
    return `${hex(seed * 2654435761, 8)}-${hex(n >>> 16, 4)}-4${hex(n, 3)}-8${hex(n >>> 12, 3)}-${hex(n, 12)}`;
  };
  const meta = (name: string, namespace?: string) => ({
    name,
    ...(namespace ? { namespace } : {}),
    uid: uid(),
    resourceVersion: '1',
    creationTimestamp: '2026-10-01T08:00:00Z',
  });
  const namespaces = Array.from({ length: namespaceCount }, (_, i) => `team-${String(i).padStart(2, '0')}`);

  const objects: AnyObject[] = [];
  const counts: Record<string, number> = {};
  const push = (obj: AnyObject) => {
    objects.push(obj);
    counts[obj.kind!] = (counts[obj.kind!] ?? 0) + 1;
  };

  // ---------------------------------------------------------------------------------------- priority classes
  for (const [name, value, policy] of [
    ['high', 1_000_000, 'PreemptLowerPriority'],
    ['default', 1_000, 'PreemptLowerPriority'],
    ['low', 100, 'Never'],
  ] as const) {
    push({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: meta(name),
      value,
      globalDefault: name === 'default',
      preemptionPolicy: policy,
    } satisfies PriorityClass);
  }

  // ------------------------------------------------------------------------------------- nodes and CSINodes
  const nodeObjects: Node[] = [];
  for (let i = 0; i < nodes; i++) {
    const name = nodeName(i);
    const zone = ZONES[i % ZONES.length];
    const big = rand() < 0.3;
    const instanceId = `i-${(i * 2654435761).toString(16).padStart(8, '0').slice(-8)}${String(i).padStart(9, '0')}`;
    const node: Node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        ...meta(name),
        labels: {
          'kubernetes.io/arch': 'amd64',
          'kubernetes.io/os': 'linux',
          'kubernetes.io/hostname': name,
          'node.kubernetes.io/instance-type': big ? 'm6i.2xlarge' : 'm6i.xlarge',
          'topology.kubernetes.io/region': REGION,
          'topology.kubernetes.io/zone': zone,
          [DISK_ZONE_KEY]: zone,
        },
      },
      spec: { providerID: `aws:///${zone}/${instanceId}` },
      status: {
        capacity: big
          ? { cpu: '8', memory: '32329204Ki', pods: '110', 'ephemeral-storage': '101430960Ki' }
          : { cpu: '4', memory: '16194540Ki', pods: '110', 'ephemeral-storage': '101430960Ki' },
        allocatable: big
          ? { cpu: '7910m', memory: '31178228Ki', pods: '110', 'ephemeral-storage': '93478772582' }
          : { cpu: '3920m', memory: '15043564Ki', pods: '110', 'ephemeral-storage': '93478772582' },
        conditions: [{ type: 'Ready', status: 'True' }],
      },
    };
    nodeObjects.push(node);
    push(node);
    push({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: meta(name),
      spec: {
        drivers: [
          { name: DISK_DRIVER, nodeID: instanceId, topologyKeys: [DISK_ZONE_KEY], allocatable: { count: 25 } },
          { name: NFS_DRIVER, nodeID: name },
          ...(perNodeCapacity ? [{ name: LVM_DRIVER, nodeID: name, topologyKeys: ['kubernetes.io/hostname'] }] : []),
        ],
      },
    } satisfies CSINode);
  }

  // ------------------------------------------------------------------------------ CSI drivers, storage classes
  push({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'CSIDriver',
    metadata: meta(DISK_DRIVER),
    spec: { attachRequired: true, storageCapacity: true, volumeLifecycleModes: ['Persistent'] },
  } satisfies CSIDriver);
  push({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'CSIDriver',
    metadata: meta(NFS_DRIVER),
    spec: { attachRequired: false, storageCapacity: false, volumeLifecycleModes: ['Persistent'] },
  } satisfies CSIDriver);
  push({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: meta('local-storage'),
    provisioner: 'kubernetes.io/no-provisioner',
    reclaimPolicy: 'Retain',
    volumeBindingMode: 'WaitForFirstConsumer',
  } satisfies StorageClass);
  push({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: meta('fast-ssd'),
    provisioner: DISK_DRIVER,
    parameters: { type: 'ssd' },
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'WaitForFirstConsumer',
    allowVolumeExpansion: true,
    allowedTopologies: [{ matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: [...ZONES] }] }],
  } satisfies StorageClass);
  push({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { ...meta('standard'), annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
    provisioner: NFS_DRIVER,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
  } satisfies StorageClass);
  if (perNodeCapacity) {
    push({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: meta(LVM_DRIVER),
      spec: { attachRequired: false, storageCapacity: true, volumeLifecycleModes: ['Persistent'] },
    } satisfies CSIDriver);
    push({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: meta(LVM_CLASS),
      provisioner: LVM_DRIVER,
      reclaimPolicy: 'Delete',
      volumeBindingMode: 'WaitForFirstConsumer',
    } satisfies StorageClass);
    // One capacity per node, as TopoLVM or OpenEBS LocalPV publish it; about one node in ten is nearly full.
    for (const node of nodeObjects) {
      const free = rand() < 0.1 ? '5Gi' : pick(['200Gi', '500Gi', '1Ti', '2Ti']);
      push({
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSIStorageCapacity',
        metadata: meta(`csisc-${LVM_CLASS}-${node.metadata.name}`, 'kube-system'),
        storageClassName: LVM_CLASS,
        nodeTopology: { matchLabels: { 'kubernetes.io/hostname': node.metadata.name } },
        capacity: free,
        maximumVolumeSize: free,
      } satisfies CSIStorageCapacity);
    }
  }
  // Zone b is nearly full, as in the example: a 50Gi fast-ssd claim fits zones a and c only.
  const zoneCapacity: Record<string, [string, string]> = {
    'eu-west-1a': ['20Ti', '2Ti'],
    'eu-west-1b': ['40Gi', '40Gi'],
    'eu-west-1c': ['50Ti', '4Ti'],
  };
  for (const zone of ZONES) {
    const [capacity, maximumVolumeSize] = zoneCapacity[zone];
    push({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIStorageCapacity',
      metadata: meta(`csisc-fast-ssd-${zone}`, 'kube-system'),
      storageClassName: 'fast-ssd',
      nodeTopology: { matchLabels: { [DISK_ZONE_KEY]: zone } },
      capacity,
      maximumVolumeSize,
    } satisfies CSIStorageCapacity);
  }

  // One shared NFS volume per namespace, bound (Immediate class), mounted by some pods.
  const sharedClaims = new Map<string, string>();
  for (const ns of namespaces) {
    const claimName = 'shared-uploads';
    const pvc: PersistentVolumeClaim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { ...meta(claimName, ns), annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } },
      spec: {
        accessModes: ['ReadWriteMany'],
        resources: { requests: { storage: '20Gi' } },
        storageClassName: 'standard',
        volumeMode: 'Filesystem',
      },
      status: { phase: 'Bound', accessModes: ['ReadWriteMany'], capacity: { storage: '20Gi' } },
    };
    const pvName = `pvc-${pvc.metadata.uid}`;
    pvc.spec.volumeName = pvName;
    push({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { ...meta(pvName), annotations: { 'pv.kubernetes.io/provisioned-by': NFS_DRIVER } },
      spec: {
        capacity: { storage: '20Gi' },
        accessModes: ['ReadWriteMany'],
        persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: 'standard',
        volumeMode: 'Filesystem',
        csi: { driver: NFS_DRIVER, volumeHandle: `nfs.example.internal/exports/${ns}` },
        claimRef: claimRefTo(pvc),
      },
      status: { phase: 'Bound' },
    } satisfies PersistentVolume);
    push(pvc);
    sharedClaims.set(ns, claimName);
  }

  // ------------------------------------------------------------------------------------------ running pods
  const cpuChoices = ['50m', '100m', '100m', '100m', '200m', '250m', '500m'];
  const memChoices = ['64Mi', '128Mi', '128Mi', '256Mi', '512Mi', '1Gi'];
  const apps = ['api', 'web', 'worker', 'cache', 'search', 'ingest', 'report', 'batch'];
  let podSeq = 0;
  const runningPod = (
    node: Node,
    opts: { name?: string; namespace?: string; claims?: string[]; hostPort?: number; priority?: string } = {},
  ): Pod => {
    const ns = opts.namespace ?? pick(namespaces);
    const app = pick(apps);
    const name = opts.name ?? `${app}-${(podSeq++).toString(36).padStart(6, '0')}`;
    const priorityClassName = opts.priority ?? (app === 'batch' ? 'low' : 'default');
    const containers: Pod['spec']['containers'] = [
      {
        name: app,
        image: `registry.example.com/${app}:1.${podSeq % 7}`,
        resources: {
          requests: { cpu: pick(cpuChoices), memory: pick(memChoices) },
          limits: { memory: '2Gi' },
        },
        ...(opts.hostPort
          ? { ports: [{ containerPort: opts.hostPort, hostPort: opts.hostPort, protocol: 'TCP' }] }
          : {}),
      },
    ];
    if (rand() < 0.3) {
      containers.push({
        name: 'istio-proxy',
        image: 'docker.io/istio/proxyv2:1.24.0',
        resources: { requests: { cpu: '10m', memory: '40Mi' }, limits: { cpu: '2', memory: '1Gi' } },
      });
    }
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        ...meta(name, ns),
        labels: { app, 'pod-template-hash': (podSeq % 997).toString(16) },
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${app}-rs`, uid: `rs-${app}-${ns}`, controller: true },
        ],
      },
      spec: {
        nodeName: node.metadata.name,
        schedulerName: 'default-scheduler',
        priorityClassName,
        priority: priorityClassName === 'high' ? 1_000_000 : priorityClassName === 'low' ? 100 : 1_000,
        containers,
        ...(opts.claims
          ? { volumes: opts.claims.map((c, i) => ({ name: `data-${i}`, persistentVolumeClaim: { claimName: c } })) }
          : {}),
      },
      status: { phase: 'Running', startTime: '2026-10-01T09:00:00Z' },
    };
  };

  let running = 0;
  let claimSeq = 0;
  const localSizes = [10, 20, 50, 100, 100, 200, 500];
  for (let i = 0; i < nodes; i++) {
    const node = nodeObjects[i];
    const name = node.metadata.name;
    const zone = ZONES[i % ZONES.length];
    // Every node runs a node-exporter with host port 9100.
    push(
      runningPod(node, { name: `node-exporter-${name}`, namespace: 'monitoring', hostPort: 9100, priority: 'high' }),
    );
    running++;
    let here = 1;

    // Local PVs on this node; some bound to a stateful pod running here.
    for (let k = 0; k < pvsPerNode; k++) {
      const sizeGi = pick(localSizes);
      const pvName = `local-pv-${name}-${k}`;
      const bind = rand() < boundPvFraction;
      let claimRef: PersistentVolume['spec']['claimRef'];
      if (bind) {
        const ns = pick(namespaces);
        const podName = `db-${(claimSeq++).toString(36)}-0`;
        const claimName = `data-${podName}`;
        const pvc: PersistentVolumeClaim = {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: {
            ...meta(claimName, ns),
            annotations: {
              'pv.kubernetes.io/bind-completed': 'yes',
              'pv.kubernetes.io/bound-by-controller': 'yes',
              'volume.kubernetes.io/selected-node': name,
            },
          },
          spec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: `${Math.max(1, Math.floor(sizeGi / 2))}Gi` } },
            storageClassName: 'local-storage',
            volumeMode: 'Filesystem',
            volumeName: pvName,
          },
          status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: `${sizeGi}Gi` } },
        };
        push(pvc);
        claimRef = claimRefTo(pvc);
        push(runningPod(node, { name: podName, namespace: ns, claims: [claimName], priority: 'high' }));
        running++;
        here++;
      }
      push({
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: {
          ...meta(pvName),
          ...(bind ? { annotations: { 'pv.kubernetes.io/bound-by-controller': 'yes' } } : {}),
        },
        spec: {
          capacity: { storage: `${sizeGi}Gi` },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: 'local-storage',
          volumeMode: 'Filesystem',
          local: { path: `/mnt/disks/ssd${k}` },
          nodeAffinity: {
            required: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [name] }] },
              ],
            },
          },
          ...(claimRef ? { claimRef } : {}),
        },
        status: { phase: bind ? 'Bound' : 'Available' },
      } satisfies PersistentVolume);
    }

    // The rest of this node's pods: stateless mostly; a few with a fast-ssd disk or the namespace's NFS share.
    const target = Math.max(here, Math.round(podsPerNode * (0.7 + 0.6 * rand())));
    for (; here < target; here++) {
      const r = rand();
      if (r < fastSsdPodFraction) {
        const ns = pick(namespaces);
        const podName = `pg-${(claimSeq++).toString(36)}-0`;
        const claimName = `data-${podName}`;
        const sizeGi = pick([20, 50, 100]);
        const pvc: PersistentVolumeClaim = {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: {
            ...meta(claimName, ns),
            annotations: {
              'pv.kubernetes.io/bind-completed': 'yes',
              'pv.kubernetes.io/bound-by-controller': 'yes',
              'volume.kubernetes.io/selected-node': name,
              'volume.kubernetes.io/storage-provisioner': DISK_DRIVER,
            },
          },
          spec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: `${sizeGi}Gi` } },
            storageClassName: 'fast-ssd',
            volumeMode: 'Filesystem',
          },
          status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: `${sizeGi}Gi` } },
        };
        const pvName = `pvc-${pvc.metadata.uid}`;
        pvc.spec.volumeName = pvName;
        push({
          apiVersion: 'v1',
          kind: 'PersistentVolume',
          metadata: { ...meta(pvName), annotations: { 'pv.kubernetes.io/provisioned-by': DISK_DRIVER } },
          spec: {
            capacity: { storage: `${sizeGi}Gi` },
            accessModes: ['ReadWriteOnce'],
            persistentVolumeReclaimPolicy: 'Delete',
            storageClassName: 'fast-ssd',
            volumeMode: 'Filesystem',
            csi: { driver: DISK_DRIVER, volumeHandle: `vol-${pvc.metadata.uid.slice(0, 17)}`, fsType: 'ext4' },
            nodeAffinity: {
              required: {
                nodeSelectorTerms: [{ matchExpressions: [{ key: DISK_ZONE_KEY, operator: 'In', values: [zone] }] }],
              },
            },
            claimRef: claimRefTo(pvc),
          },
          status: { phase: 'Bound' },
        } satisfies PersistentVolume);
        push(pvc);
        push(runningPod(node, { name: podName, namespace: ns, claims: [claimName], priority: 'high' }));
      } else if (r < fastSsdPodFraction + 0.03) {
        const ns = pick(namespaces);
        push(runningPod(node, { namespace: ns, claims: [sharedClaims.get(ns)!] }));
      } else {
        push(runningPod(node));
      }
      running++;
    }
  }

  // ----------------------------------------------------------------------------------------- pending pods
  const pendingPod = (name: string, ns: string, claimName?: string): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...meta(name, ns), labels: { app: name.replace(/-\d+$/, '') } },
    spec: {
      schedulerName: 'default-scheduler',
      priorityClassName: 'default',
      priority: 1_000,
      containers: [
        {
          name: 'main',
          image: 'registry.example.com/app:2.0',
          resources: { requests: { cpu: '250m', memory: '512Mi' }, limits: { memory: '1Gi' } },
        },
      ],
      ...(claimName ? { volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }] } : {}),
    },
    status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] },
  });
  const pendingClaim = (name: string, ns: string, className: string, size: string): PersistentVolumeClaim => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: meta(name, ns),
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: size } },
      storageClassName: className,
      volumeMode: 'Filesystem',
    },
    status: { phase: 'Pending' },
  });
  const pending: PendingPods = { localClaim: [], fastSsdClaim: [], noClaims: [], localAndCsi: [] };
  for (let j = 0; j < pendingPerKind; j++) {
    const ns = namespaces[j % namespaces.length];
    // Local: 20Gi..100Gi, so nodes whose free local PVs are all smaller (or all bound) fail.
    const localName = `cassandra-${j}`;
    push(pendingClaim(`data-${localName}`, ns, 'local-storage', `${pick([20, 50, 100])}Gi`));
    const lp = pendingPod(localName, ns, `data-${localName}`);
    push(lp);
    pending.localClaim.push(lp);
    // fast-ssd: 50Gi, so zone b (max volume 40Gi) does not have enough capacity.
    const ssdName = `postgres-${j}`;
    push(pendingClaim(`data-${ssdName}`, ns, 'fast-ssd', '50Gi'));
    const sp = pendingPod(ssdName, ns, `data-${ssdName}`);
    push(sp);
    pending.fastSsdClaim.push(sp);
    const np = pendingPod(`frontend-${j}`, ns);
    push(np);
    pending.noClaims.push(np);
  }
  // Drawn after the other pending pods, so adding them left the rest of a seed's cluster unchanged.
  for (let j = 0; j < pendingPerKind; j++) {
    const ns = namespaces[j % namespaces.length];
    const name = `kafka-${j}`;
    const claims = [`data-${name}`, `log-${name}`, `scratch-${name}`];
    push(pendingClaim(claims[0], ns, 'local-storage', `${pick([20, 50])}Gi`));
    push(pendingClaim(claims[1], ns, 'local-storage', `${pick([10, 20])}Gi`));
    push(pendingClaim(claims[2], ns, perNodeCapacity ? LVM_CLASS : 'fast-ssd', `${pick([10, 50])}Gi`));
    const pod = pendingPod(name, ns);
    pod.spec.volumes = claims.map((claimName, i) => ({ name: `v${i}`, persistentVolumeClaim: { claimName } }));
    push(pod);
    pending.localAndCsi.push(pod);
  }
  counts.runningPods = running;
  counts.pendingPods = pendingPerKind * 4;

  // Zone-interleaved node order (every node i has zone i % 3, so the natural order already interleaves).
  const nodeNames = nodeObjects.map((n) => n.metadata.name);
  return { objects, nodeNames, pending, counts };
}

/** `count` candidate names starting at `offset` in the node order, wrapping: what one scheduling cycle sends. */
export function candidateNames(nodeNames: readonly string[], count: number, offset = 0): string[] {
  const out: string[] = [];
  for (let i = 0; i < Math.min(count, nodeNames.length); i++) out.push(nodeNames[(offset + i) % nodeNames.length]);
  return out;
}

/** Running pods of lower priority than `priority`, by node: the victims DefaultPreemption could offer. */
export function lowerPriorityPodsByNode(
  objects: readonly { kind?: string }[],
  priority: number,
): Map<string, string[]> {
  const byNode = new Map<string, string[]>();
  for (const o of objects) {
    if (o.kind !== 'Pod') continue;
    const pod = o as Pod;
    if (!pod.spec.nodeName || (pod.spec.priority ?? 0) >= priority) continue;
    const uids = byNode.get(pod.spec.nodeName);
    if (uids) uids.push(pod.metadata.uid!);
    else byNode.set(pod.spec.nodeName, [pod.metadata.uid!]);
  }
  return byNode;
}

/**
 * What DefaultPreemption sends in node-cache mode (NodeNameToMetaVictims): `candidates` nodes from the window of the
 * node order starting at `offset`, each with `victimsPerNode` of its lower-priority pods. Throws when too few nodes
 * carry that many.
 */
export function metaVictims(
  nodeNames: readonly string[],
  victimsByNode: ReadonlyMap<string, readonly string[]>,
  offset: number,
  { candidates = 100, victimsPerNode = 3 } = {},
): Record<string, { Pods: { UID: string }[]; NumPDBViolations: number }> {
  const victims: Record<string, { Pods: { UID: string }[]; NumPDBViolations: number }> = {};
  let found = 0;
  for (let k = 0; k < nodeNames.length && found < candidates; k++) {
    const name = nodeNames[(offset + k) % nodeNames.length];
    const uids = victimsByNode.get(name) ?? [];
    if (uids.length < victimsPerNode) continue;
    victims[name] = { Pods: uids.slice(0, victimsPerNode).map((UID) => ({ UID })), NumPDBViolations: 0 };
    found++;
  }
  if (found < candidates) throw new Error(`preempt: only ${found} nodes carry ${victimsPerNode} victims`);
  return victims;
}
