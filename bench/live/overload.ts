// Overload (issue 18): the extender (`src/main.ts serve --kubeconfig`) against a fake API server holding the
// local-storage cluster (bench/live/fake-server-process.ts, 5,000 nodes by default), with the chart's memory limit as
// its budget (--memory-budget 1Gi: in a pod the extender reads it from the cgroup).
//   quiet       a 3-claim filter (500 names, cache mode) one at a time: its quiet latency
//   sustainable 16 connections, closed loop: the filters/s the extender serves
//   floor       the same open loop for up to 10 s against a process that answers every request 503 at once
//               (bench/live/refusing-server.ts), idle, then with another of its threads computing without pause (as
//               an overloaded extender's main thread does): the 503 latencies the machine, the client and the kernel
//               cost, idle and with a core taken
//   open loop   2x that rate for --seconds, whatever the answers: statuses, p99 of the 200s (from the scheduled time)
//               and of the 503s (from the request's send)
//   abandoned   --abandoned non-cache filters (--full-nodes full Node objects each, MiBs of JSON), all at once, each
//               connection closed 5 ms after its request was written, as kube-scheduler does past its httpTimeout: how
//               many were computed (topology_extender_verb_started_total)
//   after       the fresh filter again, one at a time, against its quiet latency; RSS once a second for 40 s after
//               the abandoned burst, against its baseline (after the quiet run, before any load)
// RSS is sampled from /proc every 20 ms and its peak (VmHWM, reset before the load) is compared with the budget.
// Timings are never asserted: the machine is shared (its load average is in the report).
//
// The extender runs with the environment the chart's Deployment sets (its MALLOC_* variables); --no-chart-env leaves
// it out, --env NAME=VALUE adds to it (A/B of a process setting); --malloc-trim (needs gdb) calls malloc_trim(0) in it
// at the end: what glibc's malloc held free but resident.
// Run: ./node_modules/.bin/node bench/live/overload.ts [--nodes 5000] [--seconds 30] [--abandoned 500]
//        [--full-nodes 2000] [--budget 1Gi] [--rate N] [--no-chart-env] [--env NAME=VALUE]... [--malloc-trim]
//        [--out bench/RESULTS.md]   (or `npm run bench -- overload`)
// --rate fixes the open loop's rate (filters/s) instead of 2x the measured sustainable one: the same load for an A/B of
// two builds on a shared machine, where the closed loop's figure alone moves by half.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { cpus, totalmem } from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseValue } from '../../src/cluster/quantity.ts';
import type { Node } from '../../src/cluster/types.ts';
import { onSchedule } from '../open-loop.ts';
import { writeResultsSection } from '../results-section.ts';
import { candidateNames, generateCluster, LOCAL_STORAGE_SHAPE } from '../synthetic.ts';
import { startFakeApiServer } from './time-to-ready.ts';

