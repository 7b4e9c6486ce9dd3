// Does the volume filter's cost follow candidates × claims rather than the cluster's PV count?
// The same pod is filtered against the same 100 candidate nodes in a cluster of 20,000 and of 200,000 PVs, in two
// shapes:
//   hostname  10 local PVs per candidate (hostname affinity); the extra PVs live on other nodes, most already bound
//   zonal     30 free zonal PVs (zone affinity, 10 per zone); every extra PV is zonal too, in the candidates' zones,
//             and bound to some other claim: the shape of CSI disks provisioned for running pods, which shares the
//             candidates' topology buckets unless bound PVs are kept out of them
//   capacity  one CSIStorageCapacity per node (hostname-pinned, as local-storage CSI drivers publish them), 500 and
//             5,000 of them, and three claims of that class: the capacity check must not scan every capacity
// Prints the timings and their ratio per shape (≤ 1.5 is the goal, as issue 9 says). bench/results.ts imports measureScaling().
// Run: ./node_modules/.bin/node bench/volumes/filter-scaling.ts
import { performance } from 'node:perf_hooks';
import type { NodeInfo } from '../../src/cache/node-info.ts';
import { ClusterStore } from '../../src/cluster/store.ts';
import type { Node, PersistentVolume, PersistentVolumeClaim, Pod } from '../../src/cluster/types.ts';
import type { ClusterWriter } from '../../src/cluster/writer.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import { buildVolumePlugins } from '../../src/plugins/index.ts';

const PVS_PER_NODE = 10;
const CANDIDATES = 100;
const CLAIMS = 3;
const ZONES = 3;
const FREE_ZONAL_PER_ZONE = 10;
const ZONE_KEY = 'topology.kubernetes.io/zone';

export type Shape = 'hostname' | 'zonal' | 'capacity';

const noWrites: ClusterWriter = {
  bindPod: async () => {},
  nominatePod: async () => {},
  updatePersistentVolume: async (pv) => pv,
  updatePersistentVolumeClaim: async (pvc) => pvc,
  unbindPersistentVolume: async (pv) => pv,
  bindClaimToVolume: async (pvc) => pvc,
  getPod: async () => undefined,
  getPersistentVolume: async () => undefined,
  getPersistentVolumeClaim: async () => undefined,
};

function node(i: number): Node {
  const name = `node-${i}`;
  return {
    metadata: {
      name,
      uid: name,
      resourceVersion: '1',
      labels: { 'kubernetes.io/hostname': name, 'topology.kubernetes.io/zone': `zone-${i % 3}` },
    },
  };
}

function localPV(nodeIndex: number, j: number, boundTo?: string): PersistentVolume {
  const name = `pv-${nodeIndex}-${j}`;
  return {
    metadata: { name, uid: name, resourceVersion: '1' },
    spec: {
      capacity: { storage: `${10 + j}Gi` },
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'local',
      local: { path: `/mnt/${name}` },
      ...(boundTo ? { claimRef: { namespace: 'other', name: boundTo, uid: boundTo } } : {}),
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [`node-${nodeIndex}`] }] },
          ],
        },
      },
    },
    status: { phase: boundTo ? 'Bound' : 'Available' },
  };
}

function zonalPV(i: number, zone: string, boundTo?: string): PersistentVolume {
  const name = `zonal-pv-${i}`;
  return {
    metadata: { name, uid: name, resourceVersion: '1' },
    spec: {
      capacity: { storage: `${10 + (i % 10)}Gi` },
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'zonal',
      csi: { driver: 'disk.csi.example.com', volumeHandle: name },
      ...(boundTo ? { claimRef: { namespace: 'other', name: boundTo, uid: boundTo } } : {}),
      nodeAffinity: {
        required: { nodeSelectorTerms: [{ matchExpressions: [{ key: ZONE_KEY, operator: 'In', values: [zone] }] }] },
      },
    },
    status: { phase: boundTo ? 'Bound' : 'Available' },
  };
}

