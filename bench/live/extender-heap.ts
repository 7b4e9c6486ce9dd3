// The heap a whole extender keeps once ready: the generated local-storage shape served from a cluster-state file
// through the real wiring (store, scheduler cache, volume binder and its assume caches, plugins, the Fastify app), one
// /metrics scrape (which builds the storage headroom, as Prometheus would), then full GCs. Every major GC marks this
// heap, so it is what a burst's GC pauses scale with. bench/results.ts imports measureExtenderHeap().
// The figure includes the cluster-state source's own copy of the objects (its map and the file's text): a kube-mode
// extender keeps neither.
// Run: ./node_modules/.bin/node bench/live/extender-heap.ts [nodes]
import { createTestExtender } from '../../test/helpers/extender.ts';
import { generateCluster, LOCAL_STORAGE_SHAPE } from '../synthetic.ts';
import { collectGarbage, fullGCMs } from './memory.ts';

export interface ExtenderHeap {
  nodes: number;
  runningPods: number;
  persistentVolumes: number;
  /** Heap used after full GCs, minus the same before the cluster was generated (modules already loaded). */
  heapBytes: number;
  /** One full GC of that heap (median of five), in ms: what a major GC's marking scales with. */
  fullGCMs: number;
}

export async function measureExtenderHeap(nodes: number): Promise<ExtenderHeap> {
  const base = collectGarbage();
  let cluster: ReturnType<typeof generateCluster> | undefined = generateCluster({ ...LOCAL_STORAGE_SHAPE, nodes });
  const { runningPods, PersistentVolume: persistentVolumes } = cluster.counts;
  const t = await createTestExtender(cluster.objects, {}, { volumeController: false });
  cluster = undefined; // the generator's copy is not the extender's
  try {
    const scrape = await t.request.get('/metrics');
    if (scrape.status !== 200) throw new Error(`/metrics answered ${scrape.status}`);
    const heapBytes = collectGarbage() - base;
    const gcMs = fullGCMs();
    if (t.cache.podCount() !== runningPods) throw new Error(`cache holds ${t.cache.podCount()} of ${runningPods} pods`);
    return { nodes, runningPods, persistentVolumes, heapBytes, fullGCMs: gcMs };
  } finally {
    await t.close();
  }
}

if (import.meta.main) {
  const r = await measureExtenderHeap(Number(process.argv[2] ?? 5000));
  console.log(
    `${r.nodes} nodes, ${r.runningPods} running pods, ${r.persistentVolumes} PVs: the ready extender's heap ` +
      `${(r.heapBytes / 2 ** 20).toFixed(0)} MiB after full GCs; one full GC of it ${r.fullGCMs.toFixed(0)} ms`,
  );
}