const { values: args } = parseArgs({
  allowNegative: true,
  options: {
    nodes: { type: 'string', default: '5000' },
    seconds: { type: 'string', default: '30' },
    abandoned: { type: 'string', default: '500' },
    'full-nodes': { type: 'string', default: '2000' },
    rate: { type: 'string' },
    budget: { type: 'string', default: '1Gi' },
    env: { type: 'string', multiple: true, default: [] },
    'chart-env': { type: 'boolean', default: true },
    'malloc-trim': { type: 'boolean', default: false },
    out: { type: 'string', default: fileURLToPath(new URL('../RESULTS.md', import.meta.url)) },
  },
});
const NODES = Number(args.nodes);
const SECONDS = Number(args.seconds);
const ABANDONED = Number(args.abandoned);
const FULL_NODES = Number(args['full-nodes']);
const BUDGET = parseValue(args.budget);
const MiB = 2 ** 20;
/** --max-old-space-size as a fraction of the memory budget (docs/operating.md, Sizing memory). */
const HEAP_FRACTION = 0.7;
const root = fileURLToPath(new URL('../..', import.meta.url));
const log = (line: string) => console.log(line);
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quantile = (sorted: number[], q: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : Number.NaN;
const median = (xs: number[]) =>
  quantile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

const loadAtStart = uptime();
log(`load at start: ${loadAtStart}`);

// ----------------------------------------------------------------------------------------------- the bodies
const cluster = generateCluster({ ...LOCAL_STORAGE_SHAPE, nodes: NODES, seed: 1 });
const nodeNames = cluster.nodeNames;
const nodesByName = new Map<string, Node>();
for (const o of cluster.objects) if (o.kind === 'Node') nodesByName.set(o.metadata.name, o as Node);
cluster.objects.length = 0;
const VARIANTS = 8;
const step = Math.floor(nodeNames.length / VARIANTS);
const pods = cluster.pending.localAndCsi;
const filters = Array.from({ length: VARIANTS }, (_, i) =>
  JSON.stringify({ Pod: pods[i % pods.length], Nodes: null, NodeNames: candidateNames(nodeNames, 500, i * step) }),
);
const heavy = Array.from({ length: 4 }, (_, i) =>
  JSON.stringify({
    Pod: pods[i % pods.length],
    Nodes: { items: candidateNames(nodeNames, FULL_NODES, i * step).map((n) => nodesByName.get(n)) },
    NodeNames: null,
  }),
);
nodesByName.clear();
const heavyMiB = heavy[0].length / MiB;

// ------------------------------------------------------------------------------------------------- servers
const fake = await startFakeApiServer(['--local-storage', String(NODES)]);
log(`fake API server: ${fake.nodes} nodes, ${fake.pods} pods, loaded in ${(fake.loadMs / 1000).toFixed(1)} s`);
// As in a pod whose limit is the budget: V8's heap limit set from it (docs/operating.md, Sizing memory).
const heapMiB = Math.round((BUDGET / MiB) * HEAP_FRACTION);
/**
 * The process settings the chart's Deployment gives the container (glibc's MALLOC_* variables; NODE_OPTIONS is the
 * flag above), so that the extender measured is the one that ships; --no-chart-env leaves them out (an A/B).
 */
const chartEnv: Record<string, string> = {};
if (args['chart-env']) {
  const deployment = await readFile(`${root}charts/topology-extender/templates/deployment.yaml`, 'utf8');
  for (const m of deployment.matchAll(/- name: (MALLOC_\w+)\s+value: "?([^"\s]+)"?/g)) chartEnv[m[1]] = m[2];
}
/** --env NAME=VALUE: added to the extender's environment (an A/B of a process setting). */
const extraEnv = {
  ...chartEnv,
  ...Object.fromEntries(
    (args.env as string[]).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  ),
};
const envText = Object.entries(extraEnv)
  .map(([k, v]) => `${k}=${v}`)
  .join(' ');
log(
  `the extender's environment adds: ${envText || 'nothing'}${args['chart-env'] ? ' (the chart sets the MALLOC_*)' : ''}`,
);
const child = spawn(
  process.execPath,
  [
    `--max-old-space-size=${heapMiB}`,
    'src/main.ts',
    'serve',
    '--kubeconfig',
    fake.kubeconfig,
    '--port',
    '0',
    '--memory-budget',
    String(BUDGET),
  ],
  {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, TOPOLOGY_EXTENDER_LOG_FORMAT: 'json', ...extraEnv },
  },
);
process.on('exit', () => child.kill('SIGKILL'));
let port: number | undefined;
let limits: Record<string, number> = {};
for await (const line of createInterface(child.stdout)) {
  if (line.includes('"admission limits"')) limits = JSON.parse(line);
  const m = /"address":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(line);
  if (m) {
    port = Number(m[1]);
    break;
  }
}
if (port === undefined) throw new Error('the extender exited before listening');
child.stdout.resume(); // its log (a warning per dropped verb) is read and dropped
const pid = child.pid!;
const status = async () => await readFile(`/proc/${pid}/status`, 'utf8');
const rssMiB = async () => Number(/VmRSS:\s+(\d+)/.exec(await status())?.[1] ?? 0) / 1024;
const peakMiB = async () => Number(/VmHWM:\s+(\d+)/.exec(await status())?.[1] ?? 0) / 1024;
/** Resident MiB by kind of mapping: the brk heap (glibc's main arena), anonymous mappings, files. */
async function smapsRss(): Promise<string> {
  const kb: Record<string, number> = {};
  let kind = '';
  for (const line of (await readFile(`/proc/${pid}/smaps`, 'utf8')).split('\n')) {
    const m = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) kind = m[1].startsWith('/') ? 'file' : m[1] || 'anon';
    else if (line.startsWith('Rss:')) kb[kind] = (kb[kind] ?? 0) + Number(line.split(/\s+/)[1]);
  }
  return Object.entries(kb)
    .map(([k, v]) => `${k} ${(v / 1024).toFixed(0)}`)
    .join(', ');
}
/** Resets VmHWM to the current RSS (Linux: clear_refs 5). */
const resetPeak = () => writeFile(`/proc/${pid}/clear_refs`, '5').catch(() => {});

