// Cluster objects for tests. The builders at the end (makeNode, makePod, ...) spell out only what a case names;
// the presets first (node, pod, storageClass, localPV, claim) are complete objects as an API server would serve them.
import type {
  Container,
  CSIDriver,
  CSINode,
  CSIStorageCapacity,
  Node,
  ObjectMeta,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  ResourceList,
  StorageClass,
  Volume,
} from '../../src/cluster/types.ts';

let counter = 0;
const uid = (kind: string, name: string) => `${kind}-${name}-${++counter}`;

export function node(name: string, opts: { zone?: string; labels?: Record<string, string>; cpu?: string } = {}): Node {
  return {
    apiVersion: 'v1',
    ...makeNode(name, {
      uid: uid('node', name),
      ...(opts.zone ? { region: 'r1', zone: opts.zone } : {}),
      ...(opts.labels ? { labels: opts.labels } : {}),
      allocatable: { cpu: opts.cpu ?? '4', memory: '16Gi', pods: '110', 'ephemeral-storage': '100Gi' },
    }),
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
    ...makePod(name, {
      ...opts,
      uid: opts.uid ?? uid('pod', name),
      containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: opts.cpu ?? '100m' } } }],
    }),
  };
}

export function storageClass(name: string, opts: { provisioner?: string; mode?: string } = {}): StorageClass {
  return { apiVersion: 'storage.k8s.io/v1', ...makeStorageClass(name, { uid: uid('sc', name), ...opts }) };
}

export function localPV(
  name: string,
  nodeName: string,
  opts: { size?: string; className?: string } = {},
): PersistentVolume {
  return {
    apiVersion: 'v1',
    ...makePV(name, {
      uid: uid('pv', name),
      size: opts.size ?? '10Gi',
      className: opts.className ?? 'local',
      phase: 'Available',
      affinity: { 'kubernetes.io/hostname': [nodeName] },
      spec: { accessModes: ['ReadWriteOnce'], local: { path: `/mnt/${name}` } },
    }),
  };
}

export function claim(
  name: string,
  opts: { namespace?: string; size?: string; className?: string; volumeName?: string } = {},
): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    ...makePVC(name, {
      ...(opts.namespace ? { namespace: opts.namespace } : {}),
      uid: uid('pvc', name),
      size: opts.size ?? '5Gi',
      className: opts.className ?? 'local',
      ...(opts.volumeName ? { volumeName: opts.volumeName, bindCompleted: true } : {}),
      phase: opts.volumeName ? 'Bound' : 'Pending',
      spec: { accessModes: ['ReadWriteOnce'] },
    }),
  };
}

/** Every builder's uid and resourceVersion: a stable `uid-<name>` and version 1 unless the case names others. */
function identity(name: string, o: { uid?: string; resourceVersion?: string }) {
  return { uid: o.uid ?? `uid-${name}`, resourceVersion: o.resourceVersion ?? '1' };
}

/** A namespaced object's name, namespace (`default` unless given), uid and resourceVersion. */
function namespacedIdentity(name: string, o: { namespace?: string; uid?: string; resourceVersion?: string }) {
  return { name, namespace: o.namespace ?? 'default', ...identity(name, o) };
}

// The builders (upstream's st.MakePod() and friends, options instead of chained calls): each sets only the kind, a
// name, a stable uid `uid-<name>` and what the options name, so a table case reads as the object it describes.

/** Labelled with its hostname, as the kubelet labels a node; `zone` and `region` set the topology labels (even ''). */
export function makeNode(
  name: string,
  o: {
    labels?: Record<string, string>;
    zone?: string;
    region?: string;
    uid?: string;
    resourceVersion?: string;
    allocatable?: ResourceList;
    images?: NonNullable<Node['status']>['images'];
    status?: Node['status'];
  } = {},
): Node {
  const status = {
    ...(o.allocatable ? { allocatable: o.allocatable } : {}),
    ...(o.images ? { images: o.images } : {}),
    ...o.status,
  };
  return {
    kind: 'Node',
    metadata: {
      name,
      ...identity(name, o),
      labels: {
        'kubernetes.io/hostname': name,
        ...(o.region === undefined ? {} : { 'topology.kubernetes.io/region': o.region }),
        ...(o.zone === undefined ? {} : { 'topology.kubernetes.io/zone': o.zone }),
        ...o.labels,
      },
    },
    ...(Object.keys(status).length > 0 ? { status } : {}),
  };
}

/**
 * `nodeName` also makes the phase Running (Pending otherwise), as a scheduled pod's would be. One container `c`
 * holds `requests` unless `containers` are given; `claims` become `persistentVolumeClaim` volumes after `volumes`.
 */
