// Is a verb slower after a change? Two checkouts (`git worktree add DIR <commit>`, with node_modules linked in) serve
// the same local-storage cluster (bench/synthetic.ts, --nodes) from one cluster-state file, each in its own
// `src/main.ts serve`; the scenarios run one request at a time on each in turn, the order swapped every round. Per
// round and checkout: p50 latency and the server process's CPU per request (/proc/<pid>/stat), which a shared
// machine's load disturbs less than latency (in 10 ms clock ticks: keep --requests high enough that a round takes
// hundreds of them). prioritize gets what --b's filter let through. The medians over the rounds close the report.
// --a-args/--b-args: more `serve` flags per side, so that one checkout is compared with itself under two settings
// (e.g. --b-args=--no-pending-report). --rate: requests sent at that many per second (open loop, still one at a time)
// instead of back to back, leaving the gaps a background worker runs in. --binds: that many claim-less pending pods per
// second bound on the side being measured (the bind verb, beside the requests timed), the churn kube-scheduler's binds
// bring; --scrape: GET /metrics every that many seconds on the side measured, from its start, as Prometheus would
// (the pending report refreshes for a reader); --verb-metrics: the server's own mean compute CPU and queue wait of the
// verb timed (its /metrics before and after each side's run), which a loaded machine's scheduling disturbs far less
// than latency (a /metrics read is a read of the pending report too); --pending-per-kind sets how many pending pods of each kind the cluster has (4 kinds). Before each side is
// measured, both servers' CPU is let settle, so that one catching up in the background does not slow the other.
// Run: ./node_modules/.bin/node bench/compare-checkouts.ts --a DIR --b DIR [--nodes 5000] [--rounds 4]
//        [--requests 600] [--scenarios filter-3,filter-1,filter-0,prioritize-3,preempt-3] [--a-args '...']
//        [--b-args '...'] [--rate 0] [--binds 0] [--scrape 0] [--verb-metrics] [--pending-per-kind 50]
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { processCpuSeconds } from './proc.ts';
import {
  candidateNames,
  generateCluster,
  LOCAL_STORAGE_SHAPE,
  lowerPriorityPodsByNode,
  metaVictims,
} from './synthetic.ts';

