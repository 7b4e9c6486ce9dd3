// Time to ready, CPU time to ready and RSS at ready of `src/main.ts serve --cluster-state` on the local-storage
// shape (bench/synthetic.ts LOCAL_STORAGE_SHAPE, seed 1: 5,000 nodes, 150,525 running pods, 52,581 PVs, 5,003
// CSIStorageCapacity, a 165 MiB JSON List), alone: no traffic, so a change to loading can be measured in a minute
// instead of a whole bench/results.ts run. --root runs another checkout's src/main.ts (e.g. `git worktree add` of the
// commit before) on the same file, alternating runs with this one, so both see the same machine load.
// --format yaml loads the same cluster written as `kubectl get -o yaml` prints it (bench/kubectl-yaml.ts, 185 MiB);
// --format both alternates JSON and YAML runs and prints YAML's time and RSS against JSON's (issue 19: at most 2×
// the time, at most 1 GiB); with --out it writes those figures into that file's yaml-dump section (bench/RESULTS.md).
// Not run by run.ts.
//
// --live serves the same cluster from the fake API server (bench/live/fake-server-process.ts --local-storage) through
// `serve --kubeconfig`: the API path's list, watch and trimming instead of the file's.
// --file PATH keeps the JSON file there and reuses it when it exists (15,000 nodes take minutes to generate).
// Run: ./node_modules/.bin/node bench/ready-memory.ts [--runs 2] [--nodes 5000] [--format json|yaml|both]
//      [--root ../other-checkout] [--file /tmp/cluster-15000.json] [--live] [--out bench/RESULTS.md]
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { kubectlYamlList } from './kubectl-yaml.ts';
import { startFakeApiServer } from './live/time-to-ready.ts';
import { processCpuSeconds } from './proc.ts';
import { writeResultsSection } from './results-section.ts';
import { generateCluster, LOCAL_STORAGE_SHAPE } from './synthetic.ts';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '2' },
    nodes: { type: 'string', default: '5000' },
    root: { type: 'string' },
    format: { type: 'string', default: 'json' },
    file: { type: 'string' },
    live: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
const formats = args.format === 'both' ? ['json', 'yaml'] : [args.format];
if (!formats.every((f) => f === 'json' || f === 'yaml')) throw new Error('--format is json, yaml or both');
const here = fileURLToPath(new URL('..', import.meta.url));
const roots = args.root ? [here, args.root] : [here];

const live = args.live ? await startFakeApiServer(['--local-storage', args.nodes]) : undefined;
if (live) console.log(`fake API server: ${live.nodes} nodes, ${live.pods} pods, loaded in ${live.loadMs} ms`);
const dir = await mkdtemp(join(tmpdir(), 'topology-extender-ready-'));
const files: Record<string, string> = {};
const sizes: Record<string, number> = {};
let counts = '';
const reused = args.file && args.format === 'json' ? await stat(args.file).catch(() => undefined) : undefined;
if (live) {
  counts = `${live.nodes.toLocaleString('en')} nodes, ${live.pods.toLocaleString('en')} pods from the fake API server`;
} else if (reused && args.file) {
  files.json = args.file;
  sizes.json = Math.round(reused.size / 2 ** 20);
  counts = '(reused file)';
  console.log(`cluster-state file json: ${args.file}, ${sizes.json} MiB (reused)`);
} else {
  const cluster = generateCluster({ ...LOCAL_STORAGE_SHAPE, nodes: Number(args.nodes), pendingPerKind: 400, seed: 1 });
  console.log(`cluster: ${JSON.stringify(cluster.counts)}`);
  counts = Object.entries(cluster.counts)
    .map(([kind, n]) => `${n.toLocaleString('en')} ${kind}`)
    .join(', ');
  for (const format of formats) {
    const text =
      format === 'json'
        ? JSON.stringify({ apiVersion: 'v1', kind: 'List', items: cluster.objects })
        : kubectlYamlList(cluster.objects);
    files[format] = format === 'json' && args.file ? args.file : join(dir, `cluster.${format}`);
    await writeFile(files[format], text);
    sizes[format] = Math.round(Buffer.byteLength(text) / 2 ** 20);
    console.log(`cluster-state file ${format}: ${Math.round(Buffer.byteLength(text) / 2 ** 20)} MiB`);
  }
}

/**
 * VmRSS, VmHWM (the peak RSS so far: a memory limit must hold the load's widest moment, not only ready's) and the CPU
 * seconds (user + system) the process has used, from /proc.
 */
async function processFigures(pid: number): Promise<{ rssMiB: number; peakMiB: number; cpuSeconds: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const mib = (field: string) => Math.round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024);
  return { rssMiB: mib('VmRSS'), peakMiB: mib('VmHWM'), cpuSeconds: await processCpuSeconds(pid) };
}

