// The extender under kube-scheduler's load shape, over real loopback sockets: 5,000 nodes, ~150,000 running pods and
// ~10,000 local PVs (bench/synthetic.ts) served from a cluster-state file through the real source, store, cache, plugins,
// verbs and Fastify app. autocannon drives it from a worker thread (its own event loop, the other core) for a bounded
// time per scenario:
//   healthz            GET /healthz: the baseline (HTTP + Fastify only), measured in the same run
//   filter-local       POST /scheduler/filter, 500 candidate names, pod with one WFFC local-storage claim
//   filter-fast-ssd    the same with one WFFC fast-ssd claim (CSI provisioning, CSIStorageCapacity per zone)
//   filter-no-claims   the same with a pod without volumes
//   filter-3-claims    the same with two WFFC local-storage claims and one capacity-tracked CSI claim
//   prioritize-local   POST /scheduler/prioritize with the nodes that filter let through for the local-claim pod
// and prints requests/s, p50/p99 latency and each verb's throughput as a ratio of the baseline's. It also times the
// verbs in-process (filter()/prioritize() called directly, then app.inject without sockets) to split the decision's
// cost from Fastify's (validation, serialization) and from the socket path. Summary: bench/out/http-verbs.json.
//
// Run: ./node_modules/.bin/node --expose-gc bench/http-verbs.ts [--nodes 5000] [--pods-per-node 30]
//        [--pvs-per-node 2] [--duration 10] [--connections 10] [--shape zone|local]
// --shape local: the local-storage cluster (one CSIStorageCapacity per node, 10 local PVs per node, 30 % bound).
// Only 127.0.0.1 is contacted; every load phase is bounded by --duration.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { ClusterStateSource } from '../src/cluster/state-file/source.ts';
import { VolumeController } from '../src/cluster/state-file/volume-controller.ts';
import { ClusterStateWriter } from '../src/cluster/state-file/writer.ts';
import type { Pod } from '../src/cluster/types.ts';
import { applySettings, defaultSettings } from '../src/config.ts';
import { filter } from '../src/extender/filter.ts';
import { prioritize } from '../src/extender/prioritize.ts';
import type { ExtenderArgs, ExtenderFilterResult } from '../src/extender/wire.ts';
import { createExtender } from '../src/wiring.ts';
import { candidateNames, generateCluster, LOCAL_STORAGE_SHAPE } from './synthetic.ts';

// ------------------------------------------------------------------------------------------- autocannon typing
interface AutocannonRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  headers?: Record<string, string>;
}
interface AutocannonOptions {
  url: string;
  connections: number;
  duration: number;
  workers?: number;
  requests: AutocannonRequest[];
  timeout?: number;
}
interface Histogram {
  average: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}
interface AutocannonResult {
  requests: Histogram & { total: number; sent: number };
  latency: Histogram;
  throughput: Histogram;
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
}
type Autocannon = (opts: AutocannonOptions, cb: (err: Error | null, result: AutocannonResult) => void) => unknown;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const run = (opts: AutocannonOptions) =>
  new Promise<AutocannonResult>((resolve, reject) => {
    autocannon(opts, (err, result) => (err ? reject(err) : resolve(result)));
  });

