// Runs the benchmarks listed in BENCHMARKS below, one after another, each in its own process (its own heap and event
// loop, so one benchmark's garbage or timers cannot colour the next), with the Node flags the table gives it. Outputs
// are streamed as they come; a summary of exit codes and times ends the run. The table also names the benchmarks
// run.ts never runs (`byHand`: they need arguments, two checkouts, or a real control plane for many minutes) so that
// every file under bench/ is either listed here or a helper (`// bench-helper` on its first line: a module or process
// that benchmarks import or spawn); test/bench/layout.test.ts checks that.
//
// Run: npm run bench [-- <word>... [--option value...]]   (e.g. `npm run bench -- results --nodes 1000`)
//      ./node_modules/.bin/node bench/run.ts [word...] [--option value...]
//      ./node_modules/.bin/node bench/run.ts --list [word...]   (prints the table, runs nothing)
// The words before the first `--option` choose benchmarks (a benchmark is chosen when its name or path contains one
// of them); that option and everything after it are passed to each chosen benchmark's command line (a lone `--`
// before them is dropped: `run.ts memory -- 2000` passes `2000`), so choose only benchmarks that take them.
// Exit status: 0 when every benchmark exited 0, 1 otherwise.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface Benchmark {
  /** What the words match (with the path). */
  name: string;
  /** From the repository's root. */
  file: string;
  /** Node flags it runs with; its header's `// Run:` line shows the same. */
  flags: string[];
  measures: string;
  /** Needs more than Node and this checkout (said by --list). */
  needs?: string;
  /** Why run.ts does not run it: run it by hand, as its header says. */
  byHand?: string;
}

const CONTROL_PLANE = 'a real control plane (test/components: etcd, kube-apiserver, kube-controller-manager; Go)';

export const BENCHMARKS: Benchmark[] = [
  {
    name: 'results',
    file: 'bench/results.ts',
    flags: [],
    measures:
      'the issue-9 figures against a floor server: verbs one at a time, 16 connections, open loop; backlog; ' +
      'time to ready and RSS; filter scaling; ingest from a fake API server; heaps. Writes bench/RESULTS.md (--out)',
  },
  {
    name: 'http-verbs',
    file: 'bench/http-verbs.ts',
    flags: ['--expose-gc'],
    measures:
      'the verbs over loopback sockets (autocannon) and in process; startup and heap. bench/out/http-verbs.json',
  },
  {
    name: 'analysis',
    file: 'bench/analysis.ts',
    flags: ['--max-old-space-size=6144'],
    measures: 'explain and simulate against filter()/prioritize() on the same nodes. Writes its RESULTS.md section',
  },
  {
    name: 'pending-report',
    file: 'bench/pending-report.ts',
    flags: ['--max-old-space-size=6144'],
    measures:
      "the pending report: time and CPU to the first full report, its CPU while the cluster changes, filter's " +
      'latency without and with it. --out FILE writes its section',
  },
  {
    name: 'filter-scaling',
    file: 'bench/volumes/filter-scaling.ts',
    flags: [],
    measures: "the volume filter's cost at 20,000 vs 200,000 PVs and 500 vs 5,000 CSIStorageCapacities (goal ≤ 1.5×)",
  },
  {
    name: 'extender-heap',
    file: 'bench/live/extender-heap.ts',
    flags: [],
    measures: "the ready extender's heap after full GCs, and one full GC's time (positional: nodes)",
  },
  {
    name: 'memory',
    file: 'bench/live/memory.ts',
    flags: ['--expose-gc'],
    measures: 'heap bytes per cached pod in store + scheduler cache (target ≤ 2 KiB; positional: pods)',
  },
  {
    name: 'overload',
    file: 'bench/live/overload.ts',
    flags: [],
    measures:
      'issue 18: the extender past its capacity under a memory budget: 503 latencies against a floor, abandoned ' +
      'verbs computed, RSS. Writes its RESULTS.md section at 5,000 nodes',
  },
  {
    name: 'replicas',
    file: 'bench/live/replicas.ts',
    flags: [],
    measures: 'binds through one and two extender replicas: binds/s, bind errors, API calls per pod, failover',
    needs: CONTROL_PLANE,
  },
  {
    name: 'time-to-ready',
    file: 'bench/live/time-to-ready.ts',
    flags: ['--expose-gc'],
    measures: 'KubeSource time to ready and client heap from a fake API server (positional: nodes pods)',
  },
  {
    name: 'scheduler-throughput',
    file: 'bench/scheduler-throughput.ts',
    flags: [],
    measures: 'pods/s real kube-schedulers schedule alone, through a do-nothing extender and through ours',
    needs: CONTROL_PLANE,
    byHand: 'many minutes on real control planes; writes its RESULTS.md section',
  },
  {
    name: 'workload-scheduling',
    file: 'bench/workload-scheduling.ts',
    flags: [],
    measures: "workloads' pods (bound claims, rollouts, scarce PVs) fully delegated vs kube-scheduler alone",
    needs: CONTROL_PLANE,
    byHand: 'many minutes on real control planes; writes its RESULTS.md section',
  },
  {
    name: 'api-client',
    file: 'bench/api-client.ts',
    flags: [],
    measures: "CPU and wall per API call of the extender's client against undici floors",
    needs: CONTROL_PLANE,
    byHand: 'a focused study of the API client',
  },
  {
    name: 'compare-checkouts',
    file: 'bench/compare-checkouts.ts',
    flags: [],
    measures: "a verb's latency and server CPU in two checkouts, alternating",
    byHand: 'needs --a DIR --b DIR',
  },
  {
    name: 'ready-memory',
    file: 'bench/ready-memory.ts',
    flags: [],
    measures: 'time to ready, CPU and RSS of serve --cluster-state (JSON vs YAML, or two checkouts)',
    byHand: 'a before/after study of loading',
  },
  {
    name: 'kind-heap',
    file: 'bench/live/kind-heap.ts',
    flags: [],
    measures: 'heap bytes per trimmed object of each kind, from a cluster-state file',
    byHand: 'needs a cluster-state file (ready-memory.ts --file writes one)',
  },
  {
    name: 'profile-verbs',
    file: 'bench/profile-verbs.ts',
    flags: [],
    measures: 'one verb in process, for profiling: p50/p90/p99 and CPU per call',
    byHand: 'run under --cpu-prof or with --alloc',
  },
  {
    name: 'profile-summary',
    file: 'bench/profile-summary.ts',
    flags: [],
    measures: 'where a V8 CPU profile spent its time, as markdown',
    byHand: 'needs a .cpuprofile file',
  },
  {
    name: 'validation-cost',
    file: 'bench/validation-cost.ts',
    flags: [],
    measures: "the edge validation's cost on a 500-full-node filter body, against JSON.parse and app.inject",
    byHand: 'a one-off study of validation',
  },
  {
    name: 'fuzz-soak',
    file: 'bench/fuzz-soak.ts',
    flags: ['--expose-gc'],
    measures: 'no 5xx on many malformed bodies per verb; the heap before and after (measures no speed)',
    byHand: 'a soak after touching validation or the verbs',
  },
];

