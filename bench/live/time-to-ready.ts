// Time from KubeSource.start() to every kind synced, against a fake API server holding 5,000 nodes and 150,000 full
// pods (realistic objects, ~6 KiB of JSON each), listed in pages of 500 through client-node's transport and fed
// through the store (trimming) and the scheduler cache. bench/results.ts imports startFakeApiServer() and
// measureTimeToReady() for the same figures on the local-storage cluster.
// Run: ./node_modules/.bin/node --expose-gc bench/live/time-to-ready.ts [nodes] [pods]
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { NodeInfoCache } from '../../src/cache/cache.ts';
import { KubeSource } from '../../src/cluster/kube/source.ts';
import { loadKubeConfig } from '../../src/cluster/kubeconfig.ts';
import { ClusterStore } from '../../src/cluster/store.ts';
import { writeKubeconfig } from '../../test/cluster/kube/fake-apiserver.ts';
import { collectGarbage } from './memory.ts';

export interface FakeApiServerProcess {
  url: string;
  kubeconfig: string;
  nodes: number;
  pods: number;
  loadMs: number;
  /**
   * Builds the objects of a churn command of fake-server-process.ts (add/modify/delete N); the function it resolves
   * to sends their events and resolves when every one is written to the watches.
   */
  churn: (verb: 'add' | 'modify' | 'delete', count?: number) => Promise<() => Promise<{ events: number; ms: number }>>;
  stop: () => Promise<void>;
}

/** bench/live/fake-server-process.ts in a child process, with `args` (`NODES PODS` or `--local-storage NODES`). */
export async function startFakeApiServer(args: string[]): Promise<FakeApiServerProcess> {
  const child = spawn(
    process.execPath,
    ['--max-old-space-size=8192', fileURLToPath(new URL('./fake-server-process.ts', import.meta.url)), ...args],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const kill = () => child.kill('SIGTERM');
  process.on('exit', kill);
  const lines = createInterface(child.stdout)[Symbol.asyncIterator]();
  const next = async () => {
    const { value, done } = await lines.next();
    if (done) throw new Error('fake-server-process.ts exited');
    return JSON.parse(value) as Record<string, unknown>;
  };
  const info = (await next()) as { url: string; nodes: number; pods: number; loadMs: number };
  return {
    ...info,
    kubeconfig: await writeKubeconfig(info.url),
    churn: async (verb, count = 0) => {
      child.stdin.write(`${verb} ${count}\n`);
      await next(); // {"prepared": verb}
      return async () => {
        child.stdin.write('go\n');
        return (await next()) as { events: number; ms: number };
      };
    },
    stop: async () => {
      process.off('exit', kill);
      if (child.exitCode !== null) return;
      kill();
      await once(child, 'exit');
    },
  };
}

export interface TimeToReady {
  seconds: number;
  synced: boolean;
  nodes: number;
  pods: number;
  cachedPods: number;
  /** Heap after sync (after GC), everything the process holds included. */
  heapBytes: number;
  /** What the heap grew by from before the source started: the source, the store and the cache. */
  heapGrowthBytes: number;
}

/** A KubeSource feeding a store and the scheduler cache in this process, from start() to every kind synced. */
export async function measureTimeToReady(kubeconfig: string): Promise<TimeToReady> {
  const base = collectGarbage();
  const store = new ClusterStore();
  const cache = new NodeInfoCache();
  cache.attach(store);
  const source = new KubeSource({ kubeConfig: loadKubeConfig({ kubeconfig }) });
  const started = performance.now();
  await source.start(store);
  const seconds = (performance.now() - started) / 1000;
  const result = {
    seconds,
    synced: source.status().every((s) => s.synced),
    nodes: store.count('Node'),
    pods: store.count('Pod'),
    cachedPods: cache.podCount(),
    heapBytes: 0,
    heapGrowthBytes: 0,
  };
  await source.stop();
  result.heapBytes = collectGarbage();
  result.heapGrowthBytes = result.heapBytes - base;
  // The store and the cache are what the heap holds: keep them reachable until it is read.
  if (store.count('Pod') !== result.pods || cache.podCount() !== result.cachedPods) throw new Error('changed');
  return result;
}

if (import.meta.main) {
  const nodes = process.argv[2] ?? '5000';
  const pods = process.argv[3] ?? '150000';
  const fake = await startFakeApiServer([nodes, pods]);
  console.log(`fake API server: ${nodes} nodes, ${pods} pods, generated in ${(fake.loadMs / 1000).toFixed(1)} s`);
  const r = await measureTimeToReady(fake.kubeconfig);
  console.log(
    `time to ready: ${r.seconds.toFixed(2)} s (all kinds synced: ${r.synced}; store: ${r.nodes} nodes, ${r.pods} pods; cache: ${r.cachedPods} assigned pods)`,
  );
  console.log(
    `client heap after sync (after GC): ${(r.heapBytes / 2 ** 20).toFixed(0)} MiB` +
      ` = ${Math.round(r.heapBytes / r.pods)} B per pod, everything included; grown by ${(r.heapGrowthBytes / 2 ** 20).toFixed(0)} MiB` +
      ` = ${Math.round(r.heapGrowthBytes / r.pods)} B per pod for the source, store and cache`,
  );
  await fake.stop();
}