// ----------------------------------------------------------------------------------------------------- options
const { values: args } = parseArgs({
  options: {
    nodes: { type: 'string', default: '5000' },
    'pods-per-node': { type: 'string', default: '30' },
    'pvs-per-node': { type: 'string' },
    shape: { type: 'string', default: 'zone' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    candidates: { type: 'string', default: '500' },
  },
});
const NODES = Number(args.nodes);
const PODS_PER_NODE = Number(args['pods-per-node']);
// zone: capacity per zone, 2 local PVs per node; local: LOCAL_STORAGE_SHAPE (capacity per node, 10 PVs per node).
if (args.shape !== 'zone' && args.shape !== 'local') throw new Error(`--shape: zone or local, not ${args.shape}`);
const SHAPE = args.shape === 'local' ? LOCAL_STORAGE_SHAPE : {};
const PVS_PER_NODE = Number(args['pvs-per-node'] ?? SHAPE.pvsPerNode ?? 2);
const DURATION = Number(args.duration);
const CONNECTIONS = Number(args.connections);
const CANDIDATES = Number(args.candidates);
const VARIANTS = 8; // distinct request bodies per scenario, cycled (different pods, different candidate windows)

const gc = (globalThis as { gc?: () => void }).gc;
const heapMiB = () => {
  if (gc) for (let i = 0; i < 2; i++) gc();
  const m = process.memoryUsage();
  return { heapUsedMiB: Math.round(m.heapUsed / 2 ** 20), rssMiB: Math.round(m.rss / 2 ** 20) };
};
const ms = (t0: number) => Math.round(performance.now() - t0);
const log = (line: string) => console.log(line);

// ------------------------------------------------------------------------------------------------------- load
const loadAverageAtStart = loadavg().map((l) => Number(l.toFixed(2)));
log(`load average at start: ${loadAverageAtStart.join(' ')} (${cpus().length} cores; the machine is shared)`);
const baseHeap = heapMiB();
let t = performance.now();
const cluster = generateCluster({
  ...SHAPE,
  nodes: NODES,
  podsPerNode: PODS_PER_NODE,
  pvsPerNode: PVS_PER_NODE,
  seed: 1,
});
const generateMs = ms(t);
t = performance.now();
const dir = await mkdtemp(join(tmpdir(), 'topology-extender-bench-'));
const file = join(dir, 'cluster.json');
let text: string | undefined = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: cluster.objects });
const fileMiB = Math.round(text.length / 2 ** 20);
await writeFile(file, text);
text = undefined;
const writeMs = ms(t);
const counts = cluster.counts;
const nodeNames = cluster.nodeNames;
const pending = cluster.pending;
// Drop the generator's objects before loading, so the heap figure is the extender's own.
cluster.objects.length = 0;
log(
  `cluster: ${counts.Node} nodes, ${counts.runningPods} running + ${counts.pendingPods} pending pods, ` +
    `${counts.PersistentVolume} PVs (${NODES * PVS_PER_NODE} local), ${counts.PersistentVolumeClaim} PVCs; ` +
    `generated in ${generateMs} ms, cluster-state file ${fileMiB} MiB written in ${writeMs} ms`,
);

const logger = pino({ level: process.env.BENCH_LOG_LEVEL ?? 'silent' });
const source = new ClusterStateSource({ file, watch: false });
const writer = new ClusterStateWriter(source);
const heapBeforeLoad = heapMiB();
t = performance.now();
const extender = await createExtender({
  settings: applySettings(defaultSettings(), {}, (k) => k),
  source,
  writer,
  logger,
  onStore: (store) => new VolumeController(store, source).start(),
});
await extender.start();
await extender.app.ready();
const startupMs = ms(t);
const heapAfterLoad = heapMiB();
log(
  `startup (parse + validate + store + cache + indexes + app): ${startupMs} ms; heap ${heapAfterLoad.heapUsedMiB} MiB ` +
    `(+${heapAfterLoad.heapUsedMiB - heapBeforeLoad.heapUsedMiB} MiB for the loaded extender), rss ${heapAfterLoad.rssMiB} MiB; ` +
    `cache: ${extender.cache.nodeCount()} nodes, ${extender.cache.podCount()} pods`,
);
await rm(dir, { recursive: true, force: true });

// ------------------------------------------------------------------------------------------ request bodies
const args0 = (pod: Pod, offset: number): ExtenderArgs =>
  ({ Pod: pod, Nodes: null, NodeNames: candidateNames(nodeNames, CANDIDATES, offset) }) as unknown as ExtenderArgs;
const step = Math.floor(nodeNames.length / VARIANTS);
const variants = (pods: Pod[]) => Array.from({ length: VARIANTS }, (_, i) => args0(pods[i % pods.length], i * step));
const scenarios = {
  'filter-local': variants(pending.localClaim),
  'filter-fast-ssd': variants(pending.fastSsdClaim),
  'filter-no-claims': variants(pending.noClaims),
  'filter-3-claims': variants(pending.localAndCsi),
};

