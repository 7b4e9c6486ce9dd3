// The pending report (issue 33) on the synthetic 5,000-node cluster, in process, per count of pending pods:
//   time to the first full report (every pending pod explained once; no cluster change meanwhile), its CPU, and how
//   many explanations it computed (equivalent pods share one);
//   the report's CPU per second while the cluster changes, in two ways: --events per second running pods modified
//   (a label: a store event, which leaves the explanations that read no other pod's labels as they are), and the
//   same plus --binds per second pods bound to nodes and as many deleted (each makes every explanation out of date on
//   its node, which the report judges again);
//   the filter verb's latency (open loop, --rate per second, 500 candidate nodes, from the time it was due to its
//   answer, so a verb held behind a slice of the report counts), split into the wait before it started (behind a
//   slice, a store event, a GC) and its own run, under the same changes, without and with the report, --rounds times,
//   the order alternating (without then with, then with then without: the machine is shared and a process's verbs
//   drift over its life, so a fixed order would count the drift as the report's), with the spread over the rounds and
//   the load average after each; how far behind the report is when the binds stop, and how long it then takes to catch
//   up (the verbs stopped too). The report is read (a snapshot, as a scrape does) every --read seconds from each
//   phase's start: while verbs come it sweeps its out-of-date explanations only for a reader.
// Timings are never asserted; the machine is shared. --out FILE writes its section of bench/RESULTS.md.
//
// Run: ./node_modules/.bin/node --max-old-space-size=6144 bench/pending-report.ts [--nodes 5000] [--pending 1000,10000]
//        [--seconds 20] [--rate 50] [--events 600] [--binds 100] [--rounds 4] [--read 30] [--out bench/RESULTS.md]
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
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
    binds: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '4' },
    read: { type: 'string', default: '30' },
    out: { type: 'string' },
  },
});
const NODES = Number(args.nodes);
const SECONDS = Number(args.seconds);
const RATE = Number(args.rate);
const EVENTS = Number(args.events);
const BINDS = Number(args.binds);
const ROUNDS = Number(args.rounds);
const load = () =>
  execFileSync('uptime', { encoding: 'utf8' })
    .trim()
    .replace(/.*load average: /, '');

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;
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

let boundSeq = 0;

/**
 * Modifies running pods at `perSecond` (a new resourceVersion and label): store events, as a busy cluster sends; and
 * binds `binds` pods per second to nodes (250m CPU, 256Mi), deleting each a second later, as kube-scheduler's binds and
 * finished pods change what nodes hold.
 */
function churn(deps: ExtenderDeps, perSecond: number, binds: number): () => void {
  const running = [...deps.store.list('Pod')].filter((p) => p.spec.nodeName);
  const nodes = deps.cache.nodeNames();
  const bound: Pod[] = [];
  let i = 0;
  const timer = setInterval(() => {
    for (let k = 0; k < perSecond / 100; k++) {
      const p = running[i++ % running.length];
      const next = structuredClone(p);
      next.metadata.resourceVersion = String(version++);
      next.metadata.labels = { ...next.metadata.labels, 'bench/touched': String(version) };
      deps.store.upsert('Pod', next);
    }
    for (let k = 0; k < binds / 100; k++) {
      const n = boundSeq++;
      const pod: Pod = {
        metadata: {
          name: `bench-bound-${n}`,
          namespace: 'default',
          uid: `bench-bound-${n}`,
          resourceVersion: String(version++),
        },
        spec: {
          nodeName: nodes[(n * 7919) % nodes.length],
          containers: [{ name: 'c', resources: { requests: { cpu: '250m', memory: '256Mi' } } }],
        },
        status: { phase: 'Running' },
      };
      deps.store.upsert('Pod', pod);
      bound.push(pod);
      if (bound.length > binds) deps.store.delete('Pod', bound.shift()!);
    }
  }, 10);
  return () => {
    clearInterval(timer);
    for (const p of bound.splice(0)) deps.store.delete('Pod', p);
  };
}

/** When the next filter call is due: from then until it has run, a verb waits (what the verb queue's depth says). */
let nextDue = Number.POSITIVE_INFINITY;
/** When the last filter call was due (what the verb queue's lastArrival says). */
let lastDue = Number.NEGATIVE_INFINITY;
/** When the last filter call answered (what the verb queue's lastAnswer says). */
let lastAnswer = Number.NEGATIVE_INFINITY;