const status = (port: number, path: string) =>
  new Promise<number>((resolve) => {
    const req = request({ host: '127.0.0.1', port, path }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.end();
  });

/** `--cluster-state FILE`, or with --live `--kubeconfig` of the fake API server. */
async function measure(root: string, source: string[]) {
  const t0 = performance.now();
  const argv = ['src/main.ts', 'serve', ...source, '--port', '0', '--log-level', 'info'];
  const child = spawn(process.execPath, argv, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  process.on('exit', () => child.kill('SIGKILL'));
  let compactMs: number | undefined;
  // From a file the load comes before listening; from an API server after: read the log to the end.
  const port = new Promise<number | undefined>((resolve) => {
    const lines = createInterface(child.stdout!);
    lines.on('line', (line) => {
      compactMs ??= Number(/"compacted":\{"ms":(\d+)/.exec(line)?.[1] ?? Number.NaN) || undefined;
      const port = Number(/"address":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(line)?.[1]);
      if (port) resolve(port);
    });
    lines.on('close', () => resolve(undefined));
  });
  const listening = await port;
  if (!listening) throw new Error(`${root}: the extender exited before listening`);
  while ((await status(listening, '/readyz')) !== 200) await new Promise((r) => setTimeout(r, 50));
  const readyMs = Math.round(performance.now() - t0);
  const { rssMiB, peakMiB, cpuSeconds } = await processFigures(child.pid!);
  child.kill('SIGTERM');
  await once(child, 'exit');
  return { readyMs, cpuSeconds, rssMiB, peakMiB, compactMs };
}

type Run = { readyMs: number; cpuSeconds: number; rssMiB: number; load: number };
const results: Record<string, Run[]> = {};
const startedAt = new Date().toISOString().slice(0, 16).replace('T', ' ');
for (let run = 1; run <= Number(args.runs); run++) {
  for (const root of roots) {
    for (const format of formats) {
      const source = live ? ['--kubeconfig', live.kubeconfig] : ['--cluster-state', files[format]];
      const { readyMs, cpuSeconds, rssMiB, peakMiB, compactMs } = await measure(root, source);
      const load = loadavg()[0];
      results[format] = [...(results[format] ?? []), { readyMs, cpuSeconds, rssMiB, load }];
      console.log(
        `run ${run} ${root} ${live ? 'live' : format}: ready ${(readyMs / 1000).toFixed(1)} s, CPU ${cpuSeconds.toFixed(1)} s, ` +
          `RSS at ready ${rssMiB} MiB (peak ${peakMiB} MiB)${compactMs === undefined ? '' : `, compacting GC ${compactMs} ms`} ` +
          `(load ${load.toFixed(1)})`,
      );
    }
  }
}
if (results.json && results.yaml) {
  const median = (xs: number[]) => {
    const s = xs.sort((a, b) => a - b);
    return (s[Math.floor((s.length - 1) / 2)] + s[Math.ceil((s.length - 1) / 2)]) / 2;
  };
  const ready = (f: string) => median(results[f].map((r) => r.readyMs));
  const rss = Math.max(...results.yaml.map((r) => r.rssMiB));
  const ratio = ready('yaml') / ready('json');
  const cpu = (f: string) => median(results[f].map((r) => r.cpuSeconds));
  const verdict =
    `YAML against JSON: ready ${ratio.toFixed(2)}× (bound 2×: ${ratio <= 2 ? 'met' : 'MISSED'}), ` +
    `CPU to ready ${(cpu('yaml') / cpu('json')).toFixed(2)}×, ` +
    `YAML RSS at ready up to ${rss} MiB (bound 1 GiB: ${rss <= 1024 ? 'met' : 'MISSED'})`;
  console.log(verdict);
  const row = (format: string, r: Run, i: number) =>
    `| ${i + 1} | ${format === 'json' ? 'JSON' : 'YAML'} | ${(r.readyMs / 1000).toFixed(1)} s | ${r.cpuSeconds.toFixed(1)} s | ${r.rssMiB} MiB | ${r.load.toFixed(1)} |`;
  const rows = results.json.flatMap((r, i) => [row('json', r, i), row('yaml', results.yaml[i], i)]);
  const md = `<!-- yaml-dump: written by bench/ready-memory.ts -->
## Cluster-state YAML against JSON (\`bench/ready-memory.ts --format both\`, issue 19)

\`serve --cluster-state\` from process start to \`/readyz\` 200 on the same ${Number(args.nodes).toLocaleString('en')}-node cluster (${counts}) written as a JSON List (${sizes.json} MiB) and as \`kubectl get -o yaml\` prints it (${sizes.yaml} MiB), runs alternating, ${startedAt} UTC, load average (1 min) after each run:

| run | format | ready | CPU to ready | RSS at ready | load |
|---:|---|---:|---:|---:|---:|
${rows.join('\n')}

${verdict} (medians).
<!-- /yaml-dump -->
`;
  if (args.out) await writeResultsSection(args.out, 'yaml-dump', md);
}

await live?.stop();
await rm(dir, { recursive: true, force: true });