// Sanity: what filter answers for each scenario (over HTTP, once), and the prioritize bodies from its feasible nodes.
await extender.app.listen({ host: '127.0.0.1', port: 0 });
const address = extender.app.server.address();
if (!address || typeof address === 'string') throw new Error('no TCP address');
const url = `http://127.0.0.1:${address.port}`;
const post = async (path: string, body: unknown) => {
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status}: ${await res.text()}`);
  return res.json() as Promise<unknown>;
};
const verdicts: Record<string, { feasible: number; failed: number; unresolvable: number; reasons: string[] }> = {};
const prioritizeBodies: ExtenderArgs[] = [];
const prioritizeNoClaimsBodies: ExtenderArgs[] = [];
for (const [name, bodies] of Object.entries(scenarios)) {
  let feasible = 0;
  let failed = 0;
  let unresolvable = 0;
  const reasons = new Set<string>();
  for (const body of bodies) {
    const r = (await post('/scheduler/filter', body)) as ExtenderFilterResult;
    if (r.Error) throw new Error(`${name}: filter answered Error ${r.Error}`);
    feasible += r.NodeNames?.length ?? 0;
    failed += Object.keys(r.FailedNodes ?? {}).length;
    unresolvable += Object.keys(r.FailedAndUnresolvableNodes ?? {}).length;
    for (const v of [...Object.values(r.FailedNodes ?? {}), ...Object.values(r.FailedAndUnresolvableNodes ?? {})]) {
      reasons.add(v);
    }
    if (name === 'filter-local') prioritizeBodies.push({ ...body, NodeNames: r.NodeNames } as ExtenderArgs);
    if (name === 'filter-no-claims') prioritizeNoClaimsBodies.push({ ...body, NodeNames: r.NodeNames } as ExtenderArgs);
  }
  const n = bodies.length;
  verdicts[name] = {
    feasible: Math.round(feasible / n),
    failed: Math.round(failed / n),
    unresolvable: Math.round(unresolvable / n),
    reasons: [...reasons],
  };
  log(
    `${name}: of ${CANDIDATES} candidates, on average ${verdicts[name].feasible} feasible, ${verdicts[name].failed} failed, ` +
      `${verdicts[name].unresolvable} unresolvable${reasons.size ? ` (${[...reasons].join('; ')})` : ''}`,
  );
}
const prioritizeNodes = Math.round(
  prioritizeBodies.reduce((a, b) => a + (b.NodeNames?.length ?? 0), 0) / prioritizeBodies.length,
);
const sampleScores = (await post('/scheduler/prioritize', prioritizeBodies[0])) as { Host: string; Score: number }[];
const scoreSpread = new Map<number, number>();
for (const s of sampleScores) scoreSpread.set(s.Score, (scoreSpread.get(s.Score) ?? 0) + 1);
log(
  `prioritize-local: ${prioritizeNodes} nodes per request (filter's feasible ones); scores of one answer: ` +
    [...scoreSpread.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([s, c]) => `${s}×${c}`)
      .join(' '),
);

// ------------------------------------------------------------------------------------------ in-process timing
// The verbs' own dependencies: the same plugins and decision state the HTTP routes use.
const verbDeps = extender.verbs;

interface Timing {
  opsPerSec: number;
  meanUs: number;
  p50Us: number;
  p99Us: number;
  iterations: number;
}
async function timeLoop(fn: (i: number) => unknown, seconds: number): Promise<Timing> {
  for (let i = 0; i < 30; i++) await fn(i); // warm up
  const samples: number[] = [];
  const end = performance.now() + seconds * 1000;
  let i = 0;
  const started = performance.now();
  while (performance.now() < end) {
    const t0 = performance.now();
    await fn(i++);
    samples.push(performance.now() - t0);
  }
  const total = performance.now() - started;
  samples.sort((a, b) => a - b);
  const q = (p: number) => samples[Math.min(samples.length - 1, Math.floor(p * samples.length))] * 1000;
  return {
    opsPerSec: Math.round((i / total) * 1000),
    meanUs: Math.round((total / i) * 1000),
    p50Us: Math.round(q(0.5)),
    p99Us: Math.round(q(0.99)),
    iterations: i,
  };
}