/** Per filter call (ms): from when it was due to its answer, how long of that it waited to start, and its own run. */
interface Latencies {
  total: number[];
  waited: number[];
  ran: number[];
}

/** The filter verb in an open loop: latency from when each call was due to its answer, in ms. */
async function verbLatency(
  deps: ExtenderDeps,
  pods: Pod[],
  nodeNames: string[],
  seconds = SECONDS,
): Promise<Latencies> {
  const latencies: number[] = [];
  const waited: number[] = [];
  const ran: number[] = [];
  const interval = 1000 / RATE;
  const start = performance.now();
  for (let n = 0; performance.now() - start < seconds * 1000; n++) {
    const due = start + n * interval;
    nextDue = due;
    const wait = due - performance.now();
    // Behind schedule, still one turn of the event loop per call, as requests arriving on a socket would take.
    await (wait > 0 ? sleep(wait) : new Promise((resolve) => setImmediate(resolve)));
    lastDue = due;
    const pod = pods[n % pods.length];
    const started = performance.now();
    filter({ Pod: pod as never, Nodes: null, NodeNames: candidateNames(nodeNames, 500, n * 500) }, deps);
    const done = performance.now();
    lastAnswer = done;
    latencies.push(done - due);
    // A timer may fire up to a millisecond before it was due (libuv counts whole milliseconds): no wait then.
    waited.push(Math.max(0, started - due));
    ran.push(done - started);
  }
  nextDue = Number.POSITIVE_INFINITY;
  return { total: latencies, waited, ran };
}

/** One churn's latencies without and with the report, and the report's CPU share meanwhile. */
interface Pair {
  without: Latencies;
  with: Latencies;
  reportCpuPerSecond: number;
  /** Explanations out of date when the churn stopped, of those listed. */
  stale: number;
  /** How long the most out-of-date one had been out of date then (ms). */
  behindMs: number;
  /** From the churn's end (its bound pods deleted) until every explanation was current again (ms). */
  caughtUpMs: number;
  /** During the churn: explanations computed afresh, and refreshed on the changed nodes only. */
  explained: number;
  refreshed: number;
}

interface Row {
  pending: number;
  firstMs: number;
  firstCpuMs: number;
  listed: number;
  /** Explanations computed for the first full report. */
  computed: number;
  /** Per round: under label changes, then label changes and binds; whether it measured with the report first. */
  rounds: { labels: Pair; binds: Pair; withFirst: boolean; firstMs: number; loadAvg: string }[];
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

  // A warm-up round, discarded: the JIT, the caches.
  const stop = churn(deps, EVENTS, BINDS);
  await verbLatency(deps, pods, nodeNames, 3);
  stop();

  const startReport = () => {
    const report = new PendingReport(deps, { schedulerNames: ['default-scheduler'] });
    // As the app wires it: no slice while a verb is queued nor just after one answered, less work while verbs come.
    report.yieldTo(
      () => performance.now() >= nextDue,
      () => lastDue,
      () => lastAnswer,
    );
    return report;
  };
  const measure = async (report: PendingReport | undefined, binds: number) => {
    // What came before (a first full report, a closed report, a churn's deletions) is collected before the clock
    // starts: else its major GC (0.3-1 s on this heap) lands in whichever phase comes next.
    await sleep(100);
    collectGarbage();
    await sleep(500);
    const stopChurn = churn(deps, EVENTS, binds);
    report?.snapshot();
    const reads = setInterval(() => report?.snapshot(), Number(args.read) * 1000);
    const work0 = report?.workMs ?? 0;
    const explained0 = report?.explained ?? 0;
    const refreshed0 = report?.refreshed ?? 0;
    const t0 = performance.now();
    const latencies = await verbLatency(deps, pods, nodeNames);
    clearInterval(reads);
    const cpuShare = ((report?.workMs ?? 0) - work0) / (performance.now() - t0);
    const end = report?.snapshot();
    const explained = (report?.explained ?? 0) - explained0;
    const refreshed = (report?.refreshed ?? 0) - refreshed0;
    stopChurn();
    const t1 = performance.now();
    await report?.idle();
    const caughtUpMs = performance.now() - t1;
    return {
      latencies,
      cpuShare,
      stale: end?.stale ?? 0,
      behindMs: end?.behindMs ?? 0,
      caughtUpMs,
      explained,
      refreshed,
    };
  };

