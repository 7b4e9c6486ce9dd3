// bench-flags: --max-old-space-size=6144
// The pending report (issue 33) on the synthetic 5,000-node cluster, in process, per count of pending pods:
//   time to the first full report (every pending pod explained once; no cluster change meanwhile), and its CPU;
//   the report's CPU per second while the cluster changes at kube-scheduler's pace (--events per second: running pods
//   modified, every one a store event that makes every explanation out of date);
//   the filter verb's latency (open loop, --rate per second, 500 candidate nodes, from the time it was due to its
//   answer, so a verb held behind a slice of the report counts) under the same changes, without and with the report.
// Timings are never asserted; the machine is shared. --out FILE writes its section of bench/RESULTS.md.
//
// Run: ./node_modules/.bin/node --max-old-space-size=6144 bench/pending-report.ts [--nodes 5000] [--pending 1000,10000]
//        [--seconds 20] [--rate 50] [--events 600] [--out bench/RESULTS.md]
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import type { AnyObject, Kind, Pod } from '../src/cluster/types.ts';
import { defaultSettings } from '../src/config.ts';
import type { ExtenderDeps } from '../src/extender/deps.ts';
import { filter } from '../src/extender/filter.ts';
import { PendingReport } from '../src/ops/pending-report.ts';
import { whatIf } from '../src/ops/what-if.ts';
import { writeResultsSection } from './results-section.ts';
import { candidateNames, generateCluster } from './synthetic.ts';

const BEGIN = '<!-- pending-report: written by bench/pending-report.ts -->';
const END = '<!-- /pending-report -->';

const { values: args } = parseArgs({
  options: {
    nodes: { type: 'string', default: '5000' },
    pending: { type: 'string', default: '1000,10000' },
    seconds: { type: 'string', default: '20' },
    rate: { type: 'string', default: '50' },
    events: { type: 'string', default: '600' },
    out: { type: 'string' },
  },
});
const NODES = Number(args.nodes);
const SECONDS = Number(args.seconds);
const RATE = Number(args.rate);
const EVENTS = Number(args.events);
const load = () =>
  execFileSync('uptime', { encoding: 'utf8' })
    .trim()
    .replace(/.*load average: /, '');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};

// Never reused: an unchanged resourceVersion is a resync, which the store drops without an event.
let version = 1_000_000;

/** Modifies running pods at `perSecond` (a new resourceVersion and label): store events, as a busy cluster sends. */
function churn(deps: ExtenderDeps, perSecond: number): () => void {
  const running = [...deps.store.list('Pod')].filter((p) => p.spec.nodeName);
  let i = 0;
  const timer = setInterval(() => {
    for (let k = 0; k < perSecond / 100; k++) {
      const p = running[i++ % running.length];
      const next = structuredClone(p);
      next.metadata.resourceVersion = String(version++);
      next.metadata.labels = { ...next.metadata.labels, 'bench/touched': String(version) };
      deps.store.upsert('Pod', next);
    }
  }, 10);
  return () => clearInterval(timer);
}

/** When the next filter call is due: from then until it has run, a verb waits (what the verb queue's depth says). */
let nextDue = Number.POSITIVE_INFINITY;

/** The filter verb in an open loop: latency from when each call was due to its answer, in ms. */
async function verbLatency(deps: ExtenderDeps, pods: Pod[], nodeNames: string[], seconds = SECONDS): Promise<number[]> {
  const latencies: number[] = [];
  const interval = 1000 / RATE;
  const start = performance.now();
  for (let n = 0; performance.now() - start < seconds * 1000; n++) {
    const due = start + n * interval;
    nextDue = due;
    const wait = due - performance.now();
    // Behind schedule, still one turn of the event loop per call, as requests arriving on a socket would take.
    await (wait > 0 ? sleep(wait) : new Promise((resolve) => setImmediate(resolve)));
    const pod = pods[n % pods.length];
    filter({ Pod: pod as never, Nodes: null, NodeNames: candidateNames(nodeNames, 500, n * 500) }, deps);
    latencies.push(performance.now() - due);
  }
  nextDue = Number.POSITIVE_INFINITY;
  return latencies;
}

interface Row {
  pending: number;
  firstMs: number;
  firstCpuMs: number;
  explained: number;
  reportCpuPerSecond: number;
  without: number[];
  with: number[];
  stale: number;
  loadAvg: string;
}