const { values: args } = parseArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    nodes: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '4' },
    requests: { type: 'string', default: '600' },
    scenarios: { type: 'string', default: 'filter-3,filter-1,filter-0,prioritize-3,preempt-3' },
    'a-args': { type: 'string', default: '' },
    'b-args': { type: 'string', default: '' },
    rate: { type: 'string', default: '0' },
    binds: { type: 'string', default: '0' },
    scrape: { type: 'string', default: '0' },
    'verb-metrics': { type: 'boolean', default: false },
    'pending-per-kind': { type: 'string', default: '50' },
  },
});
if (!args.a || !args.b) {
  console.error(
    'usage: compare-checkouts.ts --a DIR --b DIR [--nodes N] [--rounds N] [--requests N] [--scenarios ...]',
  );
  process.exit(2);
}
const SCENARIOS = ['filter-3', 'filter-1', 'filter-0', 'prioritize-3', 'preempt-3'];
const scenarios = args.scenarios!.split(',');
const unknown = scenarios.filter((name) => !SCENARIOS.includes(name));
if (unknown.length > 0) {
  console.error(`--scenarios: unknown ${unknown.join(', ')}; known: ${SCENARIOS.join(', ')}`);
  process.exit(2);
}
const dirs = [args.a, args.b];
const extraArgs = [args['a-args'], args['b-args']].map((a) => a!.split(' ').filter(Boolean));
const N = Number(args.requests);
const RATE = Number(args.rate);
const BINDS = Number(args.binds);
const cluster = generateCluster({
  ...LOCAL_STORAGE_SHAPE,
  nodes: Number(args.nodes),
  pendingPerKind: Number(args['pending-per-kind']),
  seed: 1,
});
// The pods --binds binds: copies of a claim-less pending pod, as many as the rounds bind on each side (with margin).
const phaseSeconds = (RATE > 0 ? N / RATE : N / 500) + 2;
const bindable = Array.from(
  { length: Math.ceil(BINDS * phaseSeconds * scenarios.length * Number(args.rounds) * 1.2) },
  (_, i) => {
    const pod = structuredClone(cluster.pending.noClaims[0]);
    Object.assign(pod.metadata, { name: `bench-bind-${i}`, uid: `bench-bind-${i}` });
    return pod;
  },
);
cluster.objects.push(...bindable);
const file = join(tmpdir(), `ab-${process.pid}.json`);
writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: cluster.objects }));
// preempt-3's victims: running pods of lower priority than the 3-claim preemptor (as bench/results.ts).
const victimsByNode = lowerPriorityPodsByNode(cluster.objects, cluster.pending.localAndCsi[0].spec.priority ?? 0);
cluster.objects.length = 0;
// undici's global dispatcher keeps one connection per server alive: one request at a time, as kube-scheduler's filter.
const call = async (port: number, method: 'GET' | 'POST', path: string, body?: string) => {
  const answer = await request(`http://127.0.0.1:${port}${path}`, {
    method,
    body,
    headers: body ? { 'content-type': 'application/json' } : {},
  });
  return { status: answer.statusCode, body: await answer.body.text() };
};
async function start(dir: string, extra: string[]) {
  const child = spawn(process.execPath, ['src/main.ts', 'serve', '--cluster-state', file, '--port', '0', ...extra], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  process.on('exit', () => child.kill('SIGKILL'));
  let port = 0;
  for await (const line of createInterface(child.stdout!)) {
    const m = /"address":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(line);
    if (m) {
      port = Number(m[1]);
      break;
    }
  }
  if (port === 0) throw new Error(`${dir}: src/main.ts serve exited before listening`);
  child.stdout!.resume();
  while ((await call(port, 'GET', '/readyz')).status !== 200) await new Promise((r) => setTimeout(r, 100));
  return { port, pid: child.pid!, child };
}
const servers: Awaited<ReturnType<typeof start>>[] = [];
for (const [i, d] of dirs.entries()) servers.push(await start(d, extraArgs[i]));
rmSync(file); // both servers have read it
const cpuMs = async (pid: number) => (await processCpuSeconds(pid)) * 1000;
const names = cluster.nodeNames;
const step = Math.floor(names.length / 8);
const bodies = (pods: unknown[]) =>
  Array.from({ length: 8 }, (_, i) =>
    JSON.stringify({ Pod: pods[i % pods.length], Nodes: null, NodeNames: candidateNames(names, 500, i * step) }),
  );
const p = cluster.pending;
const f3 = bodies(p.localAndCsi);
// prioritize gets what filter let through, as kube-scheduler sends it.
const pr3 = await Promise.all(
  f3.map(async (b) => {
    const a = await call(servers[1].port, 'POST', '/scheduler/filter', b);
    return JSON.stringify({ ...JSON.parse(b), NodeNames: JSON.parse(a.body).NodeNames });
  }),
);
const all: Record<string, { path: string; bodies: string[] }> = {
  'filter-3': { path: '/scheduler/filter', bodies: f3 },
  'filter-1': { path: '/scheduler/filter', bodies: bodies(p.localClaim) },
  'filter-0': { path: '/scheduler/filter', bodies: bodies(p.noClaims) },
  'prioritize-3': { path: '/scheduler/prioritize', bodies: pr3 },
  // 100 candidates x 3 victims in node-cache mode, as DefaultPreemption sends them.
  'preempt-3': {
    path: '/scheduler/preempt',
    bodies: Array.from({ length: 8 }, (_, i) =>
      JSON.stringify({
        Pod: p.localAndCsi[i % p.localAndCsi.length],
        NodeNameToVictims: null,
        NodeNameToMetaVictims: metaVictims(names, victimsByNode, i * step),
      }),
    ),
  },
};
// Each side binds its own pods, in the same order: the same nodes change on both.
const nextBind = [0, 0];
/** Binds BINDS pods per second on `side` until the returned function is called; it resolves to the binds that failed. */
function bindChurn(side: number): () => Promise<number> {
  if (BINDS <= 0) return async () => 0;
  const srv = servers[side];
  let failed = 0;
  const inFlight = new Set<Promise<void>>();
  const timer = setInterval(() => {
    const pod = bindable[nextBind[side]++];
    if (!pod) return;
    const body = JSON.stringify({
      PodName: pod.metadata.name,
      PodNamespace: pod.metadata.namespace,
      PodUID: pod.metadata.uid,
      Node: names[(nextBind[side] * 7919) % names.length],
    });
    const p = call(srv.port, 'POST', '/scheduler/bind', body).then(
      (a) => {
        if (a.status !== 200 || JSON.parse(a.body).Error) failed++;
      },
      () => void failed++,
    );
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  }, 1000 / BINDS);
  return async () => {
    clearInterval(timer);
    await Promise.all(inFlight);
    return failed;
  };
}
/** GETs /metrics on `side` now and every --scrape seconds until the returned function is called. */
function scraping(side: number): () => Promise<void> {
  const seconds = Number(args.scrape);
  if (seconds <= 0) return async () => {};
  let last = call(servers[side].port, 'GET', '/metrics');
  const timer = setInterval(() => {
    last = call(servers[side].port, 'GET', '/metrics');
  }, seconds * 1000);
  return async () => {
    clearInterval(timer);
    await last;
  };
}
/** The verb's compute CPU and queue wait so far on `side` (seconds summed, and how many), from its /metrics. */
async function verbSums(side: number, verb: string) {
  if (!args['verb-metrics']) return { cpu: 0, wait: 0, count: 0, report: 0 };
  const text = (await call(servers[side].port, 'GET', '/metrics')).body;
  const value = (series: string) =>
    Number(new RegExp(`^topology_extender_${series}\\{verb="${verb}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return {
    cpu: value('verb_compute_cpu_seconds_sum'),
    wait: value('verb_queue_wait_seconds_sum'),
    count: value('verb_compute_cpu_seconds_count'),
    // The pending report's slices so far (seconds): their rate is its share of a core.
    report: Number(/^topology_extender_pending_report_work_seconds_total (\S+)$/m.exec(text)?.[1] ?? 0),
  };
}
/** Waits until neither server takes more than 5 % of a core over 300 ms (at most 30 s): a side catching up is done. */
async function settle(): Promise<void> {
  const until = performance.now() + 30_000;
  while (performance.now() < until) {
    const c0 = await Promise.all(servers.map((s) => cpuMs(s.pid)));
    await new Promise((r) => setTimeout(r, 300));
    const c1 = await Promise.all(servers.map((s) => cpuMs(s.pid)));
    if (c1.every((c, i) => c - c0[i] < 15)) return;
  }
}
const sleepUntil = (t: number) => new Promise((r) => setTimeout(r, Math.max(0, t - performance.now())));
let failedBinds = 0;
// Per scenario, per checkout: [p50 ms, CPU ms per request, share of a core] of each round.
const results: Record<string, [number, number, number][][]> = Object.fromEntries(
  scenarios.map((name) => [name, [[], []]]),
);
for (let r = 0; r < Number(args.rounds); r++) {
  for (const name of scenarios) {
    const s = all[name];
    const order = r % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of order) {
      const srv = servers[i];
      await settle();
      for (let k = 0; k < 50; k++) await call(srv.port, 'POST', s.path, s.bodies[k % 8]);
      const verb = s.path.slice(s.path.lastIndexOf('/') + 1);
      const v0 = await verbSums(i, verb);
      const stopBinds = bindChurn(i);
      const stopScraping = scraping(i);
      const lat: number[] = [];
      const c0 = await cpuMs(srv.pid);
      const t0 = performance.now();
      for (let k = 0; k < N; k++) {
        if (RATE > 0) await sleepUntil(t0 + (k * 1000) / RATE);
        const t = performance.now();
        const a = await call(srv.port, 'POST', s.path, s.bodies[k % 8]);
        lat.push(performance.now() - t);
        if (a.status !== 200) throw new Error(`${name}: ${a.status} ${a.body}`);
      }
      const share = ((await cpuMs(srv.pid)) - c0) / (performance.now() - t0);
      const cpu = (share * (performance.now() - t0)) / N;
      failedBinds += await stopBinds();
      await stopScraping();
      const v1 = await verbSums(i, verb);
      // Server side, per verb: mean main-thread CPU of its compute and mean wait in the verb queue (ms).
      const verbCpu = ((v1.cpu - v0.cpu) * 1000) / (v1.count - v0.count);
      const verbWait = ((v1.wait - v0.wait) * 1000) / (v1.count - v0.count);
      const reportShare = (v1.report - v0.report) / ((performance.now() - t0) / 1000);
      lat.sort((x, y) => x - y);
      results[name][i].push([lat[N >> 1], cpu, share]);
      console.log(
        `round ${r} ${name} ${i === 0 ? 'A' : 'B'}: binds ${nextBind[i]}, p50 ${lat[N >> 1].toFixed(3)} ms, p90 ${lat[Math.floor(N * 0.9)].toFixed(3)} ms, CPU ${cpu.toFixed(3)} ms/req, ${(share * 100).toFixed(1)} % of a core, load ${loadavg()[0].toFixed(2)}${args['verb-metrics'] ? `, server: compute CPU ${verbCpu.toFixed(3)} ms, queue wait ${verbWait.toFixed(3)} ms, pending report ${(reportShare * 100).toFixed(1)} % of a core` : ''}`,
      );
    }
  }
}
for (const [name, [a, b]] of Object.entries(results)) {
  const med = (xs: number[]) => xs.sort((x, y) => x - y)[xs.length >> 1];
  // Within each round (the two sides measured back to back): A's p50 minus B's, then its median and range.
  const diff = a.map((x, r) => x[0] - b[r][0]).sort((x, y) => x - y);
  console.log(
    `${name}, medians: A (--a) p50 ${med(a.map((x) => x[0])).toFixed(3)} cpu ${med(a.map((x) => x[1])).toFixed(3)} share ${med(a.map((x) => x[2])).toFixed(3)} | B (--b) p50 ${med(b.map((x) => x[0])).toFixed(3)} cpu ${med(b.map((x) => x[1])).toFixed(3)} share ${med(b.map((x) => x[2])).toFixed(3)} | A − B p50 per round: median ${med(diff).toFixed(3)} (${diff[0].toFixed(3)} to ${diff.at(-1)!.toFixed(3)})`,
  );
}
if (BINDS > 0) console.log(`binds: A ${nextBind[0]}, B ${nextBind[1]}, failed ${failedBinds}`);
for (const s of servers) s.child.kill('SIGKILL');
process.exit(0);
