// Heap bytes per cached pod: 50,000 full pods (as the API returns them) parsed from JSON and fed through the store
// (which trims) and the scheduler cache (which aggregates per node). Target: ≤ 2 KiB per pod.
// Run: ./node_modules/.bin/node --expose-gc bench/live/memory.ts [pods]
import { ClusterStore } from '../../src/cluster/store.ts';
import type { Node, Pod } from '../../src/cluster/types.ts';
import { syntheticNode, syntheticPod } from './synthetic.ts';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error('bench/live/memory.ts needs --expose-gc: ./node_modules/.bin/node --expose-gc bench/live/memory.ts');
  process.exit(2);
}

const PODS = Number(process.argv[2] ?? 50_000);
const NODES = Math.ceil(PODS / 30);

function heap(): number {
  for (let i = 0; i < 3; i++) gc!();
  return process.memoryUsage().heapUsed;
}

const store = new ClusterStore();
for (let i = 0; i < NODES; i++) store.upsert('Node', JSON.parse(JSON.stringify(syntheticNode(i))) as Node);
const sample = JSON.stringify(syntheticPod(1, 'node-00001', { claim: true }));

const base = heap();
let jsonBytes = 0;
const started = performance.now();
for (let i = 0; i < PODS; i++) {
  // Every pod travels as JSON text, as from the API, so no string is shared with the generator.
  const text = JSON.stringify(syntheticPod(i, `node-${String(i % NODES).padStart(5, '0')}`, { claim: i % 10 === 0 }));
  jsonBytes += text.length;
  store.upsert('Pod', JSON.parse(text) as Pod);
}
const loadMs = performance.now() - started;
const afterStore = heap();

let cacheNote = 'scheduler cache: not measured (src/cache/cache.ts missing)';
let afterCache = afterStore;
try {
  const { NodeInfoCache } = await import('../../src/cache/cache.ts');
  const cache = new NodeInfoCache();
  const t = performance.now();
  cache.attach(store);
  const attachMs = performance.now() - t;
  afterCache = heap();
  cacheNote = `scheduler cache: ${cache.podCount()} pods on ${cache.nodeCount()} nodes, fed in ${attachMs.toFixed(0)} ms`;
  // Keep the cache reachable until measured.
  if (cache.podCount() !== PODS) console.error(`warning: cache holds ${cache.podCount()} pods, expected ${PODS}`);
} catch (err) {
  cacheNote += ` (${(err as Error).message})`;
}

const kib = (b: number) => `${(b / 1024).toFixed(2)} KiB`;
const storePerPod = (afterStore - base) / PODS;
const totalPerPod = (afterCache - base) / PODS;
console.log(
  `pods: ${PODS} on ${NODES} nodes; full pod JSON: avg ${kib(jsonBytes / PODS)} (sample with claim ${kib(sample.length)})`,
);
console.log(`loaded through the store in ${(loadMs / 1000).toFixed(1)} s`);
console.log(cacheNote);
console.log(`heap per pod, store (trimmed objects): ${Math.round(storePerPod)} B (${kib(storePerPod)})`);
console.log(`heap per pod, store + cache:           ${Math.round(totalPerPod)} B (${kib(totalPerPod)})`);
console.log(`target ≤ 2 KiB per pod: ${totalPerPod <= 2048 ? 'met' : 'NOT met'}`);
// Keep the store alive until here.
if (store.count('Pod') !== PODS) process.exitCode = 1;