export function makePod(
  name: string,
  o: {
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    nodeName?: string;
    schedulerName?: string;
    priority?: number;
    requests?: ResourceList;
    containers?: Container[];
    initContainers?: Container[];
    overhead?: ResourceList;
    volumes?: Volume[];
    claims?: string[];
    phase?: string;
    nominatedNodeName?: string;
    startTime?: string;
  } = {},
): Pod {
  const volumes = [
    ...(o.volumes ?? []),
    ...(o.claims ?? []).map((c, i) => ({ name: `v${i}`, persistentVolumeClaim: { claimName: c } })),
  ];
  return {
    kind: 'Pod',
    metadata: {
      ...namespacedIdentity(name, o),
      ...(o.labels ? { labels: o.labels } : {}),
    },
    spec: {
      ...(o.nodeName ? { nodeName: o.nodeName } : {}),
      ...(o.schedulerName ? { schedulerName: o.schedulerName } : {}),
      ...(o.priority === undefined ? {} : { priority: o.priority }),
      containers: o.containers ?? [{ name: 'c', ...(o.requests ? { resources: { requests: o.requests } } : {}) }],
      ...(o.initContainers ? { initContainers: o.initContainers } : {}),
      ...(o.overhead ? { overhead: o.overhead } : {}),
      ...(o.volumes || o.claims ? { volumes } : {}),
    },
    status: {
      phase: o.phase ?? (o.nodeName ? 'Running' : 'Pending'),
      ...(o.nominatedNodeName ? { nominatedNodeName: o.nominatedNodeName } : {}),
      ...(o.startTime ? { startTime: o.startTime } : {}),
    },
  };
}

/** `bindCompleted` marks the PV controller's work on a claim with a `volumeName` as done. */
export function makePVC(
  name: string,
  o: {
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    ownerReferences?: ObjectMeta['ownerReferences'];
    className?: string;
    volumeName?: string;
    size?: string;
    phase?: string;
    bindCompleted?: boolean;
    spec?: PersistentVolumeClaim['spec'];
  } = {},
): PersistentVolumeClaim {
  const annotations = {
    ...(o.bindCompleted ? { 'pv.kubernetes.io/bind-completed': 'yes' } : {}),
    ...o.annotations,
  };
  return {
    kind: 'PersistentVolumeClaim',
    metadata: {
      ...namespacedIdentity(name, o),
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      ...(o.ownerReferences ? { ownerReferences: o.ownerReferences } : {}),
    },
    spec: {
      ...(o.className === undefined ? {} : { storageClassName: o.className }),
      ...(o.volumeName ? { volumeName: o.volumeName } : {}),
      ...(o.size ? { resources: { requests: { storage: o.size } } } : {}),
      ...o.spec,
    },
    ...(o.phase ? { status: { phase: o.phase } } : {}),
  };
}

/** `affinity` is one required node selector term, `In` for each label key. */
export function makePV(
  name: string,
  o: {
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    className?: string;
    size?: string;
    phase?: string;
    affinity?: Record<string, string[]>;
    spec?: PersistentVolume['spec'];
  } = {},
): PersistentVolume {
  const affinity = o.affinity;
  return {
    kind: 'PersistentVolume',
    metadata: {
      name,
      ...identity(name, o),
      ...(o.labels ? { labels: o.labels } : {}),
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    spec: {
      ...(o.className === undefined ? {} : { storageClassName: o.className }),
      ...(o.size ? { capacity: { storage: o.size } } : {}),
      ...(affinity
        ? {
            nodeAffinity: {
              required: {
                nodeSelectorTerms: [
                  {
                    matchExpressions: Object.entries(affinity).map(([key, values]) => ({
                      key,
                      operator: 'In',
                      values,
                    })),
                  },
                ],
              },
            },
          }
        : {}),
      ...o.spec,
    },
    ...(o.phase ? { status: { phase: o.phase } } : {}),
  };
}

export function makeStorageClass(
  name: string,
  o: { uid?: string; provisioner?: string; mode?: string; allowedTopologies?: StorageClass['allowedTopologies'] } = {},
): StorageClass {
  return {
    kind: 'StorageClass',
    metadata: { name, ...identity(name, o) },
    provisioner: o.provisioner ?? 'kubernetes.io/no-provisioner',
    volumeBindingMode: o.mode ?? 'WaitForFirstConsumer',
    ...(o.allowedTopologies ? { allowedTopologies: o.allowedTopologies } : {}),
  };
}

export function makeCSIStorageCapacity(
  name: string,
  o: {
    className: string;
    uid?: string;
    namespace?: string;
    nodeTopology?: CSIStorageCapacity['nodeTopology'];
    capacity?: string;
    maximumVolumeSize?: string;
  },
): CSIStorageCapacity {
  return {
    kind: 'CSIStorageCapacity',
    metadata: namespacedIdentity(name, o),
    storageClassName: o.className,
    ...(o.nodeTopology ? { nodeTopology: o.nodeTopology } : {}),
    ...(o.capacity ? { capacity: o.capacity } : {}),
    ...(o.maximumVolumeSize ? { maximumVolumeSize: o.maximumVolumeSize } : {}),
  };
}

export function makeCSIDriver(
  name: string,
  o: { uid?: string; storageCapacity?: boolean; attachRequired?: boolean } = {},
): CSIDriver {
  return {
    kind: 'CSIDriver',
    metadata: { name, ...identity(name, o) },
    spec: {
      ...(o.attachRequired === undefined ? {} : { attachRequired: o.attachRequired }),
      ...(o.storageCapacity === undefined ? {} : { storageCapacity: o.storageCapacity }),
    },
  };
}

export function makeCSINode(
  name: string,
  o: { uid?: string; annotations?: Record<string, string>; drivers?: CSINode['spec']['drivers'] } = {},
): CSINode {
  return {
    kind: 'CSINode',
    metadata: {
      name,
      ...identity(name, o),
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    spec: { drivers: o.drivers ?? [] },
  };
}
