// bench-helper
// Child process for bench/live/time-to-ready.ts and bench/results.ts: a fake API server loaded with a synthetic
// cluster, on its own heap and event loop so serving does not compete with the client's event loop. Prints one JSON
// line with the URL when listening.
//   NODES PODS                 N nodes and M full pods as the API returns them (bench/live/synthetic.ts)
//   --local-storage NODES      the local-storage cluster of bench/synthetic.ts (per-node CSIStorageCapacity, 10 local
//                              PVs per node, ~30 pods per node)
// Then it reads commands on stdin, one a line, to drive watch events (pods as the API returns them, on the nodes):
//   add N     N new running pods (ADDED)       modify N   the same pods, changed (MODIFIED), then one more pod added
//   delete    the pods added so far (DELETED)
// Each is answered {"prepared":"add"} once its objects are built, then, after a `go` line, with
// {"done":"add","events":N,"ms":T} once every event is written to the watches (so a client times the events alone).
// It exits when its stdin closes (its parent is gone).
// Usage: node bench/live/fake-server-process.ts NODES PODS | --local-storage NODES
import { createInterface } from 'node:readline';
import { FakeApiServer, type FakeObject } from '../../test/cluster/kube/fake-apiserver.ts';
import { generateCluster, LOCAL_STORAGE_SHAPE, nodeName } from '../synthetic.ts';
import { syntheticNode, syntheticPod } from './synthetic.ts';

const localStorageShape = process.argv[2] === '--local-storage';
const nodes = Number(process.argv[localStorageShape ? 3 : 2] ?? 5_000);
const pods = localStorageShape ? 0 : Number(process.argv[3] ?? 150_000);
const server = new FakeApiServer({ bookmarkIntervalMs: 1_000 });
process.on('SIGTERM', () => {
  server.stop().then(() => process.exit(0));
});
const started = performance.now();
const cluster = localStorageShape ? generateCluster({ ...LOCAL_STORAGE_SHAPE, nodes, seed: 1 }) : undefined;
server.load(
  cluster
    ? (cluster.objects as FakeObject[])
    : (function* () {
        for (let i = 0; i < nodes; i++) yield syntheticNode(i) as unknown as FakeObject;
        for (let i = 0; i < pods; i++) {
          const node = i % 50 === 0 ? undefined : nodeName(i % nodes);
          yield syntheticPod(i, node, { claim: i % 10 === 0 }) as unknown as FakeObject;
        }
      })(),
);
const podCount = cluster ? cluster.counts.Pod : pods;
if (cluster) cluster.objects.length = 0; // the server keeps its own JSON
const url = await server.start();
console.log(JSON.stringify({ url, nodes, pods: podCount, loadMs: Math.round(performance.now() - started) }));

// Churned pods are full pods like the loaded ones, named and identified apart from them (and from each other).
let churned = 0;
let modified = 0;
const churnPod = (i: number, generation: number) => {
  const pod = syntheticPod(i, nodeName(i % nodes)) as unknown as FakeObject;
  pod.metadata.name = `churn-${i}`;
  pod.metadata.uid = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
  if (generation > 0) (pod.metadata.labels as Record<string, string>).generation = String(generation);
  return pod;
};
/** Each command builds its objects, then returns what sends them. */
const commands: Record<string, (n: number) => () => number> = {
  add: (n) => {
    const pods = Array.from({ length: n }, () => churnPod(churned++, 0));
    return () => {
      for (const pod of pods) server.add(pod);
      return pods.length;
    };
  },
  modify: (n) => {
    modified++;
    const pods = Array.from({ length: n }, (_, k) => churnPod(k % churned, modified));
    // The pod count moving by one tells a client that every modification before it has arrived.
    const last = churnPod(churned++, 0);
    return () => {
      for (const pod of pods) server.update(pod);
      server.add(last);
      return pods.length + 1;
    };
  },
  delete: () => {
    const names = Array.from({ length: churned }, (_, k) => churnPod(k, 0).metadata);
    churned = 0;
    return () => {
      for (const { name, namespace } of names) server.remove('Pod', name, namespace);
      return names.length;
    };
  },
};
let send: { verb: string; run: () => number } | undefined;
for await (const line of createInterface(process.stdin)) {
  const [verb, count] = line.trim().split(/\s+/);
  if (verb === 'go' && send) {
    const t = performance.now();
    const events = send.run();
    console.log(JSON.stringify({ done: send.verb, events, ms: Math.round(performance.now() - t) }));
    send = undefined;
    continue;
  }
  const command = commands[verb];
  if (!command) {
    console.error(`fake-server-process: unknown or out-of-order command ${JSON.stringify(line)}`);
    continue;
  }
  send = { verb, run: command(Number(count ?? 0)) };
  console.log(JSON.stringify({ prepared: verb }));
}
// stdin closed: the parent is gone (or never talks); do not outlive it.
await server.stop();
process.exit(0);