const agent = new Agent({ keepAlive: true, maxSockets: 4096 });
interface Answer {
  status: number;
  body: string;
  ms: number;
}
function call(method: string, path: string, body?: string): Promise<Answer> {
  const sent = performance.now();
  return new Promise((resolve) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method, path, agent, headers: body ? { 'content-type': 'application/json' } : {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString(),
            ms: performance.now() - sent,
          }),
        );
      },
    );
    req.on('error', () => resolve({ status: 0, body: '', ms: performance.now() - sent }));
    req.end(body);
  });
}
const started = performance.now();
while ((await call('GET', '/readyz')).status !== 200) await sleep(100);
const readyS = (performance.now() - started) / 1000;
const readyRss = await rssMiB();
// What the first lists left behind is collected before anything is timed.
await sleep(5000);
log(
  `extender ready in ${readyS.toFixed(1)} s, RSS ${readyRss.toFixed(0)} MiB; admission limits ${JSON.stringify(limits)}`,
);

/**
 * A keep-alive HTTP/1.1 client on raw sockets for the open loop, cheap enough per request that the load generator is
 * not what lags: latencies from the send to the answer's last byte.
 */
function rawClient(port: number) {
  const idle: Socket[] = [];
  const send = (payload: Buffer): Promise<{ status: number; ms: number; fresh: boolean }> =>
    new Promise((resolve) => {
      const sent = performance.now();
      let s = idle.pop();
      const fresh = !s;
      if (!s) {
        s = connect(port, '127.0.0.1').setNoDelay(true);
        s.on('error', () => {});
      }
      const socket = s;
      let text = '';
      const finish = (status: number, reuse: boolean) => {
        socket.off('data', onData).off('close', onClose);
        if (reuse) idle.push(socket);
        else socket.destroy();
        resolve({ status, ms: performance.now() - sent, fresh });
      };
      const onData = (d: Buffer) => {
        text += d.toString('latin1');
        const end = text.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = text.slice(0, end);
        if (text.length < end + 4 + Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0)) return;
        finish(Number(text.slice(9, 12)), !/connection: close/i.test(head));
      };
      const onClose = () => finish(0, false);
      socket.on('data', onData).on('close', onClose);
      socket.write(payload);
    });
  const close = () => {
    for (const socket of idle.splice(0)) socket.destroy();
  };
  return { send, close };
}
const filterRequests = filters.map((body) =>
  Buffer.from(
    `POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  ),
);

const metrics = async () => (await call('GET', '/metrics')).body;
const metric = (text: string, pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? 0);
const heapUsedMiB = async () => metric(await metrics(), /nodejs_heap_size_used_bytes (\d+)/) / MiB;
const filtersStarted = async () => metric(await metrics(), /verb_started_total\{verb="filter"\} (\d+)/);

// ------------------------------------------------------------------------------------------------- quiet
async function oneAtATime(count: number): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) {
    const a = await call('POST', '/scheduler/filter', filters[i % VARIANTS]);
    if (a.status !== 200) throw new Error(`filter: HTTP ${a.status} ${a.body.slice(0, 200)}`);
    ms.push(a.ms);
  }
  return median(ms);
}
await oneAtATime(50); // warm-up
const quietMs = await oneAtATime(100);
const quietHeap = await heapUsedMiB();
// The baseline the RSS must come back to after the bursts: ready, warmed up by the quiet run, before any load.
const quietRss = await rssMiB();
const quietHeapTotal = metric(await metrics(), /nodejs_heap_size_total_bytes (\d+)/) / MiB;
log(
  `quiet: a 3-claim filter one at a time, median ${quietMs.toFixed(2)} ms; heap used ${quietHeap.toFixed(0)} MiB, ` +
    `total ${quietHeapTotal.toFixed(0)} MiB; RSS ${quietRss.toFixed(0)} MiB (the baseline)`,
);

// ------------------------------------------------------------------------------------------- sustainable
// Filters answered 200 per second of the closed loop; the best second is taken: on a shared machine the others
// include moments when the extender had no core, and 2x an underestimate would not overload it.
const perSecond = [0, 0, 0, 0, 0];
const closedStart = performance.now();
await Promise.all(
  Array.from({ length: 16 }, async (_, w) => {
    for (let i = w; performance.now() < closedStart + 5000; i += 16) {
      const a = await call('POST', '/scheduler/filter', filters[i % VARIANTS]);
      const second = Math.floor((performance.now() - closedStart) / 1000);
      if (a.status === 200 && second < perSecond.length) perSecond[second]++;
    }
  }),
);
const sustainable = Math.max(...perSecond);
const rate = args.rate ? Number(args.rate) : Math.round(2 * sustainable);
log(
  `sustainable: ${sustainable} filters/s at 16 connections (best second of ${perSecond.join(', ')}); open loop at ${rate}/s`,
);

// ------------------------------------------------------------------------------------------------- open loop
/** Filters at `rate` per second for `seconds`, whatever the answers: statuses, 200s from schedule, 503s from send. */
async function openLoop(to: number, seconds: number) {
  const statuses = new Map<number, number>();
  const ok: number[] = [];
  const refused: number[] = [];
  /** The 503s on connections opened for them (the client had none idle): these waited to be accepted too. */
  const refusedNew: number[] = [];
  const client = rawClient(to);
  // Sleeping between sends: a spinning client would take a core from the extender on a small machine.
  await onSchedule(
    rate,
    seconds,
    (i, due) =>
      client.send(filterRequests[i % VARIANTS]).then((a) => {
        statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
        if (a.status === 200) ok.push(performance.now() - due);
        else if (a.status === 503) {
          refused.push(a.ms);
          if (a.fresh) refusedNew.push(a.ms);
        }
      }),
    'sleep',
  );
  client.close();
  ok.sort((a, b) => a - b);
  refused.sort((a, b) => a - b);
  refusedNew.sort((a, b) => a - b);
  return { statuses, ok, refused, refusedNew };
}

// The floors: the same open loop against a process that refuses everything at once (bench/live/refusing-server.ts),
// idle, then with another thread of it computing without pause, as an overloaded extender's main thread does.
async function floorLoop(args: string[]) {
  const refuser = spawn(process.execPath, ['bench/live/refusing-server.ts', ...args], {
    cwd: root,
    // Its stdin: it exits when this process is gone.
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const [refuserPort] = await once(createInterface(refuser.stdout), 'line');
  const loop = await openLoop(Number(refuserPort), Math.min(SECONDS, 10));
  refuser.kill();
  return loop.refused;
}
const floor = await floorLoop([]);
const floorP99 = quantile(floor, 0.99);
const busyFloor = await floorLoop(['--busy-core']);
const busyFloorP99 = quantile(busyFloor, 0.99);
log(
  `floor: the same open loop against an instant 503 for ${Math.min(SECONDS, 10)} s: p50 ${quantile(floor, 0.5).toFixed(2)} ms, ` +
    `p99 ${floorP99.toFixed(2)} ms (${floor.length} × 503); with a core busy in the server: p50 ` +
    `${quantile(busyFloor, 0.5).toFixed(2)} ms, p99 ${busyFloorP99.toFixed(2)} ms`,
);

// ------------------------------------------------------------------------------------------------- RSS watch
let sampled = 0;
let sampling = true;
const sampler = (async () => {
  while (sampling) {
    sampled = Math.max(sampled, await rssMiB());
    await sleep(20);
  }
})();
const baselineRss = await rssMiB();
await resetPeak();
const beforeOpen = await metrics(); // this scrape also restarts the event-loop lag figures
const cpuBefore = metric(beforeOpen, /process_cpu_seconds_total ([\d.]+)/);
const openStarted = performance.now();
const { statuses, ok, refused, refusedNew } = await openLoop(port, SECONDS);
const openPeak = Math.max(sampled, await peakMiB());
const afterOpen = await metrics();
// The share of one core the extender got while overloaded: below 1, the machine (not the extender) held requests.
const cpuShare =
  (metric(afterOpen, /process_cpu_seconds_total ([\d.]+)/) - cpuBefore) / ((performance.now() - openStarted) / 1000);
const lagP50 = metric(afterOpen, /eventloop_lag_p50_seconds ([\d.e-]+)/) * 1000;
const lagP99 = metric(afterOpen, /eventloop_lag_p99_seconds ([\d.e-]+)/) * 1000;
const count = (s: number) => statuses.get(s) ?? 0;
/** Major (mark-compact) GCs during the open loop: each stops the event loop, 503s included. */
const majorGc = (text: string) => ({
  count: metric(text, /gc_duration_seconds_count\{kind="major"\} (\d+)/),
  seconds: metric(text, /gc_duration_seconds_sum\{kind="major"\} ([\d.e-]+)/),
});
const gcOpen = {
  count: majorGc(afterOpen).count - majorGc(beforeOpen).count,
  seconds: majorGc(afterOpen).seconds - majorGc(beforeOpen).seconds,
};
const openSent = [...statuses.values()].reduce((a, b) => a + b, 0);
log(
  `open loop ${rate}/s for ${SECONDS} s: ${openSent} sent, ${count(200)} × 200 (p50 ${quantile(ok, 0.5).toFixed(1)} ms, ` +
    `p99 ${quantile(ok, 0.99).toFixed(1)} ms from schedule), ${count(503)} × 503 (p50 ${quantile(refused, 0.5).toFixed(2)} ms, ` +
    `p99 ${quantile(refused, 0.99).toFixed(2)} ms; ${refusedNew.length} on new connections, p99 ${quantile(refusedNew, 0.99).toFixed(2)} ms), other ${openSent - count(200) - count(503)}; RSS peak ${openPeak.toFixed(0)} MiB; the extender used ` +
    `${cpuShare.toFixed(2)} of a core, event-loop lag p50 ${lagP50.toFixed(1)} ms, p99 ${lagP99.toFixed(1)} ms; ${gcOpen.count} major GCs, ` +
    `${(gcOpen.seconds * 1000).toFixed(0)} ms in all (mean ${((gcOpen.seconds * 1000) / Math.max(1, gcOpen.count)).toFixed(0)} ms)`,
);

// ------------------------------------------------------------------------------------------------- abandoned
await sleep(1000);
const startedBefore = await filtersStarted();
const abandonedStatuses = new Map<string, number>();
const raw = (body: string) =>
  `POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
const abandonedAt = performance.now();
await Promise.all(
  Array.from(
    { length: ABANDONED },
    (_, i) =>
      new Promise<void>((resolve) => {
        const body = heavy[i % heavy.length];
        let answer = '';
        let finished = false;
        const done = (what: string) => {
          if (finished) return;
          finished = true;
          abandonedStatuses.set(what, (abandonedStatuses.get(what) ?? 0) + 1);
          socket.destroy();
          resolve();
        };
        const socket = connect(port!, '127.0.0.1', () => {
          socket.write(raw(body));
          // Closed 5 ms after the whole request was written: kube-scheduler gave up.
          socket.write(body, () => setTimeout(() => done(answer ? answer.slice(9, 12) : 'closed unanswered'), 5));
        });
        socket.on('data', (d) => {
          answer ||= d.toString('latin1', 0, 12);
        });
        socket.on('error', () => done(answer ? answer.slice(9, 12) : 'reset'));
      }),
  ),
);
const abandonedMs = performance.now() - abandonedAt;
// Idle again: nothing queued, no body held.
for (let i = 0; i < 600; i++) {
  const text = await metrics();
  if (
    metric(text, /verb_queue_depth (\d+)/) === 0 &&
    metric(text, /admission_held\{resource="body_bytes"\} (\d+)/) === 0
  )
    break;
  await sleep(100);
}
const computed = (await filtersStarted()) - startedBefore;
const loadPeak = Math.max(sampled, await peakMiB());
log(
  `abandoned: ${ABANDONED} non-cache filters of ${heavyMiB.toFixed(1)} MiB (${FULL_NODES} full nodes) sent at once in ` +
    `${(abandonedMs / 1000).toFixed(1)} s, each closed 5 ms after it was written: ${computed} computed ` +
    `(${((100 * computed) / ABANDONED).toFixed(1)} %); client saw ${JSON.stringify(Object.fromEntries(abandonedStatuses))}; ` +
    `RSS peak ${loadPeak.toFixed(0)} MiB`,
);

// ------------------------------------------------------------------------------------------------- after
// The RSS after the bursts, once a second for TRAJECTORY_S from the end of the abandoned one (the fresh filters run
// in the first second or two): VmRSS, and the heap and external memory V8 reports (/metrics), to tell V8's memory
// from native memory.
const TRAJECTORY_S = 40;
const burstEnd = performance.now();
const freshMs = await oneAtATime(100);
interface Sample {
  s: number;
  rss: number;
  heap: number;
  heapTotal: number;
  external: number;
}
const trajectory: Sample[] = [];
for (let s = 1; s <= TRAJECTORY_S; s++) {
  await sleep(Math.max(0, burstEnd + s * 1000 - performance.now()));
  // /metrics every 10 s, as Prometheus would: a scrape allocates, and one a second kept the RSS growing by itself.
  const text = s % 10 === 0 ? await metrics() : undefined;
  trajectory.push({
    s,
    rss: await rssMiB(),
    heap: text ? metric(text, /nodejs_heap_size_used_bytes (\d+)/) / MiB : Number.NaN,
    heapTotal: text ? metric(text, /nodejs_heap_size_total_bytes (\d+)/) / MiB : Number.NaN,
    external: text ? metric(text, /nodejs_external_memory_bytes (\d+)/) / MiB : Number.NaN,
  });
}
sampling = false;
await sampler;
const at = (s: number) => trajectory[s - 1];
const afterRss = at(5).rss;
const endRss = at(TRAJECTORY_S).rss;
/** The target: back within 25 % or 64 MiB of the baseline, whichever is larger. */
const allowedRss = Math.max(quietRss * 1.25, quietRss + 64);
log(
  `RSS after the bursts (s: RSS / heap used / heap total / external MiB): ${trajectory
    .filter((x) => x.s % 5 === 0 || x.s === 1)
    .map(
      (x) =>
        `${x.s}: ${x.rss.toFixed(0)}${Number.isNaN(x.heap) ? '' : `/${x.heap.toFixed(0)}/${x.heapTotal.toFixed(0)}/${x.external.toFixed(0)}`}`,
    )
    .join(', ')}; baseline ${quietRss.toFixed(0)}, allowed ${allowedRss.toFixed(0)}`,
);
// --malloc-trim (diagnosis, needs gdb): what glibc's malloc holds free but resident, returned with malloc_trim(0).
let trimmedRss: number | undefined;
if (args['malloc-trim']) {
  log(`smaps before malloc_trim: ${await smapsRss()}`);
  execFileSync('gdb', ['-p', String(pid), '-batch', '-ex', 'call (int) malloc_trim(0)'], { stdio: 'ignore' });
  trimmedRss = await rssMiB();
  log(`smaps after malloc_trim: ${await smapsRss()}`);
  log(`malloc_trim(0) at +${TRAJECTORY_S} s: RSS ${endRss.toFixed(0)} -> ${trimmedRss.toFixed(0)} MiB`);
}
const final = await metrics();
const rejectedBy = (reason: string) =>
  metric(final, new RegExp(`admission_rejected_total\\{reason="${reason}"\\} (\\d+)`));
const droppedBy = (reason: string) =>
  metric(final, new RegExp(`verb_dropped_total\\{verb="filter",reason="${reason}"\\} (\\d+)`));
const reasons = {
  queued_work: rejectedBy('queued_work'),
  queued_verbs: rejectedBy('queued_verbs'),
  body_bytes: rejectedBy('body_bytes'),
  connections: rejectedBy('connections'),
  client_gone: droppedBy('client_gone'),
  deadline: droppedBy('deadline'),
};
const openReasons = {
  queued_work: metric(afterOpen, /admission_rejected_total\{reason="queued_work"\} (\d+)/),
  queued_verbs: metric(afterOpen, /admission_rejected_total\{reason="queued_verbs"\} (\d+)/),
  deadline: metric(afterOpen, /verb_dropped_total\{verb="filter",reason="deadline"\} (\d+)/),
};
const peak = Math.max(openPeak, loadPeak);
log(
  `after: a fresh filter one at a time, median ${freshMs.toFixed(2)} ms (${(freshMs / quietMs).toFixed(2)}× quiet); ` +
    `RSS ${afterRss.toFixed(0)} MiB 5 s after (baseline ${baselineRss.toFixed(0)}, peak ${peak.toFixed(0)}, budget ` +
    `${(BUDGET / MiB).toFixed(0)}); refusals ${JSON.stringify(reasons)}`,
);
child.kill('SIGTERM');
await once(child, 'exit');
await fake.stop();
const loadAtEnd = uptime();
log(`load at end: ${loadAtEnd}`);

// ------------------------------------------------------------------------------------------------- report
const n = (x: number, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const verdict = (met: boolean) => (met ? 'met' : '**not met**');
const budgetMiB = BUDGET / MiB;
const p99Refused = quantile(refused, 0.99);
const computedPct = (100 * computed) / ABANDONED;
const md = `<!-- overload: written by bench/live/overload.ts -->
## Overload (\`bench/live/overload.ts\`, issue 18)

${n(NODES)}-node local-storage cluster from a fake API server (\`bench/live/fake-server-process.ts\`), the extender
(\`src/main.ts serve --kubeconfig\`) with \`--memory-budget ${args.budget}\` (the chart's \`resources.limits.memory\`; in a
pod it is read from the cgroup) and \`--max-old-space-size=${heapMiB}\` (${HEAP_FRACTION} of it, as the README's sizing
section says)${envText ? `, and the environment the chart's Deployment sets: \`${envText}\`` : ''}: admission limits ${n(limits.maxConnections ?? 0)} connections,
${n((limits.maxBodyBytesHeld ?? 0) / MiB, 0)} MiB of bodies held, ${n(limits.maxQueuedVerbs ?? 0)} verbs or ${limits.maxQueuedWorkSeconds} s of work waiting.
Machine: ${cpus().length} CPUs, ${n(totalmem() / 2 ** 30, 0)} GiB; load at start \`${loadAtStart.replace(/.*load average/, 'load average')}\`,
at end \`${loadAtEnd.replace(/.*load average/, 'load average')}\` (shared machine: compare figures of one run).

| target | measured | |
|---|---:|---|
| RSS peak ≤ budget (${n(budgetMiB)} MiB) while overloaded | ${n(peak)} MiB | ${verdict(peak <= budgetMiB)} |
| answers are 200 or 503: p99 of the 503s ≤ 5 ms | ${count(503) ? `${n(p99Refused, 2)} ms` : 'no 503: not overloaded'} (${n(count(503))} × 503, ${n(count(200))} × 200, ${n(openSent - count(200) - count(503))} other); floor ${n(floorP99, 2)} ms, ${n(busyFloorP99, 2)} ms with a core busy | ${verdict(p99Refused <= 5 && openSent === count(200) + count(503))} |
| ≤ 5 % of abandoned verbs computed | ${n(computedPct, 1)} % (${computed} of ${ABANDONED}) | ${verdict(computedPct <= 5)} |
| a fresh filter afterwards ≤ 2× its quiet latency | ${n(freshMs / quietMs, 2)}× (${n(freshMs, 2)} ms against ${n(quietMs, 2)} ms) | ${verdict(freshMs / quietMs <= 2)} |
| RSS at +${TRAJECTORY_S} s after the bursts within 25 % or 64 MiB of its baseline (≤ ${n(allowedRss)} MiB) | ${n(endRss)} MiB against ${n(quietRss)} MiB (${n(endRss - quietRss)} MiB, ${n((100 * (endRss - quietRss)) / quietRss, 0)} %) | ${verdict(endRss <= allowedRss)} |

- **Ready**: ${n(readyS, 1)} s, RSS ${n(readyRss)} MiB (heap used ${n(quietHeap)} MiB after the quiet run); before the load (after the quiet and closed-loop runs) ${n(baselineRss)} MiB.
- **Quiet**: a 3-claim filter (500 names, cache mode) one at a time, median of 100: ${n(quietMs, 2)} ms.
- **Sustainable**: ${n(sustainable)} filters/s at 16 connections (closed loop, the best second of five: ${perSecond.join(', ')}).
- **Floor**: the same open loop for ${Math.min(SECONDS, 10)} s against a process that answers every request 503 at once
  (\`bench/live/refusing-server.ts\`): p50 ${n(quantile(floor, 0.5), 2)} ms, p99 ${n(floorP99, 2)} ms. With a thread of that
  process computing without pause meanwhile (\`--busy-core\`), as an overloaded extender's main thread does: p50
  ${n(quantile(busyFloor, 0.5), 2)} ms, p99 ${n(busyFloorP99, 2)} ms, the best a server that also computes could do here, even
  with its refusals on a thread of their own. No server answers faster on this machine at this load.
- **Open loop** at ${n(rate)}/s (${args.rate ? `${n(rate / sustainable, 1)}×, set by --rate` : '2×'}) for ${SECONDS} s, ${n(openSent)} requests: ${n(count(200))} answered 200 (p50
  ${n(quantile(ok, 0.5), 1)} ms, p99 ${n(quantile(ok, 0.99), 1)} ms from the scheduled time), ${n(count(503))} answered 503 (p50
  ${n(quantile(refused, 0.5), 2)} ms, p99 ${n(p99Refused, 2)} ms from the send; ${n(refusedNew.length)} of them on connections opened
  for them, p99 ${n(quantile(refusedNew, 0.99), 2)} ms; ${n(openReasons.queued_work)} refused past
  maxQueuedWorkSeconds, ${n(openReasons.queued_verbs)} past maxQueuedVerbs, ${n(openReasons.deadline)} dropped past verbDeadlineSeconds); RSS peak ${n(openPeak)} MiB. The
  extender used ${n(cpuShare, 2)} of a core (it computes one verb at a time), its event-loop lag p50 ${n(lagP50, 1)} ms,
  p99 ${n(lagP99, 1)} ms; ${n(gcOpen.count)} major GCs stopped it for ${n(gcOpen.seconds * 1000)} ms in all.
- **Abandoned**: ${ABANDONED} non-cache filters of ${n(heavyMiB, 1)} MiB (${n(FULL_NODES)} full nodes) on as many connections at
  once, each closed 5 ms after it was written: ${computed} computed (\`verb_started_total\`); the clients saw
  ${Object.entries(Object.fromEntries(abandonedStatuses))
    .map(([k, v]) => `${v} × ${k}`)
    .join(', ')}; RSS peak ${n(loadPeak)} MiB.
- **After**: a fresh filter one at a time, median ${n(freshMs, 2)} ms. RSS from the end of the abandoned burst, MiB (heap used / heap total / external from \`/metrics\`, scraped every 10 s):
  ${trajectory
    .filter((x) => x.s % 5 === 0 || x.s === 1)
    .map(
      (x) =>
        `+${x.s} s ${n(x.rss)}${Number.isNaN(x.heap) ? '' : ` (${n(x.heap)} / ${n(x.heapTotal)} / ${n(x.external)})`}`,
    )
    .join(
      ', ',
    )}; baseline ${n(quietRss)} MiB (after the quiet run, before any load; heap used ${n(quietHeap)} / total ${n(quietHeapTotal)}).${trimmedRss === undefined ? '' : ` \`malloc_trim(0)\` at +${TRAJECTORY_S} s (gdb): ${n(trimmedRss)} MiB.`}
- **Refusals over the run** (\`/metrics\`): ${Object.entries(reasons)
  .map(([k, v]) => `${k} ${n(v)}`)
  .join(', ')}.

Reproduce: \`npm run bench -- overload\` (\`--nodes ${NODES} --seconds ${SECONDS} --abandoned ${ABANDONED} --full-nodes ${FULL_NODES} --budget ${args.budget}${args['chart-env'] ? '' : ' --no-chart-env'}${(args.env as string[]).map((e) => ` --env ${e}`).join('')}\`).
<!-- /overload -->
`;
if (NODES === 5000) await writeResultsSection(args.out, 'overload', md);
else log(md);
process.exit(0);
