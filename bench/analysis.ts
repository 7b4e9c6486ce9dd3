// Explain and simulate on the 5,000-node local-storage cluster (bench/synthetic.ts LOCAL_STORAGE_SHAPE), in process,
// each against a baseline measured in the same run on the same state:
//   explain, summary only (limit 0)      vs filter() of the same pod over the same 5,000 nodes
//   explain, 100 nodes listed (default)  idem
//   simulate, 100 replicas of a StatefulSet with a local-storage claim template
//                                        vs 100 filter() + prioritize() cycles over the same nodes (no assumption)
//                                        and the private copy alone (copyOf)
// Timings are never asserted; the machine is shared. Writes its section of bench/RESULTS.md between the markers
// (bench/results.ts keeps it when it rewrites the file).
//
// Run: ./node_modules/.bin/node --max-old-space-size=6144 bench/analysis.ts [--nodes 5000] [--runs 3] [--out FILE]
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { AnyObject, Kind, Pod } from '../src/cluster/types.ts';
import { defaultSettings } from '../src/config.ts';
import { filter } from '../src/extender/filter.ts';
import { prioritize } from '../src/extender/prioritize.ts';
import { explain } from '../src/ops/explain.ts';
import { type StatefulSetTemplate, simulate } from '../src/ops/simulate.ts';
import { copyOf, whatIf } from '../src/ops/what-if.ts';
import { generateCluster, LOCAL_STORAGE_SHAPE } from './synthetic.ts';

export const BEGIN = '<!-- analysis: written by bench/analysis.ts -->';
export const END = '<!-- /analysis -->';

const { values: args } = parseArgs({
  options: {
    nodes: { type: 'string', default: '5000' },
    runs: { type: 'string', default: '3' },
    out: { type: 'string', default: fileURLToPath(new URL('./RESULTS.md', import.meta.url)) },
  },
});
const NODES = Number(args.nodes);
const RUNS = Number(args.runs);
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();
const loadAtStart = uptime();

const cluster = generateCluster({ ...LOCAL_STORAGE_SHAPE, nodes: NODES, seed: 1 });
const byKind = new Map<Kind, AnyObject[]>();
for (const o of cluster.objects) {
  const list = byKind.get(o.kind as Kind) ?? [];
  list.push(o);
  byKind.set(o.kind as Kind, list);
}
const started = performance.now();
const { deps } = whatIf((kind) => byKind.get(kind) ?? [], defaultSettings());
const loadMs = performance.now() - started;
const names = deps.cache.nodeNames();
const settings = defaultSettings();
console.log(
  `loaded ${names.length} nodes, ${deps.store.count('Pod')} pods, ${deps.store.count('PersistentVolume')} PVs in ${Math.round(loadMs)} ms`,
);

/** Median of RUNS timings of fn, in ms. */
function time(fn: () => unknown): number {
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    fn();
    ms.push(performance.now() - t);
  }
  return ms.sort((a, b) => a - b)[Math.floor(ms.length / 2)];
}

const pod = cluster.pending.localAndCsi[0];
const args3 = { Pod: pod as never, Nodes: null, NodeNames: names };
const filterMs = time(() => filter(args3, deps));
const explainSummaryMs = time(() => explain(deps, { pod: pod as never, limit: 0 }));
const explain100Ms = time(() => explain(deps, { pod: pod as never }));
const summary = explain(deps, { pod: pod as never, limit: 0 }).summary;
const bytes100 = JSON.stringify(explain(deps, { pod: pod as never })).length;

// A StatefulSet whose replicas each need a 20Gi local-storage PV.
const template = cluster.pending.localClaim[0] as Pod;
const set: StatefulSetTemplate = {
  kind: 'StatefulSet',
  metadata: { name: 'bench', namespace: template.metadata.namespace },
  spec: {
    replicas: 100,
    template: { spec: { containers: template.spec.containers ?? [] } },
    volumeClaimTemplates: [
      {
        metadata: { name: 'data' },
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: 'local-storage',
          resources: { requests: { storage: '20Gi' } },
        },
      },
    ],
  },
};
const localPod = cluster.pending.localClaim[0];
const cyclesMs = time(() => {
  for (let i = 0; i < 100; i++) {
    const a = { Pod: localPod as never, Nodes: null, NodeNames: names };
    const f = filter(a, deps);
    prioritize({ ...a, NodeNames: f.NodeNames }, deps);
  }
});
const copyMs = time(() => copyOf(deps.store, settings));
let placed = 0;
const simulateMs = time(() => {
  placed = simulate(deps, settings, { statefulSet: set }).placed;
});

const heapMiB = Math.round(process.memoryUsage().heapUsed / 2 ** 20);
const ms = (v: number) => (v < 10 ? v.toFixed(2) : v.toFixed(0));
const section = `${BEGIN}
## Explain and simulate (issue 10)

\`./node_modules/.bin/node --max-old-space-size=6144 bench/analysis.ts\` (also \`npm run bench -- analysis\`), in process on the
local-storage cluster: ${names.length} nodes, ${deps.store.count('Pod')} pods, ${deps.store.count('PersistentVolume')} PVs (loaded
in ${ms(loadMs)} ms). Median of ${RUNS} runs, each against a baseline of the same run; load ${loadAtStart.replace(/.*load average: /, '')} at start.
The pod explained is a pending pod with 2 local claims and 1 CSI claim; its summary: \`${summary}\`.

| what | time | baseline | ratio |
|---|---:|---:|---:|
| explain, summary and verdicts only (\`limit: 0\`), ${names.length} nodes | ${ms(explainSummaryMs)} ms | filter() of the pod over the same nodes: ${ms(filterMs)} ms | ${(explainSummaryMs / filterMs).toFixed(2)}× |
| explain, 100 nodes listed with volume detail (the default; ${Math.round(bytes100 / 1024)} KiB of JSON) | ${ms(explain100Ms)} ms | same | ${(explain100Ms / filterMs).toFixed(2)}× |
| simulate, 100 StatefulSet replicas with a 20Gi local-storage claim (${placed} placed) | ${ms(simulateMs)} ms | 100 filter() + prioritize() cycles over the same nodes: ${ms(cyclesMs)} ms | ${(simulateMs / cyclesMs).toFixed(2)}× |
| of which the private copy of the state | ${ms(copyMs)} ms | | |

Heap after the run: ${heapMiB} MiB. The summary and verdicts are one filter run. The volume detail walks the filter's
index: per listed node and claim, only the PVs that could be on the node (its topology buckets, PVs without an
indexable affinity, the claim's pre-bound PVs) are judged one by one; the class's PVs with node affinity for other
nodes are counted, not scanned (the class's bound, released and deleting PVs are bucketed by topology in one pass,
kept until a PV changes; the median here reuses it). Simulate's fixed cost is the private copy (store, cache and plugin indexes
rebuilt from the ${deps.store.count('Pod')} pods); each replica then costs one filter and one prioritize over all nodes.
${END}
`;

let existing = '';
try {
  existing = await readFile(args.out, 'utf8');
} catch {
  // no file yet
}
const begin = existing.indexOf(BEGIN);
const end = existing.indexOf(END);
const md =
  begin >= 0 && end > begin
    ? `${existing.slice(0, begin)}${section}${existing.slice(end + END.length + 1)}`
    : `${existing}${existing && !existing.endsWith('\n\n') ? '\n' : ''}${section}`;
await writeFile(args.out, md);
console.log(section);