function nodeInfoOf(n: Node): NodeInfo {
  const zero = { milliCPU: 0, memory: 0, ephemeralStorage: 0, pods: 0, scalar: {} };
  return {
    name: n.metadata.name,
    node: n,
    pods: new Map(),
    allocatable: zero,
    requested: zero,
    nonZeroRequested: zero,
    usedPorts: new Map(),
    imageStates: new Map(),
    pvcRefCounts: new Map(),
    csiVolumes: new Map(),
    generation: 0,
  };
}

function buildCluster(totalPVs: number, shape: Shape) {
  const store = new ClusterStore();
  const className = shape === 'hostname' ? 'local' : shape === 'zonal' ? 'zonal' : 'lvm';
  store.upsert('StorageClass', {
    metadata: { name: className, uid: className, resourceVersion: '1' },
    provisioner: shape === 'capacity' ? 'lvm.csi.example.com' : 'kubernetes.io/no-provisioner',
    volumeBindingMode: 'WaitForFirstConsumer',
  });
  const nodes: Node[] = [];
  if (shape === 'capacity') {
    // `totalPVs` counts capacity objects here: one per node.
    store.upsert('CSIDriver', {
      metadata: { name: 'lvm.csi.example.com', uid: 'lvm', resourceVersion: '1' },
      spec: { storageCapacity: true },
    });
    for (let i = 0; i < totalPVs; i++) {
      const n = node(i);
      nodes.push(n);
      store.upsert('Node', n);
      store.upsert('CSIStorageCapacity', {
        metadata: { name: `lvm-${i}`, namespace: 'kube-system', uid: `lvm-${i}`, resourceVersion: '1' },
        storageClassName: className,
        nodeTopology: { matchLabels: { 'kubernetes.io/hostname': n.metadata.name } },
        capacity: '500Gi',
      });
    }
  } else if (shape === 'hostname') {
    const nodeCount = totalPVs / PVS_PER_NODE;
    for (let i = 0; i < nodeCount; i++) {
      const n = node(i);
      nodes.push(n);
      store.upsert('Node', n);
      for (let j = 0; j < PVS_PER_NODE; j++) {
        // Candidates keep all their PVs free; elsewhere most PVs are already bound, as in a busy cluster.
        const bound = i >= CANDIDATES && j < PVS_PER_NODE - 2 ? `c-${i}-${j}` : undefined;
        store.upsert('PersistentVolume', localPV(i, j, bound));
      }
    }
  } else {
    for (let i = 0; i < CANDIDATES; i++) {
      const n = node(i);
      nodes.push(n);
      store.upsert('Node', n);
    }
    const free = ZONES * FREE_ZONAL_PER_ZONE;
    for (let i = 0; i < totalPVs; i++) {
      // The first PVs are free (some in every zone); every other one is bound to a claim of a running pod.
      store.upsert('PersistentVolume', zonalPV(i, `zone-${i % ZONES}`, i < free ? undefined : `c-${i}`));
    }
  }
  const claims: PersistentVolumeClaim[] = [];
  for (let c = 0; c < CLAIMS; c++) {
    const claim: PersistentVolumeClaim = {
      metadata: { name: `data-${c}`, namespace: 'default', uid: `claim-${c}`, resourceVersion: '1' },
      spec: {
        accessModes: ['ReadWriteOnce'],
        storageClassName: className,
        resources: { requests: { storage: `${5 + c}Gi` } },
      },
    };
    claims.push(claim);
    store.upsert('PersistentVolumeClaim', claim);
  }
  const pod: Pod = {
    metadata: { name: 'web-0', namespace: 'default', uid: 'web-0', resourceVersion: '1' },
    spec: {
      containers: [{ name: 'c' }],
      volumes: claims.map((c, i) => ({ name: `v${i}`, persistentVolumeClaim: { claimName: c.metadata.name } })),
    },
  };
  const plugins = buildVolumePlugins({ store, writer: noWrites });
  const candidates = nodes.slice(0, CANDIDATES).map(nodeInfoOf);
  return { plugins, pod, candidates };
}

/** One filter request: preFilter once, then every plugin's filter on every candidate. Returns feasible nodes. */
function filterOnce({ plugins, pod, candidates }: ReturnType<typeof buildCluster>): number {
  const state = new CycleState();
  const active = plugins.filter((p) => (p.preFilter ? p.preFilter(state, pod).code === 'Success' : true));
  let feasible = 0;
  for (const ni of candidates) {
    if (active.every((p) => !p.filter || p.filter(state, pod, ni).code === 'Success')) feasible++;
  }
  return feasible;
}

