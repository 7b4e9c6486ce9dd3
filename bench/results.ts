// The issue-9 figures, each against a floor measured in the same run, written to bench/RESULTS.md.
// The cluster is the local-storage shape (bench/synthetic.ts LOCAL_STORAGE_SHAPE: 5,000 nodes, ~150,000 pods,
// 50,000 local PVs, one CSIStorageCapacity per node) served by the real CLI (`src/main.ts serve --cluster-state`)
// in a child process; the floor is bench/floor-server.ts (HTTP + JSON only, same framework, same bodies) in
// another. Each scenario alternates rounds floor / extender / extender / floor ... and reports:
//   one at a time   one keep-alive connection, closed loop: p50/p99 latency
//   16 connections  autocannon (worker thread), closed loop: req/s and p99
//   open loop       requests issued on a fixed schedule at --rate req/s (a stall shows in p99: latency counts from
//                   the scheduled time, not from when a socket was free)
// then the backlog check (abandoned heavy filters, then a fresh one), the server's time to ready and RSS at ready,
// the filter-scaling ratios (bench/volumes/filter-scaling.ts), and ingest from a fake API server holding the same
// cluster: the extender's time to ready and RSS, pod events/s through its watch, and the heap per cached pod
// (bench/live/time-to-ready.ts and bench/live/memory.ts); last the ready extender's heap (bench/live/extender-heap.ts).
// Timings are never asserted: the machine is shared (its load average is in the report); compare ratios.
//
// Run: ./node_modules/.bin/node bench/results.ts [--nodes 5000] [--seconds 2] [--rounds 2] [--rate 1000]
//        [--abandoned 1000] [--events 10000] [--heap-pods 50000] [--profile] [--out bench/RESULTS.md]
// (or `npm run bench -- results --nodes 500 ...`); --events: pod events per churn phase (add, modify, delete);
// --heap-pods: full pods for the heap-per-pod figure.
// --profile starts the extender with --cpu-prof (profile written to bench/out/ when it exits).
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { connect, type Socket } from 'node:net';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Node, Pod } from '../src/cluster/types.ts';
import { measureExtenderHeap } from './live/extender-heap.ts';
import { HEAP_PER_POD_TARGET, measurePodHeap } from './live/memory.ts';
import { measureTimeToReady, startFakeApiServer } from './live/time-to-ready.ts';
import { onSchedule } from './open-loop.ts';
import {
  candidateNames,
  generateCluster,
  LOCAL_STORAGE_SHAPE,
  lowerPriorityPodsByNode,
  metaVictims,
} from './synthetic.ts';
import {
  measureScaling,
  SCALING_GOAL,
  SCALING_PER_ROUND,
  SCALING_ROUNDS,
  SCALING_SHAPES,
} from './volumes/filter-scaling.ts';

const { values: args } = parseArgs({
  options: {
    nodes: { type: 'string', default: '5000' },
    seconds: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '2' },
    rate: { type: 'string', default: '1000' },
    abandoned: { type: 'string', default: '1000' },
    events: { type: 'string', default: '10000' },
    'heap-pods': { type: 'string', default: '50000' },
    profile: { type: 'boolean', default: false },
    out: { type: 'string', default: fileURLToPath(new URL('./RESULTS.md', import.meta.url)) },
  },
});
const NODES = Number(args.nodes);
const SECONDS = Number(args.seconds);
const ROUNDS = Number(args.rounds);
const RATE = Number(args.rate);
const ABANDONED = Number(args.abandoned);
const EVENTS = Number(args.events);
const HEAP_PODS = Number(args['heap-pods']);
const CANDIDATES = 500;
const VARIANTS = 8;
const root = fileURLToPath(new URL('..', import.meta.url));
const log = (line: string) => console.log(line);
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();

// ------------------------------------------------------------------------------------------------- cluster
const loadAtStart = uptime();
log(`load at start: ${loadAtStart}`);
// 400 pending pods of each flavour: the pods without claims are bound once each in the bind phase.
const cluster = generateCluster({ ...LOCAL_STORAGE_SHAPE, nodes: NODES, pendingPerKind: 400, seed: 1 });
const dir = await mkdtemp(join(tmpdir(), 'topology-extender-results-'));
const clusterState = join(dir, 'cluster.json');
let text: string | undefined = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: cluster.objects });
const clusterStateMiB = Math.round(text.length / 2 ** 20);
await writeFile(clusterState, text);
text = undefined;
const counts = cluster.counts;
const nodeNames = cluster.nodeNames;
const nodesByName = new Map<string, Node>();
const pending = cluster.pending;
// Preempt's victims are real running pods of lower priority than the preemptor (a 3-claim pod), by node.
const victimsByNode = lowerPriorityPodsByNode(cluster.objects, pending.localAndCsi[0].spec.priority ?? 0);
for (const o of cluster.objects) if (o.kind === 'Node') nodesByName.set(o.metadata.name, o as Node);
cluster.objects.length = 0;
log(
  `cluster: ${counts.Node} nodes, ${counts.runningPods} running pods, ${counts.PersistentVolume} PVs, ` +
    `${counts.CSIStorageCapacity} CSIStorageCapacity; cluster-state file ${clusterStateMiB} MiB`,
);

