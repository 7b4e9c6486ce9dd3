// Heap bytes per cached pod: 50,000 full pods (as the API returns them) parsed from JSON and fed through the store
// (which trims) and the scheduler cache (which aggregates per node). Target: ≤ 2 KiB per pod. bench/results.ts
// imports measurePodHeap().
// Run: ./node_modules/.bin/node --expose-gc bench/live/memory.ts [pods]
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { NodeInfoCache } from '../../src/cache/cache.ts';
import { ClusterStore } from '../../src/cluster/store.ts';
import type { Node, Pod } from '../../src/cluster/types.ts';
import { syntheticNode, syntheticPod } from './synthetic.ts';

export const HEAP_PER_POD_TARGET = 2048;

let gc = (globalThis as { gc?: () => void }).gc;
/** V8's gc function. Without --expose-gc, it is exposed at run time (a fresh context has it). */
function fullGC(): () => void {
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  return gc;
}

/** Full GCs, then the heap in use. */
export function collectGarbage(): number {
  for (let i = 0; i < 3; i++) fullGC()();
  return process.memoryUsage().heapUsed;
}

/** Milliseconds one full, non-incremental GC takes (the median of `times`): its marking visits the whole live heap. */
export function fullGCMs(times = 5): number {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const t = performance.now();
    fullGC()();
    ms.push(performance.now() - t);
  }
  return ms.sort((a, b) => a - b)[Math.floor(times / 2)];
}

export interface PodHeap {
  pods: number;
  nodes: number;
  /** Average JSON size of a pod as the API sends it. */
  jsonBytesPerPod: number;
  loadMs: number;
  attachMs: number;
  cachedPods: number;
  storeBytesPerPod: number;
  /** Store + scheduler cache: the figure the ≤ 2 KiB target is about. */
  totalBytesPerPod: number;
}

export function measurePodHeap(pods = 50_000): PodHeap {
  const nodes = Math.ceil(pods / 30);
  const store = new ClusterStore();
  for (let i = 0; i < nodes; i++) store.upsert('Node', JSON.parse(JSON.stringify(syntheticNode(i))) as Node);
  const base = collectGarbage();
  let jsonBytes = 0;
  const started = performance.now();
  for (let i = 0; i < pods; i++) {
    // Every pod travels as JSON text, as from the API, so no string is shared with the generator.
    const text = JSON.stringify(syntheticPod(i, `node-${String(i % nodes).padStart(5, '0')}`, { claim: i % 10 === 0 }));
    jsonBytes += text.length;
    store.upsert('Pod', JSON.parse(text) as Pod);
  }
  const loadMs = performance.now() - started;
  const afterStore = collectGarbage();
  const cache = new NodeInfoCache();
  const t = performance.now();
  cache.attach(store);
  const attachMs = performance.now() - t;
  const afterCache = collectGarbage();
  const result = {
    pods,
    nodes,
    jsonBytesPerPod: jsonBytes / pods,
    loadMs,
    attachMs,
    cachedPods: cache.podCount(),
    storeBytesPerPod: (afterStore - base) / pods,
    totalBytesPerPod: (afterCache - base) / pods,
  };
  // The store and the cache are what was measured: keep them reachable until here.
  if (store.count('Pod') !== pods) throw new Error(`store holds ${store.count('Pod')} pods, expected ${pods}`);
  return result;
}

if (import.meta.main) {
  const r = measurePodHeap(Number(process.argv[2] ?? 50_000));
  const kib = (b: number) => `${(b / 1024).toFixed(2)} KiB`;
  const sample = JSON.stringify(syntheticPod(1, 'node-00001', { claim: true }));
  console.log(
    `pods: ${r.pods} on ${r.nodes} nodes; full pod JSON: avg ${kib(r.jsonBytesPerPod)} (sample with claim ${kib(sample.length)})`,
  );
  console.log(`loaded through the store in ${(r.loadMs / 1000).toFixed(1)} s`);
  console.log(`scheduler cache: ${r.cachedPods} pods on ${r.nodes} nodes, fed in ${r.attachMs.toFixed(0)} ms`);
  if (r.cachedPods !== r.pods) console.error(`warning: cache holds ${r.cachedPods} pods, expected ${r.pods}`);
  console.log(
    `heap per pod, store (trimmed objects): ${Math.round(r.storeBytesPerPod)} B (${kib(r.storeBytesPerPod)})`,
  );
  console.log(
    `heap per pod, store + cache:           ${Math.round(r.totalBytesPerPod)} B (${kib(r.totalBytesPerPod)})`,
  );
  console.log(`target ≤ 2 KiB per pod: ${r.totalBytesPerPod <= HEAP_PER_POD_TARGET ? 'met' : 'NOT met'}`);
}