function runOne(
  root: string,
  { file, flags }: Benchmark,
  args: string[],
): Promise<{ code: number | null; signal: string | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...flags, file, ...args], { cwd: root, stdio: 'inherit' });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.once('SIGINT', forward);
    process.once('SIGTERM', forward);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      resolve({ code, signal });
    });
  });
}

function printList(chosen: (b: Benchmark) => boolean): void {
  const show = (b: Benchmark) => {
    console.log(`  ${b.name.padEnd(21)} ${[...b.flags, b.file].join(' ')}`);
    console.log(`  ${''.padEnd(21)} ${b.measures}`);
    if (b.needs) console.log(`  ${''.padEnd(21)} needs ${b.needs}`);
    if (b.byHand) console.log(`  ${''.padEnd(21)} not run by run.ts: ${b.byHand}`);
  };
  const run = BENCHMARKS.filter((b) => !b.byHand && chosen(b));
  const manual = BENCHMARKS.filter((b) => b.byHand && chosen(b));
  if (run.length) console.log('run.ts runs, in this order:');
  run.forEach(show);
  if (manual.length)
    console.log(`${run.length ? '\n' : ''}run by hand (./node_modules/.bin/node [flags] FILE; options in its header):`);
  manual.forEach(show);
}

async function main(): Promise<void> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  let argv = process.argv.slice(2);
  const list = argv.includes('--list');
  if (list) argv = argv.filter((a) => a !== '--list');
  const firstOption = argv.findIndex((a) => a.startsWith('--'));
  const words = firstOption < 0 ? argv : argv.slice(0, firstOption);
  const forwarded = firstOption < 0 ? [] : argv.slice(argv[firstOption] === '--' ? firstOption + 1 : firstOption);
  const chosen = (b: Benchmark) => words.length === 0 || words.some((w) => b.name.includes(w) || b.file.includes(w));
  if (list) {
    printList(chosen);
    return;
  }
  const picked = BENCHMARKS.filter((b) => !b.byHand && chosen(b));
  if (picked.length === 0) {
    const manual = BENCHMARKS.filter((b) => b.byHand && chosen(b));
    console.error(
      `no benchmark run.ts runs matches ${words.join(', ')}` +
        (manual.length ? `; run by hand: ${manual.map((b) => [...b.flags, b.file].join(' ')).join(', ')}` : ''),
    );
    process.exit(1);
  }

  console.log(
    `node ${process.version} (${process.execPath}); ${picked.length} benchmark(s): ${picked.map((b) => b.name).join(', ')}` +
      (forwarded.length ? `; arguments for each: ${forwarded.join(' ')}` : ''),
  );
  const results: { file: string; code: number | null; signal: string | null; seconds: number }[] = [];
  for (const b of picked) {
    console.log(`\n━━ ${[...b.flags, b.file, ...forwarded].join(' ')} ━━`);
    const started = performance.now();
    const { code, signal } = await runOne(root, b, forwarded);
    results.push({ file: b.file, code, signal, seconds: (performance.now() - started) / 1000 });
  }

  console.log('\n━━ summary ━━');
  for (const r of results) {
    const outcome = r.code === 0 ? 'ok' : r.signal ? `killed by ${r.signal}` : `exit ${r.code}`;
    console.log(`  ${outcome.padEnd(8)} ${r.seconds.toFixed(1).padStart(6)} s  ${r.file}`);
  }
  process.exit(results.every((r) => r.code === 0) ? 0 : 1);
}

if (import.meta.main) await main();