// -------------------------------------------------------------------------------------------------- servers
interface Server {
  port: number;
  pid: number;
  stop: () => Promise<void>;
}
async function startServer(argv: string[], portOf: (line: string) => number | undefined): Promise<Server> {
  const child = spawn(process.execPath, argv, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  process.on('exit', () => child.kill('SIGKILL'));
  let port: number | undefined;
  for await (const line of createInterface(child.stdout!)) {
    port = portOf(line);
    if (port !== undefined) break;
  }
  if (port === undefined) throw new Error(`${argv.join(' ')} exited before listening`);
  child.stdout!.resume();
  return {
    port,
    pid: child.pid!,
    stop: async () => {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
const rssMiB = async (pid: number) =>
  Math.round(Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024);

const profileDir = fileURLToPath(new URL('./out/', import.meta.url));
await mkdir(profileDir, { recursive: true });
/** `src/main.ts serve` on a free port with the given source options (the pino line naming its address). */
const startExtender = (source: string[], nodeFlags: string[] = []) =>
  startServer([...nodeFlags, 'src/main.ts', 'serve', ...source, '--port', '0', '--log-level', 'info'], (line) => {
    const m = /"address":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(line);
    return m ? Number(m[1]) : undefined;
  });
const t0 = performance.now();
const extender = await startExtender(
  ['--cluster-state', clusterState],
  args.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
);
// Ready: /readyz answers 200 (every kind listed into the store and the cache).
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
interface Answer {
  status: number;
  body: string;
}
function call(port: number, method: string, path: string, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method, path, agent, headers: body ? { 'content-type': 'application/json' } : {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const untilReady = async (port: number) => {
  while ((await call(port, 'GET', '/readyz')).status !== 200) await sleep(50);
};
await untilReady(extender.port);
const readyMs = Math.round(performance.now() - t0);
const readyRssMiB = await rssMiB(extender.pid);
log(`extender ready in ${readyMs} ms (process start to /readyz 200), RSS ${readyRssMiB} MiB`);
await rm(dir, { recursive: true, force: true });
const floor = await startServer(['bench/floor-server.ts'], (line) =>
  line.startsWith('{"port"') ? (JSON.parse(line) as { port: number }).port : undefined,
);

// -------------------------------------------------------------------------------------------------- bodies
const step = Math.floor(nodeNames.length / VARIANTS);
const cacheMode = (pods: Pod[]) =>
  Array.from({ length: VARIANTS }, (_, i) =>
    JSON.stringify({
      Pod: pods[i % pods.length],
      Nodes: null,
      NodeNames: candidateNames(nodeNames, CANDIDATES, i * step),
    }),
  );
const fullNodes = (pods: Pod[]) =>
  Array.from({ length: VARIANTS }, (_, i) =>
    JSON.stringify({
      Pod: pods[i % pods.length],
      Nodes: { items: candidateNames(nodeNames, CANDIDATES, i * step).map((n) => nodesByName.get(n)) },
      NodeNames: null,
    }),
  );
const filter3 = cacheMode(pending.localAndCsi);
// prioritize gets what filter let through, as kube-scheduler sends it.
const prioritize3 = await Promise.all(
  filter3.map(async (body) => {
    const answer = await call(extender.port, 'POST', '/scheduler/filter', body);
    if (answer.status !== 200) throw new Error(`filter: HTTP ${answer.status} ${answer.body}`);
    const { NodeNames } = JSON.parse(answer.body) as { NodeNames: string[] };
    return JSON.stringify({ ...JSON.parse(body), NodeNames });
  }),
);
const feasible3 = Math.round(prioritize3.reduce((a, b) => a + JSON.parse(b).NodeNames.length, 0) / VARIANTS);
// preempt in node-cache mode (NodeNameToMetaVictims), as DefaultPreemption sends it: 100 candidate nodes from a
// window of the node order, each with 3 of its running pods of lower priority than the 3-claim preemptor.
const preempt3 = Array.from({ length: VARIANTS }, (_, i) =>
  JSON.stringify({
    Pod: pending.localAndCsi[i % pending.localAndCsi.length],
    NodeNameToVictims: null,
    NodeNameToMetaVictims: metaVictims(nodeNames, victimsByNode, i * step),
  }),
);
victimsByNode.clear();
// What the extender decides on them (the scenario's label): candidates kept and victims in its answers.
let preemptKept = 0;
let preemptVictims = 0;
for (const body of preempt3) {
  const answer = await call(extender.port, 'POST', '/scheduler/preempt', body);
  if (answer.status !== 200) throw new Error(`preempt: HTTP ${answer.status} ${answer.body}`);
  const kept = Object.values(
    (JSON.parse(answer.body) as { NodeNameToMetaVictims: Record<string, { Pods: unknown[] }> | null })
      .NodeNameToMetaVictims ?? {},
  );
  preemptKept += kept.length / VARIANTS;
  preemptVictims += kept.reduce((a, v) => a + v.Pods.length, 0) / VARIANTS;
}
interface Scenario {
  name: string;
  what: string;
  path: string;
  bodies: string[];
  /** Open-loop rate when not --rate: 500 full nodes are ~0.8 MB a body, beyond 1,000/s for the floor too. */
  rate?: number;
}
const scenarios: Scenario[] = [
  { name: 'filter-3', what: 'filter, 500 names, 2 local + 1 CSI claim', path: '/scheduler/filter', bodies: filter3 },
  {
    name: 'filter-1',
    what: 'filter, 500 names, 1 local claim',
    path: '/scheduler/filter',
    bodies: cacheMode(pending.localClaim),
  },
  {
    name: 'filter-0',
    what: 'filter, 500 names, no claims',
    path: '/scheduler/filter',
    bodies: cacheMode(pending.noClaims),
  },
  {
    name: 'filter-3-nodes',
    what: 'filter, 500 full nodes (non-cache mode), 3 claims',
    path: '/scheduler/filter',
    bodies: fullNodes(pending.localAndCsi),
    rate: 20,
  },
  {
    name: 'prioritize-3',
    what: `prioritize, filter's ${feasible3} feasible of 500, 3 claims`,
    path: '/scheduler/prioritize',
    bodies: prioritize3,
  },
  {
    name: 'preempt-3',
    what:
      `preempt, 100 candidates × 3 victims (node-cache mode), 3 claims; ` +
      `${Math.round(preemptKept)} kept, ${Math.round(preemptVictims)} victims in the answer`,
    path: '/scheduler/preempt',
    bodies: preempt3,
  },
];

nodesByName.clear();

// ------------------------------------------------------------------------------------------------- clients
const quantile = (sorted: number[], q: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : Number.NaN;

/** One connection, one request at a time: latencies in ms. */
async function oneAtATime(port: number, s: Scenario, seconds: number): Promise<number[]> {
  const samples: number[] = [];
  const end = performance.now() + seconds * 1000;
  for (let i = 0; performance.now() < end; i++) {
    const t = performance.now();
    const a = await call(port, 'POST', s.path, s.bodies[i % s.bodies.length]);
    if (a.status !== 200) throw new Error(`${s.name}: HTTP ${a.status} ${a.body.slice(0, 200)}`);
    samples.push(performance.now() - t);
  }
  return samples;
}

interface CannonResult {
  '2xx': number;
  non2xx: number;
  errors: number;
  timeouts: number;
  duration: number;
  latency: { p50: number; p99: number };
}
type Autocannon = (opts: object, cb: (err: Error | null, r: CannonResult) => void) => unknown;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;
function connections16(port: number, s: Scenario, seconds: number): Promise<CannonResult> {
  return new Promise((resolve, reject) =>
    autocannon(
      {
        url: `http://127.0.0.1:${port}`,
        connections: 16,
        duration: seconds,
        workers: 1,
        timeout: 10,
        requests: s.bodies.map((body) => ({
          method: 'POST',
          path: s.path,
          headers: { 'content-type': 'application/json' },
          body,
        })),
      },
      (err, r) => (err ? reject(err) : resolve(r)),
    ),
  );
}

/** Requests issued on schedule at `rate`/s whatever the answers: latency counts from the scheduled time. */
async function openLoop(port: number, s: Scenario, rate: number, seconds: number) {
  const samples: number[] = [];
  let failed = 0;
  await onSchedule(
    rate,
    seconds,
    (i, due) =>
      call(port, 'POST', s.path, s.bodies[i % s.bodies.length]).then(
        (a) => {
          if (a.status === 200) samples.push(performance.now() - due);
          else failed++;
        },
        () => {
          failed++;
        },
      ),
    'spin',
  );
  samples.sort((a, b) => a - b);
  return { p50: quantile(samples, 0.5), p99: quantile(samples, 0.99), answered: samples.length, failed };
}

// ------------------------------------------------------------------------------------------------ measuring
interface Side {
  p50: number;
  p99: number;
  rps: number;
  rpsP99: number;
  openP50: number;
  openP99: number;
  openFailed: number;
}
type Sides = { floor: Side; extender: Side };
const results: Record<string, Sides> = {};
const blank = (): Side => ({ p50: 0, p99: 0, rps: 0, rpsP99: 0, openP50: 0, openP99: 0, openFailed: 0 });
for (const s of scenarios) {
  const serial: Record<'floor' | 'extender', number[]> = { floor: [], extender: [] };
  const out: Sides = { floor: blank(), extender: blank() };
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate which side goes first, so a drift in the machine's load hits both alike.
    const order = r % 2 === 0 ? (['floor', 'extender'] as const) : (['extender', 'floor'] as const);
    for (const side of order) {
      const port = side === 'floor' ? floor.port : extender.port;
      serial[side].push(...(await oneAtATime(port, s, SECONDS)));
      const c = await connections16(port, s, SECONDS);
      if (c.non2xx || c.errors || c.timeouts)
        log(`  ${s.name} ${side}: ${c.non2xx} non-2xx, ${c.errors} errors, ${c.timeouts} timeouts`);
      out[side].rps += c['2xx'] / c.duration / ROUNDS;
      out[side].rpsP99 = Math.max(out[side].rpsP99, c.latency.p99);
      const o = await openLoop(port, s, s.rate ?? RATE, SECONDS);
      out[side].openP50 = Math.max(out[side].openP50, o.p50);
      out[side].openP99 = Math.max(out[side].openP99, o.p99);
      out[side].openFailed += o.failed;
    }
  }
  for (const side of ['floor', 'extender'] as const) {
    const sorted = serial[side].sort((a, b) => a - b);
    out[side].p50 = quantile(sorted, 0.5);
    out[side].p99 = quantile(sorted, 0.99);
  }
  results[s.name] = out;
  const f = out.floor;
  const e = out.extender;
  log(
    `${s.name.padEnd(15)} one at a time p50 ${e.p50.toFixed(2)} ms (floor ${f.p50.toFixed(2)}), p99 ${e.p99.toFixed(2)} ` +
      `(${f.p99.toFixed(2)}); 16 conns ${Math.round(e.rps)} req/s (floor ${Math.round(f.rps)}, ratio ` +
      `${(e.rps / f.rps).toFixed(2)}), p99 ${e.rpsP99} ms (${f.rpsP99}); open loop ${s.rate ?? RATE}/s p99 ${e.openP99.toFixed(1)} ms ` +
      `(floor ${f.openP99.toFixed(1)})${e.openFailed ? `, ${e.openFailed} failed` : ''}`,
  );
}

// ------------------------------------------------------------------------------------------------------ bind
// Each pending pod without claims is bound once (16 at a time) to a node of the candidate window; the floor answers
// the same bodies. One round only: a pod binds once.
async function bindAll(port: number, bodies: string[]): Promise<{ perSec: number; failed: number }> {
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < bodies.length) {
        const a = await call(port, 'POST', '/scheduler/bind', bodies[next++]);
        if (a.status !== 200 || (JSON.parse(a.body) as { Error?: string }).Error) failed++;
      }
    }),
  );
  return { perSec: bodies.length / ((performance.now() - started) / 1000), failed };
}
const bindBodies = pending.noClaims.map((pod, i) =>
  JSON.stringify({
    PodName: pod.metadata.name,
    PodNamespace: pod.metadata.namespace,
    PodUID: pod.metadata.uid,
    Node: nodeNames[(i * 7) % nodeNames.length],
  }),
);
const bindFloor = await bindAll(floor.port, bindBodies);
const bindExtender = await bindAll(extender.port, bindBodies);
log(
  `bind (cluster-state mode, ${bindBodies.length} pods without claims, 16 at a time): ${Math.round(bindExtender.perSec)} ` +
    `binds/s (floor ${Math.round(bindFloor.perSec)}, ratio ${(bindExtender.perSec / bindFloor.perSec).toFixed(2)})` +
    (bindExtender.failed ? `, ${bindExtender.failed} failed` : ''),
);

// --------------------------------------------------------------------------------------------------- backlog
// kube-scheduler gave up on these: each heavy filter is sent and its connection closed at once. Then a fresh filter.
const metricOf = async (port: number, pattern: RegExp) =>
  Number(pattern.exec((await call(port, 'GET', '/metrics')).body)?.[1] ?? 0);
const metric = (pattern: RegExp) => metricOf(extender.port, pattern);
const droppedBefore = await metric(/verb_dropped_total\{verb="filter",reason="client_gone"\} (\d+)/);
const computedFilters = () => metric(/verb_results_total\{verb="filter",outcome="ok"\} (\d+)/);
const computedBefore = await computedFilters();
const raw = (body: string) =>
  `POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
// First every request is sent and left waiting (the server sees live requests and starts on them), then every
// connection is closed at once, as kube-scheduler does when its httpTimeout passes; then the fresh filter.
const abandonedAt = performance.now();
const abandoned: Socket[] = [];
for (let i = 0; i < ABANDONED; i += 100) {
  await Promise.all(
    Array.from(
      { length: Math.min(100, ABANDONED - i) },
      (_, j) =>
        new Promise<void>((resolve) => {
          const socket = connect(extender.port, '127.0.0.1', () => {
            socket.write(raw(filter3[(i + j) % filter3.length]), () => resolve());
          });
          socket.on('error', () => resolve());
          abandoned.push(socket);
        }),
    ),
  );
}
for (const socket of abandoned) socket.destroy();
const sentMs = performance.now() - abandonedAt;
const freshAt = performance.now();
const fresh = await call(extender.port, 'POST', '/scheduler/filter', filter3[0]);
const freshMs = performance.now() - freshAt;
await new Promise((r) => setTimeout(r, 500));
const skipped = (await metric(/verb_dropped_total\{verb="filter",reason="client_gone"\} (\d+)/)) - droppedBefore;
const computed = (await computedFilters()) - computedBefore - 1;
log(
  `backlog: ${ABANDONED} abandoned filters (3 claims) sent in ${Math.round(sentMs)} ms, then a fresh filter answered ` +
    `HTTP ${fresh.status} in ${freshMs.toFixed(1)} ms; of the abandoned, ${computed} were computed (live when read), ` +
    `${skipped} skipped by the verb queue, the rest never reached a handler (Node drops a closed connection's requests)`,
);
const rssEndMiB = await rssMiB(extender.pid);
await extender.stop();
await floor.stop();

// --------------------------------------------------------------------------------------------------- scaling
// bench/volumes/filter-scaling.ts in process, with the servers gone: the volume filter over 100 candidates, 3 claims,
// in a small and a large cluster of each shape.
const scaling = SCALING_SHAPES.map((shape) => {
  const m = measureScaling(shape);
  log(
    `scaling ${shape}: ${m.few} ${m.what} ${m.small.ms.toFixed(3)} ms, ${m.many} ${m.large.ms.toFixed(3)} ms, ` +
      `ratio ${m.ratio.toFixed(2)}${m.verdictsOk ? '' : ' (unexpected verdicts)'}`,
  );
  return m;
});

// ---------------------------------------------------------------------------------------------------- ingest
// From an API server instead of the file: a fake one (bench/live/fake-server-process.ts, own process) holding the same
// local-storage cluster. The extender (`serve --kubeconfig`) lists and watches it: time to ready, RSS at ready; then
// pods churn through its watch (full pods as the API sends them: added, modified, deleted) and events/s counts from
// the fake server's first write (the pods are built before) until the extender's store shows the last event (read on
// /metrics every 20 ms).
const fake = await startFakeApiServer(['--local-storage', String(NODES)]);
log(`fake API server: ${fake.nodes} nodes, ${fake.pods} pods, loaded in ${(fake.loadMs / 1000).toFixed(1)} s`);
const liveAt = performance.now();
const live = await startExtender(['--kubeconfig', fake.kubeconfig]);
await untilReady(live.port);
const liveReadyMs = Math.round(performance.now() - liveAt);
const liveRssMiB = await rssMiB(live.pid);
log(`extender from the API: ready in ${liveReadyMs} ms, RSS ${liveRssMiB} MiB`);
/** Who reads the churn: how far it has got, and the reading that means a phase's last event has arrived. */
interface ChurnReader {
  name: 'extender' | 'floor';
  read: () => Promise<number>;
  expected: (verb: ChurnVerb, before: number, events: number) => number;
}
type ChurnVerb = 'add' | 'modify' | 'delete';
interface ChurnPhase {
  verb: ChurnVerb;
  events: number;
  seconds: number;
  /** Time the fake server took to write the events (its own process). */
  serverMs: number;
  perSec: number;
}
async function churn(verb: ChurnVerb, reader: ChurnReader): Promise<ChurnPhase> {
  const before = await reader.read();
  const send = await fake.churn(verb, EVENTS);
  const started = performance.now();
  const sent = await send();
  const expected = reader.expected(verb, before, sent.events);
  for (let seen = await reader.read(); seen !== expected; seen = await reader.read()) {
    if (performance.now() - started > 300_000) throw new Error(`${reader.name} ${verb}: at ${seen}, not ${expected}`);
    await sleep(20);
  }
  const seconds = (performance.now() - started) / 1000;
  const phase = { verb, events: sent.events, seconds, serverMs: sent.ms, perSec: sent.events / seconds };
  log(
    `watch ${verb} (${reader.name}): ${phase.events} events in ${seconds.toFixed(2)} s = ${Math.round(phase.perSec)} ` +
      `events/s (the fake server wrote them in ${sent.ms} ms)`,
  );
  return phase;
}
const churnAll = async (reader: ChurnReader) => {
  const phases = [await churn('add', reader), await churn('modify', reader), await churn('delete', reader)];
  const events = phases.reduce((a, p) => a + p.events, 0);
  const seconds = phases.reduce((a, p) => a + p.seconds, 0);
  return { phases, events, seconds, perSec: events / seconds };
};
const churnExtender = await churnAll({
  name: 'extender',
  read: () => metricOf(live.port, /topology_extender_store_objects\{kind="Pod"\} (\d+)/),
  // modify ends with one pod added: when the store shows it, every modification before it has arrived.
  expected: (verb, before, events) =>
    verb === 'add' ? before + events : verb === 'modify' ? before + 1 : before - events,
});
const liveRssEndMiB = await rssMiB(live.pid);
await live.stop();

/**
 * The ingest floor, with the extender gone: one bare watch of every pod from the current resourceVersion that only
 * reads the HTTP stream and JSON.parses each line (no client library, store or cache), in this process.
 */
async function floorWatch(url: string) {
  const { port } = new URL(url);
  const listed = JSON.parse((await call(Number(port), 'GET', '/api/v1/pods?limit=1')).body) as {
    metadata: { resourceVersion: string };
  };
  let events = 0;
  let rest = '';
  const req = httpRequest(
    `${url}/api/v1/pods?watch=true&resourceVersion=${listed.metadata.resourceVersion}`,
    { agent: false },
    (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop()!;
        for (const line of lines) if ((JSON.parse(line) as { type: string }).type !== 'BOOKMARK') events++;
      });
    },
  );
  req.on('error', () => {});
  req.end();
  await sleep(200); // the watch is open
  return { events: () => events, stop: () => req.destroy() };
}
const watch = await floorWatch(fake.url);
const churnFloor = await churnAll({
  name: 'floor',
  read: async () => watch.events(),
  expected: (_verb, before, events) => before + events,
});
watch.stop();
// The same listing into a store and cache in this process (bench/live/time-to-ready.ts), where the heap can be read
// after a full GC; then bench/live/memory.ts: full API pods through the store and the cache, per pod.
const client = await measureTimeToReady(fake.kubeconfig);
await fake.stop();
log(
  `client (KubeSource + store + cache in process): ready in ${client.seconds.toFixed(1)} s, heap grew ` +
    `${Math.round(client.heapGrowthBytes / 2 ** 20)} MiB (${Math.round(client.heapGrowthBytes / client.pods)} B per pod, everything included)`,
);
const podHeap = measurePodHeap(HEAP_PODS);
log(
  `heap per cached pod (${podHeap.pods} full API pods, store + cache): ${Math.round(podHeap.totalBytesPerPod)} B ` +
    `(store ${Math.round(podHeap.storeBytesPerPod)} B)`,
);
const extenderHeap = await measureExtenderHeap(NODES);
const extenderHeapMiB = Math.round(extenderHeap.heapBytes / 2 ** 20);
log(
  `the ready extender's heap (cluster-state, in process, after a /metrics scrape and full GCs): ${extenderHeapMiB} MiB; ` +
    `one full GC of it ${extenderHeap.fullGCMs.toFixed(0)} ms`,
);