const IN_PROCESS_SECONDS = Math.min(2, DURATION / 4);
const inProcess: Record<string, { direct: Timing; inject: Timing; bodyBytes: number; answerBytes: number }> = {};
const fmtTiming = (x: Timing) => `${x.opsPerSec}/s, mean ${x.meanUs} µs, p50 ${x.p50Us} µs, p99 ${x.p99Us} µs`;
const inProcessCases: [string, ExtenderArgs[], 'filter' | 'prioritize'][] = [
  ...Object.entries(scenarios).map(([name, bodies]) => [name, bodies, 'filter'] as [string, ExtenderArgs[], 'filter']),
  ['prioritize-local', prioritizeBodies, 'prioritize'],
];
log(`\nin-process (one request at a time, ${IN_PROCESS_SECONDS} s each):`);
for (const [name, bodies, verb] of inProcessCases) {
  const texts = bodies.map((b) => JSON.stringify(b));
  const call = verb === 'filter' ? filter : prioritize;
  const direct = await timeLoop((i) => call(bodies[i % bodies.length], verbDeps), IN_PROCESS_SECONDS);
  // app.inject: routing, JSON parse, schema validation, the verb, response serialization; no socket.
  const inject = await timeLoop(async (i) => {
    const res = await extender.app.inject({
      method: 'POST',
      url: `/scheduler/${verb}`,
      headers: { 'content-type': 'application/json' },
      payload: texts[i % texts.length],
    });
    if (res.statusCode !== 200) throw new Error(`${name}: inject HTTP ${res.statusCode}`);
  }, IN_PROCESS_SECONDS);
  const answer = JSON.stringify(call(bodies[0], verbDeps));
  inProcess[name] = { direct, inject, bodyBytes: texts[0].length, answerBytes: answer.length };
  log(`  ${name.padEnd(17)} ${verb}() direct: ${fmtTiming(direct)}`);
  log(
    `  ${''.padEnd(17)} app.inject:      ${fmtTiming(inject)} (body ${texts[0].length} B, answer ${answer.length} B)`,
  );
}

// ----------------------------------------------------------------------------------------------- HTTP load
const json = { 'content-type': 'application/json' };
const posts = (path: string, bodies: ExtenderArgs[]): AutocannonRequest[] =>
  bodies.map((b) => ({ method: 'POST', path, headers: json, body: JSON.stringify(b) }));
// A scheduling cycle as kube-scheduler runs it: one pod at a time, filter then prioritize on one keep-alive connection.
const cycle = (filterBodies: ExtenderArgs[], prioritizeBodies: ExtenderArgs[]): AutocannonRequest[] =>
  filterBodies.flatMap((b, i) => [
    ...posts('/scheduler/filter', [b]),
    ...posts('/scheduler/prioritize', [prioritizeBodies[i % prioritizeBodies.length]]),
  ]);