  const row: Row = {
    pending: cluster.counts.pendingPods,
    firstMs: Number.NaN,
    firstCpuMs: Number.NaN,
    listed: 0,
    computed: 0,
    rounds: [],
  };
  type Measured = Awaited<ReturnType<typeof measure>>;
  const withoutReport = async () => ({ labels: await measure(undefined, 0), binds: await measure(undefined, BINDS) });
  const withReport = async (round: number) => {
    // The first full report, the cluster quiet, no verbs.
    const report = startReport();
    const cpu0 = cpuMs();
    report.start();
    await report.idle();
    const firstMs = report.firstCompleteMs ?? Number.NaN;
    if (round === 0) {
      row.firstCpuMs = cpuMs() - cpu0;
      row.firstMs = firstMs;
      row.listed = report.snapshot().items.length;
      row.computed = report.explained;
      console.log(
        `first full report: ${Math.round(row.firstMs)} ms, ${Math.round(row.firstCpuMs)} ms CPU, ${row.listed} pods, ${row.computed} explanations`,
      );
    }
    // Verbs under the same changes, the report refreshing all the while.
    const labels = await measure(report, 0);
    const binds = await measure(report, BINDS);
    report.close();
    return { labels, binds, firstMs };
  };
  for (let round = 0; round < ROUNDS; round++) {
    const withFirst = round % 2 === 1;
    let without: { labels: Measured; binds: Measured };
    let withR: { labels: Measured; binds: Measured; firstMs: number };
    if (withFirst) {
      withR = await withReport(round);
      without = await withoutReport();
    } else {
      without = await withoutReport();
      withR = await withReport(round);
    }
    const pair = (a: Measured, b: Measured): Pair => ({
      without: a.latencies,
      with: b.latencies,
      reportCpuPerSecond: b.cpuShare,
      stale: b.stale,
      behindMs: b.behindMs,
      caughtUpMs: b.caughtUpMs,
      explained: b.explained,
      refreshed: b.refreshed,
    });
    row.rounds.push({
      labels: pair(without.labels, withR.labels),
      binds: pair(without.binds, withR.binds),
      withFirst,
      firstMs: withR.firstMs,
      loadAvg: load(),
    });
    const top = (xs: number[]) =>
      [...xs]
        .sort((a, b) => b - a)
        .slice(0, 8)
        .map(Math.round);
    console.log(
      `pending ${pending} round ${round + 1}: filter p50 under binds without ${quantile(without.binds.latencies.total, 0.5).toFixed(2)} ms, with ${quantile(withR.binds.latencies.total, 0.5).toFixed(2)} ms; slowest filters, labels: without ${top(without.labels.latencies.total)} ms, with ${top(withR.labels.latencies.total)} ms; binds: without ${top(without.binds.latencies.total)} ms, with ${top(withR.binds.latencies.total)} ms; load ${row.rounds.at(-1)!.loadAvg}`,
    );
  }
  rows.push(row);
}

const f = (ms: number) => (Math.abs(ms) < 10 ? ms.toFixed(1) : ms.toFixed(0));
const signed = (ms: number) => `${ms > 0 ? '+' : ms < 0 ? '−' : '±'}${f(Math.abs(ms))}`;
const pct = (share: number) => `${(share * 100).toFixed(share < 0.01 ? 1 : 0)} %`;
const p50 = (l: Latencies) => quantile(l.total, 0.5);
const p99 = (l: Latencies) => quantile(l.total, 0.99);
const lat = (l: Latencies) => `${f(p50(l))} / ${f(p99(l))}`;
const split = (l: Latencies) => `${f(quantile(l.waited, 0.9))} / ${f(quantile(l.ran, 0.5))}`;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const spread = (xs: number[], show = f) => `${show(median(xs))} (${show(Math.min(...xs))} to ${show(Math.max(...xs))})`;
const summary = rows
  .flatMap((r) =>
    (['labels', 'binds'] as const).map((churn) => {
      const pairs = r.rounds.map((x) => x[churn]);
      const without = pairs.map((x) => p50(x.without));
      const withR = pairs.map((x) => p50(x.with));
      const diff = pairs.map((x) => p50(x.with) - p50(x.without));
      const ran = pairs.map((x) => quantile(x.with.ran, 0.5) - quantile(x.without.ran, 0.5));
      const waited = pairs.map((x) => quantile(x.with.waited, 0.9) - quantile(x.without.waited, 0.9));
      return `| ${r.pending} | ${churn} | ${spread(without)} | ${spread(withR)} | ${spread(diff, signed)} | ${spread(ran, signed)} | ${spread(waited, signed)} | ${f(median(pairs.map((x) => p99(x.without))))} → ${f(median(pairs.map((x) => p99(x.with))))} |`;
    }),
  )
  .join('\n');