// --------------------------------------------------------------------------------------------------- report
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'bench'], { cwd: root, encoding: 'utf8' })
  .trim()
  .split('\n')
  .filter(Boolean).length;
const loadAtEnd = uptime();
const ms = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
const ratio = (x: number) => x.toFixed(2);
const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');
const r = results;
const targets: [string, string, boolean][] = [
  [
    'filter-3: ≥ 2,500 req/s at 16 connections',
    `${Math.round(r['filter-3'].extender.rps)} req/s`,
    r['filter-3'].extender.rps >= 2500,
  ],
  [
    'filter-3: ≥ 1/2 of the floor at 16 connections',
    `${ratio(r['filter-3'].extender.rps / r['filter-3'].floor.rps)}×`,
    r['filter-3'].extender.rps >= r['filter-3'].floor.rps / 2,
  ],
  [
    `filter-3: p99 ≤ 10 ms at ${RATE} req/s open loop`,
    `${ms(r['filter-3'].extender.openP99)} ms`,
    r['filter-3'].extender.openP99 <= 10 && r['filter-3'].extender.openFailed === 0,
  ],
  [
    'filter-3: one request at a time ≤ 2 ms (p50)',
    `${ms(r['filter-3'].extender.p50)} ms`,
    r['filter-3'].extender.p50 <= 2,
  ],
  [
    'prioritize-3: ≥ 1/2 of the floor at 16 connections',
    `${ratio(r['prioritize-3'].extender.rps / r['prioritize-3'].floor.rps)}×`,
    r['prioritize-3'].extender.rps >= r['prioritize-3'].floor.rps / 2,
  ],
  [
    'filter-0: ≥ 1/2 of the floor at 16 connections',
    `${ratio(r['filter-0'].extender.rps / r['filter-0'].floor.rps)}×`,
    r['filter-0'].extender.rps >= r['filter-0'].floor.rps / 2,
  ],
  [
    `no backlog: after ${ABANDONED} abandoned heavy filters a fresh one answers within 50 ms`,
    `HTTP ${fresh.status} in ${ms(freshMs)} ms`,
    fresh.status === 200 && freshMs <= 50,
  ],
  ...scaling.map((m): [string, string, boolean] => [
    `filter cost ≤ ${SCALING_GOAL}× from ${m.few.toLocaleString('en')} to ${m.many.toLocaleString('en')} ${m.what} (${m.shape})`,
    `${ratio(m.ratio)}×`,
    m.ratio <= SCALING_GOAL && m.verdictsOk,
  ]),
  ['ready ≤ 20 s from the cluster-state file', `${(readyMs / 1000).toFixed(1)} s`, readyMs <= 20_000],
  ['RSS at ready ≤ 1 GiB', `${readyRssMiB} MiB`, readyRssMiB <= 1024],
  [
    `heap ≤ 2 KiB per cached pod from the API (${podHeap.pods.toLocaleString('en')} full pods, store + cache)`,
    `${Math.round(podHeap.totalBytesPerPod).toLocaleString('en')} B`,
    podHeap.totalBytesPerPod <= HEAP_PER_POD_TARGET && podHeap.cachedPods === podHeap.pods,
  ],
];
const rows = scenarios.map((s) => {
  const { floor: f, extender: e } = r[s.name];
  return (
    `| ${s.what} | ${ms(e.p50)} / ${ms(e.p99)} | ${ms(f.p50)} / ${ms(f.p99)} | ${ratio(e.p50 / f.p50)} | ` +
    `${Math.round(e.rps)} (p99 ${e.rpsP99} ms) | ${Math.round(f.rps)} (p99 ${f.rpsP99} ms) | ${ratio(e.rps / f.rps)} | ` +
    `${ms(e.openP99)}${e.openFailed ? ` (${e.openFailed} failed)` : ''}${s.rate ? ` at ${s.rate}/s` : ''} | ${ms(f.openP99)} |`
  );
});
const md = `# Benchmark results (issue 9)

Written by \`npm run bench -- results\` (\`bench/results.ts\`); do not edit by hand.

- **When**: ${new Date().toISOString()}; commit \`${commit}\`${dirty ? ` with ${dirty} uncommitted file(s) under src/ or bench/` : ''}
- **Machine**: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; shared with other work: figures are noisy, **ratios in the same run are what count**
- **Load**: at start \`${loadAtStart}\`; at end \`${loadAtEnd}\` (load average ${loadavg()
  .map((l) => l.toFixed(2))
  .join(' ')})
- **Cluster**: local-storage shape (\`LOCAL_STORAGE_SHAPE\`): ${counts.Node} nodes in 3 zones, ${counts.runningPods} running pods, ${counts.PersistentVolume} PVs (${NODES * 10} local), ${counts.CSIStorageCapacity} CSIStorageCapacity (one per node); a ${clusterStateMiB} MiB cluster-state file served by \`src/main.ts serve --cluster-state\` in its own process
- **Floor**: \`bench/floor-server.ts\`, HTTP + JSON only (same framework, body limit and bodies; answers in the verb's shape without deciding), in its own process
- **Method**: per scenario ${ROUNDS} alternating rounds (floor/extender, then extender/floor), each ${SECONDS} s one request at a time on one keep-alive connection, ${SECONDS} s at 16 connections (autocannon), ${SECONDS} s open loop at ${RATE} req/s (issued on schedule; latency from the scheduled time). 8 bodies per scenario (different pods and 500-node windows). p99 of 16 connections and open loop: the worst round.

## Targets

| target | measured | |
|---|---:|---|
${targets.map(([t, m, ok]) => `| ${t} | ${m} | ${verdict(ok)} |`).join('\n')}

## Verbs

| scenario | extender p50 / p99 ms, one at a time | floor p50 / p99 ms | p50 ratio | extender req/s, 16 conns | floor req/s | throughput ratio | extender p99 ms, open loop ${RATE}/s | floor p99 ms |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

## Bind (cluster-state mode)

${bindBodies.length} pending pods without claims, each bound once, 16 requests at a time: **${Math.round(bindExtender.perSec)} binds/s**
(floor ${Math.round(bindFloor.perSec)}/s, ratio ${(bindExtender.perSec / bindFloor.perSec).toFixed(2)})${bindExtender.failed ? `; ${bindExtender.failed} failed` : ''}.

## Backlog

${ABANDONED} filters with 3 claims sent on as many connections, then every connection closed (a kube-scheduler that
gave up), in ${Math.round(sentMs)} ms; then a fresh filter on a new connection: HTTP ${fresh.status} in
**${ms(freshMs)} ms** (one at a time, a filter costs ${ms(r['filter-3'].extender.p50)} ms). Of the ${ABANDONED} abandoned
filters, ${computed} were computed (read while their connection was still open), ${skipped} were skipped by the verb queue
(\`topology_extender_verb_dropped_total{reason="client_gone"}\`), and the rest never reached a handler (Node drops the
requests of a connection closed before they were routed).

## Scaling (\`bench/volumes/filter-scaling.ts\`)

The volume plugins' preFilter and filter for a pod with 3 claims over 100 candidate nodes, in process (no HTTP), in a
small and a large cluster, both built first and measured in alternating rounds; median of ${SCALING_ROUNDS} rounds × ${SCALING_PER_ROUND} requests each. hostname: 10 local PVs per node (hostname affinity),
the extra PVs on other nodes, mostly bound; zonal: every extra PV zonal in the candidates' zones and bound elsewhere;
capacity: one hostname-pinned CSIStorageCapacity per node and 3 claims of that class.

| shape | small cluster | ms / request | large cluster | ms / request | ratio |
|---|---:|---:|---:|---:|---:|
${scaling.map((m) => `| ${m.shape} | ${m.few.toLocaleString('en')} ${m.what} | ${m.small.ms.toFixed(3)} | ${m.many.toLocaleString('en')} ${m.what} | ${m.large.ms.toFixed(3)} | ${ratio(m.ratio)}${m.verdictsOk ? '' : ' (unexpected verdicts)'} |`).join('\n')}

## Memory and start

Process start to \`/readyz\` 200: **${(readyMs / 1000).toFixed(1)} s**; RSS at ready **${readyRssMiB} MiB**, after the run ${rssEndMiB} MiB.

## Ingest from the API

A fake API server (\`bench/live/fake-server-process.ts\`, its own process; paginated lists, JSON-lines watches) holding
the same local-storage cluster (${fake.nodes} nodes, ${fake.pods} pods), loaded in ${(fake.loadMs / 1000).toFixed(1)} s.

- **Extender** (\`src/main.ts serve --kubeconfig\`): process start to \`/readyz\` 200 in **${(liveReadyMs / 1000).toFixed(1)} s**; RSS at ready **${liveRssMiB} MiB**, ${liveRssEndMiB} MiB after the churn below.
- **Through its watch**: ${churnExtender.events.toLocaleString('en')} pod events (full pods as the API sends them) in ${churnExtender.seconds.toFixed(1)} s: **${Math.round(churnExtender.perSec).toLocaleString('en')} events/s**, from the fake server's first write (the pods built before) until \`topology_extender_store_objects{kind="Pod"}\` shows the last one. The floor: the same churn read by a bare watch that only parses each line's JSON (no client library, store or cache), with the extender stopped: ${Math.round(churnFloor.perSec).toLocaleString('en')} events/s, **ratio ${ratio(churnExtender.perSec / churnFloor.perSec)}**.

| events | count | extender s | extender events/s | floor events/s | ratio | fake server writing them (extender's run / floor's) |
|---|---:|---:|---:|---:|---:|---:|
${churnExtender.phases
  .map((p, i) => {
    const f = churnFloor.phases[i];
    return `| ${p.verb === 'add' ? 'ADDED (new running pods)' : p.verb === 'modify' ? 'MODIFIED (the same pods relabelled), then 1 ADDED' : 'DELETED (every pod added)'} | ${p.events.toLocaleString('en')} | ${p.seconds.toFixed(2)} | ${Math.round(p.perSec).toLocaleString('en')} | ${Math.round(f.perSec).toLocaleString('en')} | ${ratio(p.perSec / f.perSec)} | ${p.serverMs} / ${f.serverMs} ms |`;
  })
  .join('\n')}

The fake server writes its events while the reader reads them; a phase whose writing time nears its seconds
measured the fake server, not the reader (the floor's figures are then the fake server's pace).

- **Client in process** (\`bench/live/time-to-ready.ts\`: KubeSource, store and scheduler cache, no HTTP server): every kind listed in **${client.seconds.toFixed(1)} s** (${client.pods} pods, ${client.cachedPods} in the cache); the heap grew ${Math.round(client.heapGrowthBytes / 2 ** 20)} MiB after a full GC, ${Math.round(client.heapGrowthBytes / client.pods).toLocaleString('en')} B per pod with every other object of the cluster (${counts.PersistentVolume} PVs, capacities, claims) counted in.
- **Heap per cached pod** (\`bench/live/memory.ts\`): ${podHeap.pods.toLocaleString('en')} full pods as the API returns them (${(podHeap.jsonBytesPerPod / 1024).toFixed(1)} KiB of JSON each: managedFields, env, probes, status) through the store (trimmed) and the scheduler cache: **${Math.round(podHeap.totalBytesPerPod).toLocaleString('en')} B per pod** (store ${Math.round(podHeap.storeBytesPerPod).toLocaleString('en')} B), target ≤ 2,048 B.
- **The ready extender's heap** (\`bench/live/extender-heap.ts\`): the same ${extenderHeap.nodes.toLocaleString('en')}-node shape (${extenderHeap.runningPods.toLocaleString('en')} running pods, ${extenderHeap.persistentVolumes.toLocaleString('en')} PVs) served from a cluster-state file by the whole extender in process, after one \`/metrics\` scrape and full GCs: **${extenderHeapMiB} MiB**; one full (non-incremental) GC of it takes ${extenderHeap.fullGCMs.toFixed(0)} ms. Every major GC marks this heap. It includes the cluster-state source's own copy of the objects, which a kube-mode extender does not keep.
`;
// Only the head is this run's: from the first section on (those other benchmarks write, bench/analysis.ts,
// bench/scheduler-throughput.ts, ..., the ones written by hand and the readings between them) the file is kept.
const previous = await readFile(args.out, 'utf8').catch(() => '');
const firstSection = previous.search(/<!-- [\w-]+: written by /);
await writeFile(args.out, firstSection < 0 ? md : [md, previous.slice(firstSection)].join('\n'));
log(`wrote ${args.out}`);
process.exit(0);
