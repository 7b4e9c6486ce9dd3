// Time from KubeSource.start() to every kind synced, against a fake API server holding 5,000 nodes and 150,000 full
// pods (realistic objects, ~6 KiB of JSON each), listed in pages of 500 through client-node's transport and fed
// through the store (trimming) and the scheduler cache.
// Run: ./node_modules/.bin/node --expose-gc bench/live/time-to-ready.ts [nodes] [pods]
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { NodeInfoCache } from '../../src/cache/cache.ts';
import { KubeSource } from '../../src/cluster/kube/source.ts';
import { loadKubeConfig } from '../../src/cluster/kubeconfig.ts';
import { ClusterStore } from '../../src/cluster/store.ts';
import { writeKubeconfig } from '../../test/e2e/fake-apiserver.ts';

const nodes = process.argv[2] ?? '5000';
const pods = process.argv[3] ?? '150000';
const child = spawn(
  process.execPath,
  ['--max-old-space-size=8192', fileURLToPath(new URL('./fake-server-process.ts', import.meta.url)), nodes, pods],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const killChild = () => child.kill('SIGTERM');
process.on('exit', killChild);
const [line] = (await once(createInterface(child.stdout), 'line')) as [string];
const info = JSON.parse(line) as { url: string; loadMs: number };
console.log(`fake API server: ${nodes} nodes, ${pods} pods, generated in ${(info.loadMs / 1000).toFixed(1)} s`);

const store = new ClusterStore();
const cache = new NodeInfoCache();
cache.attach(store);
const source = new KubeSource({ kubeConfig: loadKubeConfig({ kubeconfig: await writeKubeconfig(info.url) }) });
const started = performance.now();
await source.start(store);
const seconds = (performance.now() - started) / 1000;
const synced = source.status().every((s) => s.synced);
console.log(
  `time to ready: ${seconds.toFixed(2)} s (all kinds synced: ${synced}; store: ${store.count('Node')} nodes, ${store.count('Pod')} pods; cache: ${cache.podCount()} assigned pods)`,
);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc) for (let i = 0; i < 3; i++) gc();
const heap = process.memoryUsage().heapUsed;
console.log(
  `client heap after sync${gc ? ' (after GC)' : ' (no --expose-gc: garbage included)'}: ${(heap / 2 ** 20).toFixed(0)} MiB` +
    ` = ${Math.round(heap / store.count('Pod'))} B per pod, everything included`,
);
await source.stop();
killChild();