const section = `${BEGIN}
## The pending report (issue 33)

\`./node_modules/.bin/node --max-old-space-size=6144 bench/pending-report.ts --nodes ${NODES} --pending ${args.pending} --seconds ${SECONDS} --rate ${RATE} --events ${EVENTS} --binds ${BINDS} --rounds ${ROUNDS} --read ${args.read} --out bench/RESULTS.md\`,
in process on the synthetic cluster (${NODES} nodes, 30 running pods per node). The report runs with its defaults (duty
cycle 0.5 in 2 ms slices while no verb came for a second, 0.1 in 1 ms slices while verbs come, run in 0.25 ms pieces
with a turn of the event loop between two, no slice while a verb is due nor within 2 ms of a verb's answer, longer rests
while slices start late); pods alike (same spec and labels, claims of one content that nothing else
names) share one explanation. "Labels": ${EVENTS} running-pod label changes per second (they leave explanations that
read no other pod's labels as they are). "Binds": the same plus ${BINDS} pods bound to nodes per second and as many
deleted, each making every explanation out of date on its node: the report judges again, for explanations of pods
whose verdicts read no pod elsewhere (all of the bench's), the nodes whose pods are not those it judged (a bound pod
deleted again leaves its node as it was), and explains the others afresh; while verbs come it starts a sweep over the
out-of-date explanations at most every 5 s, and only once read since the last (read at each phase's start and every
${args.read} s). filter: ${RATE} calls per second,
500 candidate nodes each, latency from when the call was due to its answer (a call held behind a slice of the report
counts), over ${SECONDS} s; "waited" is the part before the call started (behind a slice, a store event, a GC), "ran"
its own run. Each round measures both churns without the report and with it (after its first full report), in
alternating order (rounds 1, 3, ...: without first; 2, 4, ...: with first), so that what drifts over the process's
life or with the machine's load falls on both sides. With pods bound every 10 ms, nearly every explanation is out of
date at any moment: "behind" is how long the most out-of-date one had been when the binds stopped, "caught up" how long
the report then took to be current (no verbs coming).

Per count of pending pods, over the ${ROUNDS} rounds: filter p50 in ms, median (lowest to highest round); the
difference with − without within each round; the same for the run's p50 and the wait's p90; the medians of p99.

| pending pods | churn | p50 without | p50 with | with − without | ran p50: with − without | waited p90: with − without | p99 without → with |
|---:|---|---:|---:|---:|---:|---:|---:|
${summary}

Each round:

| pending pods | round | first full report (wall) | its CPU | explanations | report CPU: labels / binds | filter p50 / p99 (ms), labels: without → with | binds: without → with | binds: waited p90 / ran p50, without → with | binds: explained afresh / node by node | out of date at the end, behind | caught up | load average after |
|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|
${rows
  .flatMap((r) =>
    r.rounds.map(
      (x, i) =>
        `| ${i === 0 ? r.pending : '〃'} | ${i + 1} (${x.withFirst ? 'with first' : 'without first'}) | ${(x.firstMs / 1000).toFixed(1)} s | ${i === 0 ? `${(r.firstCpuMs / 1000).toFixed(1)} s` : ''} | ${i === 0 ? `${r.computed} for ${r.listed} pods` : ''} | ${pct(x.labels.reportCpuPerSecond)} / ${pct(x.binds.reportCpuPerSecond)} | ${lat(x.labels.without)} → ${lat(x.labels.with)} | ${lat(x.binds.without)} → ${lat(x.binds.with)} | ${split(x.binds.without)} → ${split(x.binds.with)} | ${x.binds.explained} / ${x.binds.refreshed} | ${x.binds.stale} of ${r.listed}, ${(x.binds.behindMs / 1000).toFixed(1)} s | ${(x.binds.caughtUpMs / 1000).toFixed(1)} s | ${x.loadAvg} |`,
    ),
  )
  .join('\n')}
${END}
`;
console.log(section);
if (args.out) await writeResultsSection(args.out, 'pending-report', section);
