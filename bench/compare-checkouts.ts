// Is a verb slower after a change? Two checkouts (`git worktree add DIR <commit>`, with node_modules linked in) serve
// the same local-storage cluster (bench/synthetic.ts, --nodes) from one cluster-state file, each in its own
// `src/main.ts serve`; the scenarios run one request at a time on each in turn, the order swapped every round. Per
// round and checkout: p50 latency and the server process's CPU per request (/proc/<pid>/stat), which a shared
// machine's load disturbs less than latency (in 10 ms clock ticks: keep --requests high enough that a round takes
// hundreds of them). prioritize gets what --b's filter let through. The medians over the rounds close the report.
// Run: ./node_modules/.bin/node bench/compare-checkouts.ts --a DIR --b DIR [--nodes 5000] [--rounds 4]
//        [--requests 600] [--scenarios filter-3,filter-1,filter-0,prioritize-3,preempt-3]
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
const cluster = generateCluster({ ...LOCAL_STORAGE_SHAPE, nodes: Number(args.nodes), pendingPerKind: 50, seed: 1 });
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
async function start(dir: string) {
  const child = spawn(process.execPath, ['src/main.ts', 'serve', '--cluster-state', file, '--port', '0'], {
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
for (const d of dirs) servers.push(await start(d));
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
const N = Number(args.requests);
// Per scenario, per checkout: [p50 ms, CPU ms per request] of each round.
const results: Record<string, [number, number][][]> = Object.fromEntries(scenarios.map((name) => [name, [[], []]]));
for (let r = 0; r < Number(args.rounds); r++) {
  for (const name of scenarios) {
    const s = all[name];
    const order = r % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of order) {
      const srv = servers[i];
      for (let k = 0; k < 50; k++) await call(srv.port, 'POST', s.path, s.bodies[k % 8]);
      const lat: number[] = [];
      const c0 = await cpuMs(srv.pid);
      for (let k = 0; k < N; k++) {
        const t = performance.now();
        const a = await call(srv.port, 'POST', s.path, s.bodies[k % 8]);
        lat.push(performance.now() - t);
        if (a.status !== 200) throw new Error(`${name}: ${a.status} ${a.body}`);
      }
      const cpu = ((await cpuMs(srv.pid)) - c0) / N;
      lat.sort((x, y) => x - y);
      results[name][i].push([lat[N >> 1], cpu]);
      console.log(
        `round ${r} ${name} ${i === 0 ? 'A' : 'B'}: p50 ${lat[N >> 1].toFixed(3)} ms, CPU ${cpu.toFixed(3)} ms/req, load ${loadavg()[0].toFixed(2)}`,
      );
    }
  }
}
for (const [name, [a, b]] of Object.entries(results)) {
  const med = (xs: number[]) => xs.sort((x, y) => x - y)[xs.length >> 1];
  console.log(
    `${name}, medians: A (--a) p50 ${med(a.map((x) => x[0])).toFixed(3)} cpu ${med(a.map((x) => x[1])).toFixed(3)} | B (--b) p50 ${med(b.map((x) => x[0])).toFixed(3)} cpu ${med(b.map((x) => x[1])).toFixed(3)}`,
  );
}
for (const s of servers) s.child.kill('SIGKILL');
process.exit(0);
