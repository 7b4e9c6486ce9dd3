// bench-helper
// Child process of bench/scheduler-throughput.ts: the fake API server holding the local-storage cluster
// (bench/synthetic.ts, its pending pods left out), the simulated PV controller and CSI provisioner
// (test/e2e/volume-controllers.ts), on its own heap and event loop. It creates the pending pods of a phase itself and
// times them from creation to their last Binding, so no client's clock or event loop is in the figure.
// Prints {"url": ...} when listening, then answers one JSON line per command read on stdin:
//   {"cmd":"pods","scheduler":NAME,"claims":0|1|3,"count":N,"timeoutMs":T}
//     -> {"count":N,"bound":B,"seconds":S,"writes":{...},"misplaced":M,"doubleBooked":D}
// `claims` 1: one WaitForFirstConsumer local-storage claim (static local PVs); 3: two of those and one local-lvm claim
// (CSI, capacity published per node). `misplaced` counts claims of bound pods whose PV is not on the pod's node or
// that are not bound at all; `doubleBooked` PVs named by two claims. It exits when its stdin closes.
// Usage: node bench/scheduler/apiserver-process.ts NODES
import { createInterface } from 'node:readline';
import { FakeApiServer, type FakeObject, type StoredEvent } from '../../test/e2e/fake-apiserver.ts';
import { startVolumeControllers } from '../../test/e2e/volume-controllers.ts';
import { generateCluster, LOCAL_STORAGE_SHAPE } from '../synthetic.ts';

const nodes = Number(process.argv[2] ?? 5_000);
const server = new FakeApiServer({ bookmarkIntervalMs: 1_000, historyLimit: 200_000 });
const cluster = generateCluster({ ...LOCAL_STORAGE_SHAPE, nodes, seed: 1, pendingPerKind: 0 });
server.load(cluster.objects as FakeObject[]);
cluster.objects.length = 0;
startVolumeControllers(server);
const url = await server.start();
console.log(JSON.stringify({ url, nodes, pods: cluster.counts.Pod }));

const NAMESPACE = 'bench';
let serial = 0;

function claim(name: string, className: string, size: string): FakeObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: NAMESPACE },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: size } },
      storageClassName: className,
      volumeMode: 'Filesystem',
    },
    status: { phase: 'Pending' },
  };
}

function pod(name: string, schedulerName: string, claims: string[]): FakeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NAMESPACE, labels: { app: 'bench' } },
    spec: {
      schedulerName,
      containers: [{ name: 'main', image: 'app:1', resources: { requests: { cpu: '10m', memory: '16Mi' } } }],
      ...(claims.length > 0
        ? { volumes: claims.map((claimName, i) => ({ name: `v${i}`, persistentVolumeClaim: { claimName } })) }
        : {}),
    },
    status: { phase: 'Pending' },
  };
}

/** Writes by kind of request, counted from the server's record (which keeps growing: counted from `from`). */
function writesSince(from: number): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const w of server.writes.slice(from)) {
    const what = w.path.endsWith('/binding')
      ? 'binding'
      : w.path.endsWith('/status')
        ? 'pod status'
        : w.path.includes('/events')
          ? 'event'
          : `${w.method} ${/persistentvolumeclaims/.test(w.path) ? 'claim' : /persistentvolumes/.test(w.path) ? 'PV' : 'other'}`;
    counts[what] = (counts[what] ?? 0) + 1;
  }
  return counts;
}

type Claim = { spec: { volumeName?: string } };
type Volume = {
  spec: { nodeAffinity?: { required?: { nodeSelectorTerms?: { matchExpressions?: { values?: string[] }[] }[] } } };
};

/** Claims of bound pods not bound to a PV on the pod's node (every PV here is pinned to one hostname). */
function misplaced(pods: { name: string; claims: string[] }[]): number {
  let wrong = 0;
  for (const p of pods) {
    const node = (server.get('Pod', p.name, NAMESPACE)?.spec as { nodeName?: string } | undefined)?.nodeName;
    if (!node) continue;
    for (const c of p.claims) {
      const volumeName = (server.get('PersistentVolumeClaim', c, NAMESPACE) as unknown as Claim | undefined)?.spec
        .volumeName;
      const volume = volumeName
        ? (server.get('PersistentVolume', volumeName) as unknown as Volume | undefined)
        : undefined;
      const hosts = volume?.spec.nodeAffinity?.required?.nodeSelectorTerms?.flatMap((t) =>
        (t.matchExpressions ?? []).flatMap((e) => e.values ?? []),
      );
      if (!hosts?.includes(node)) wrong++;
    }
  }
  return wrong;
}

function doubleBooked(): number {
  const seen = new Map<string, number>();
  for (const v of server.list('PersistentVolume')) {
    const ref = (v.spec as { claimRef?: { namespace?: string; name: string } }).claimRef;
    if (ref?.namespace === NAMESPACE) seen.set(ref.name, (seen.get(ref.name) ?? 0) + 1);
  }
  return [...seen.values()].filter((n) => n > 1).length;
}

async function createAndTime(scheduler: string, claims: number, count: number, timeoutMs: number) {
  const pods = Array.from({ length: count }, () => {
    const name = `p${++serial}`;
    const names = claims === 0 ? [] : claims === 1 ? [`${name}-a`] : [`${name}-a`, `${name}-b`, `${name}-c`];
    return { name, claims: names };
  });
  for (const p of pods) {
    const [a, b, c] = p.claims;
    if (a) server.add(claim(a, 'local-storage', '20Gi'));
    if (b) server.add(claim(b, 'local-storage', '10Gi'));
    if (c) server.add(claim(c, 'local-lvm', '10Gi'));
  }
  const waiting = new Set(pods.map((p) => p.name));
  const writesFrom = server.writes.length;
  let last = 0;
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    const unsubscribe = server.subscribe((e: StoredEvent) => {
      if (e.kind !== 'Pod' || !waiting.has(e.object.metadata.name)) return;
      if (!(e.object.spec as { nodeName?: string }).nodeName) return;
      waiting.delete(e.object.metadata.name);
      last = performance.now();
      if (waiting.size === 0) {
        clearTimeout(timer);
        unsubscribe();
        resolve();
      }
    });
  });
  const start = performance.now();
  for (const p of pods) server.add(pod(p.name, scheduler, p.claims));
  await done;
  return {
    count,
    bound: count - waiting.size,
    seconds: ((waiting.size === 0 ? last : performance.now()) - start) / 1000,
    writes: writesSince(writesFrom),
    misplaced: misplaced(pods),
    doubleBooked: doubleBooked(),
  };
}

for await (const line of createInterface(process.stdin)) {
  if (!line.trim()) continue;
  const command = JSON.parse(line) as {
    cmd: string;
    scheduler: string;
    claims: number;
    count: number;
    timeoutMs: number;
  };
  if (command.cmd !== 'pods') {
    console.error(`apiserver-process: unknown command ${line}`);
    continue;
  }
  const result = await createAndTime(command.scheduler, command.claims, command.count, command.timeoutMs);
  console.log(JSON.stringify(result));
}
await server.stop();
process.exit(0);