const rows: Row[] = [];
for (const pending of args.pending.split(',').map(Number)) {
  const cluster = generateCluster({ nodes: NODES, pendingPerKind: Math.ceil(pending / 4), seed: 1 });
  const byKind = new Map<Kind, AnyObject[]>();
  for (const o of cluster.objects) {
    const list = byKind.get(o.kind as Kind) ?? [];
    list.push(o);
    byKind.set(o.kind as Kind, list);
  }
  const { deps } = whatIf((kind) => byKind.get(kind) ?? [], defaultSettings());
  const nodeNames = deps.cache.nodeNames();
  const pods = [...cluster.pending.localClaim, ...cluster.pending.fastSsdClaim, ...cluster.pending.noClaims];
  console.log(`${nodeNames.length} nodes, ${deps.store.count('Pod')} pods, ${cluster.counts.pendingPods} pending`);

  // Verbs under the cluster's changes, no report (after a warm-up round, discarded: the JIT, the caches).
  let stop = churn(deps, EVENTS);
  await verbLatency(deps, pods, nodeNames, 3);
  const without = await verbLatency(deps, pods, nodeNames);
  stop();

  // The first full report, the cluster quiet.
  const report = new PendingReport(deps, { schedulerNames: ['default-scheduler'] });
  // As the app wires it: no slice while a verb is queued.
  report.yieldTo(() => performance.now() >= nextDue);
  const cpu0 = cpuMs();
  report.start();
  await report.idle();
  const firstCpuMs = cpuMs() - cpu0;
  const explained = report.snapshot().items.length;
  console.log(`first full report: ${Math.round(report.firstCompleteMs ?? 0)} ms, ${explained} pods`);

  // Verbs under the same changes, the report refreshing all the while.
  stop = churn(deps, EVENTS);
  const work0 = report.workMs;
  const t0 = performance.now();
  const withReport = await verbLatency(deps, pods, nodeNames);
  const reportCpuPerSecond = (report.workMs - work0) / (performance.now() - t0);
  stop();
  const { stale } = report.snapshot();
  report.close();
  rows.push({
    pending: cluster.counts.pendingPods,
    firstMs: report.firstCompleteMs ?? Number.NaN,
    firstCpuMs,
    explained,
    reportCpuPerSecond,
    without,
    with: withReport,
    stale,
    loadAvg: load(),
  });
  const top = (xs: number[]) =>
    [...xs]
      .sort((a, b) => b - a)
      .slice(0, 8)
      .map(Math.round);
  console.log(`pending ${pending}: slowest filters without report ${top(without)} ms, with ${top(withReport)} ms`);
}

const f = (ms: number) => (ms < 10 ? ms.toFixed(1) : ms.toFixed(0));
const section = `${BEGIN}
## The pending report (issue 33)

\`./node_modules/.bin/node --max-old-space-size=6144 bench/pending-report.ts --nodes ${NODES} --pending ${args.pending} --seconds ${SECONDS} --rate ${RATE} --events ${EVENTS} --out bench/RESULTS.md\`,
in process on the synthetic cluster (${NODES} nodes, 30 running pods per node). The report runs with its defaults (2 ms
slices, duty cycle 0.5, no slice while a verb is due, longer rests while slices start late). "Changes": ${EVENTS} running-pod modifications per second, each making every explanation out
of date. filter: ${RATE} calls per second, 500 candidate nodes each, latency from when the call was due to its answer
(a call held behind a slice of the report counts), over ${SECONDS} s.

| pending pods | first full report (wall) | its CPU | report CPU while changing | filter p50 / p99 without report | with report running | out of date at the end |
|---:|---:|---:|---:|---:|---:|---:|
${rows
  .map(
    (r) =>
      `| ${r.pending} | ${(r.firstMs / 1000).toFixed(1)} s | ${(r.firstCpuMs / 1000).toFixed(1)} s | ${(r.reportCpuPerSecond * 100).toFixed(0)} % of a core | ${f(quantile(r.without, 0.5))} / ${f(quantile(r.without, 0.99))} ms | ${f(quantile(r.with, 0.5))} / ${f(quantile(r.with, 0.99))} ms | ${r.stale} of ${r.explained} |`,
  )
  .join('\n')}

Load average at the end of each row: ${rows.map((r) => r.loadAvg).join('; ')}.
${END}
`;
console.log(section);
if (args.out) await writeResultsSection(args.out, 'pending-report', section);