const loads: [string, AutocannonRequest[], number][] = [
  ['healthz', [{ method: 'GET', path: '/healthz' }], CONNECTIONS],
  ...Object.entries(scenarios).map(
    ([name, bodies]) =>
      [name, posts('/scheduler/filter', bodies), CONNECTIONS] as [string, AutocannonRequest[], number],
  ),
  ['prioritize-local', posts('/scheduler/prioritize', prioritizeBodies), CONNECTIONS],
  ['cycle-local', cycle(scenarios['filter-local'], prioritizeBodies), 1],
  ['cycle-no-claims', cycle(scenarios['filter-no-claims'], prioritizeNoClaimsBodies), 1],
];
interface LoadFigures {
  requestsPerSec: number;
  /** connections / throughput (Little's law): precise where autocannon's 1 ms histogram buckets are not. */
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  total: number;
  errors: number;
  non2xx: number;
  ratioToBaseline?: number;
}
const http: Record<string, LoadFigures> = {};
log(
  `\nHTTP over 127.0.0.1 (autocannon in a worker thread, ${DURATION} s each; ${CONNECTIONS} connections, ` +
    `cycle-*: 1 connection alternating filter and prioritize, as kube-scheduler's serial cycle; mean latency from ` +
    `connections / throughput, p50/p99/max from autocannon's 1 ms buckets):`,
);
for (const [name, requests, connections] of loads) {
  const r = await run({ url, connections, duration: DURATION, workers: 1, requests, timeout: 5 });
  const fig: LoadFigures = {
    requestsPerSec: Math.round(r['2xx'] / r.duration),
    meanMs: Number(((connections * 1000 * r.duration) / Math.max(1, r['2xx'])).toPrecision(3)),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    maxMs: r.latency.max,
    total: r.requests.total,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
  };
  if (name !== 'healthz')
    fig.ratioToBaseline = Number((fig.requestsPerSec / http.healthz.requestsPerSec).toPrecision(3));
  http[name] = fig;
  log(
    `  ${name.padEnd(17)} ${String(fig.requestsPerSec).padStart(6)} req/s  mean ${fig.meanMs} ms  p50 ${fig.p50Ms} ms  ` +
      `p99 ${fig.p99Ms} ms  ` +
      `max ${fig.maxMs} ms` +
      (fig.ratioToBaseline === undefined ? '  (baseline)' : `  ${fig.ratioToBaseline}× baseline`) +
      (fig.errors || fig.non2xx ? `  errors ${fig.errors}, non-2xx ${fig.non2xx}` : ''),
  );
}
// kube-scheduler runs one scheduling cycle at a time: its pods/s through us is bounded by the serial cycle rate.
const cyclesPerSec = {
  local: Math.round(http['cycle-local'].requestsPerSec / 2),
  noClaims: Math.round(http['cycle-no-claims'].requestsPerSec / 2),
};
log(
  `\nserial scheduling cycles (filter + prioritize, one at a time) the extender answers: ` +
    `${cyclesPerSec.local}/s for pods with a local claim, ${cyclesPerSec.noClaims}/s for pods without claims ` +
    `(kube-scheduler: 600-800 pods/s)`,
);
const heapAfterLoadTest = heapMiB();
log(
  `load average at end: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
log(`heap after the load phases: ${heapAfterLoadTest.heapUsedMiB} MiB, rss ${heapAfterLoadTest.rssMiB} MiB`);

// ----------------------------------------------------------------------------------------------------- summary
const summary = {
  benchmark: 'http-verbs',
  date: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    loadAverageAtStart,
    loadAverageAtEnd: loadavg().map((l) => Number(l.toFixed(2))),
  },
  node: process.version,
  options: {
    nodes: NODES,
    podsPerNode: PODS_PER_NODE,
    pvsPerNode: PVS_PER_NODE,
    shape: args.shape,
    candidates: CANDIDATES,
    durationSec: DURATION,
    connections: CONNECTIONS,
  },
  cluster: counts,
  load: {
    generateMs,
    clusterStateMiB: fileMiB,
    writeMs,
    startupMs,
    heapBaseMiB: baseHeap.heapUsedMiB,
    heapBeforeLoadMiB: heapBeforeLoad.heapUsedMiB,
    heapAfterLoadMiB: heapAfterLoad.heapUsedMiB,
    rssAfterLoadMiB: heapAfterLoad.rssMiB,
    heapAfterLoadTestMiB: heapAfterLoadTest.heapUsedMiB,
    gcExposed: Boolean(gc),
  },
  verdicts,
  prioritizeNodes,
  inProcess,
  http,
  cyclesPerSec,
};
const outDir = new URL('./out/', import.meta.url);
await mkdir(outDir, { recursive: true });
const outFile = new URL('http-verbs.json', outDir);
await writeFile(outFile, `${JSON.stringify(summary, null, 2)}\n`);
log(`summary: ${outFile.pathname}`);
await extender.close();