interface Measured {
  ms: number;
  feasible: number;
  buildMs: number;
}

export const SCALING_ROUNDS = 21;
export const SCALING_PER_ROUND = 100;

/**
 * Both clusters are built first and measured in alternating rounds (small, large, large, small, ...), so a drift in
 * the shared machine's load or a GC of the other cluster's garbage hits both alike; median of the rounds.
 */
function measurePair(few: number, many: number, shape: Shape): { small: Measured; large: Measured } {
  const build = (total: number) => {
    const t0 = performance.now();
    const cluster = buildCluster(total, shape);
    return { cluster, buildMs: performance.now() - t0, feasible: 0, samples: [] as number[] };
  };
  const sides = [build(few), build(many)];
  for (const side of sides) for (let i = 0; i < 50; i++) side.feasible = filterOnce(side.cluster); // warm-up
  for (let round = 0; round < SCALING_ROUNDS; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const start = performance.now();
      for (let i = 0; i < SCALING_PER_ROUND; i++) filterOnce(side.cluster);
      side.samples.push((performance.now() - start) / SCALING_PER_ROUND);
    }
  }
  const [small, large] = sides.map(({ samples, feasible, buildMs }) => {
    samples.sort((a, b) => a - b);
    return { ms: samples[Math.floor(samples.length / 2)], feasible, buildMs };
  });
  return { small, large };
}

export const SCALING_SIZES = { hostname: [20_000, 200_000], zonal: [20_000, 200_000], capacity: [500, 5_000] } as const;
export const SCALING_GOAL = 1.5;

export interface ScalingResult {
  shape: Shape;
  /** What the sizes count: PVs, or CSIStorageCapacity objects. */
  what: 'PVs' | 'CSIStorageCapacity';
  few: number;
  many: number;
  small: Measured;
  large: Measured;
  /** large.ms / small.ms */
  ratio: number;
  /** Every candidate fitted at both sizes, as the cluster is built for. */
  verdictsOk: boolean;
}

/** One shape at its two sizes; bench/results.ts imports this for bench/RESULTS.md. */
export function measureScaling(shape: Shape): ScalingResult {
  const [few, many] = SCALING_SIZES[shape];
  const { small, large } = measurePair(few, many, shape);
  return {
    shape,
    what: shape === 'capacity' ? 'CSIStorageCapacity' : 'PVs',
    few,
    many,
    small,
    large,
    ratio: large.ms / small.ms,
    verdictsOk: small.feasible === CANDIDATES && large.feasible === CANDIDATES,
  };
}

export const SCALING_SHAPES = ['hostname', 'zonal', 'capacity'] as const satisfies readonly Shape[];

if (import.meta.main) {
  for (const shape of SCALING_SHAPES) {
    const { what, few, many, small, large, ratio, verdictsOk } = measureScaling(shape);
    console.log(
      `${shape}: candidates=${CANDIDATES} claims=${CLAIMS} (median of ${SCALING_ROUNDS} alternating rounds × ${SCALING_PER_ROUND} filter requests)`,
    );
    console.log(
      `  ${few.toLocaleString('en')} ${what}: ${small.ms.toFixed(3)} ms/request, ${small.feasible} feasible (cluster built in ${small.buildMs.toFixed(0)} ms)`,
    );
    console.log(
      `  ${many.toLocaleString('en')} ${what}: ${large.ms.toFixed(3)} ms/request, ${large.feasible} feasible (cluster built in ${large.buildMs.toFixed(0)} ms)`,
    );
    console.log(
      `  ratio ${many}/${few}: ${ratio.toFixed(2)}× (goal ≤ ${SCALING_GOAL}×) ${ratio <= SCALING_GOAL ? 'OK' : 'OVER'}`,
    );
    if (!verdictsOk) {
      console.error(`${shape}: unexpected verdicts: every candidate should fit`);
      process.exitCode = 1;
    }
  }
}
