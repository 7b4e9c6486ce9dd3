// The pods workloads make, at scale, fully delegated (the chart's default) against kube-scheduler alone, on one real
// control plane of the local-storage shape (bench/synthetic.ts: 30 pods and ten local PVs per node, one
// CSIStorageCapacity per node), each kube-scheduler minor, both configurations alternating (issue 43):
//   bound     pods whose claim is already bound to a local PV on a random node: StatefulSet pods after an eviction
//   rollout   a StatefulSet's rolling update: each pod deleted and recreated in order, the next once the last is bound
//   scarce-k  pods of a WaitForFirstConsumer class whose free PVs are on k nodes only (one PV per pod, spread evenly)
// Times run from the pods' creation to the last Binding a watch sees. kube-scheduler samples percentageOfNodesToScore
// nodes (adaptive: 10 % at 5,000) and asks the extender about those only: what these pods meet. Claim-less and
// fresh-claim throughput are bench/scheduler-throughput.ts's. Writes its section of bench/RESULTS.md.
//
// Run: ./node_modules/.bin/node bench/workload-scheduling.ts [--nodes 5000] [--rounds 2] [--bound 60]
//        [--replicas 100] [--scarce 1,5,50] [--scarce-pods 20] [--versions v1.37.2,...] [--out bench/RESULTS.md]
import { execSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { KubeApi, KubeObject } from '../test/components/kube-api.ts';
import { startExtender } from '../test/e2e/extender-process.ts';
import { type KubeSchedulerProcess, kubeSchedulers, startKubeScheduler } from '../test/e2e/kube-scheduler.ts';
import { writeResultsSection } from './results-section.ts';
import { startBenchCluster } from './scheduler/control-plane-cluster.ts';

const { values: args } = parseArgs({
  options: {
    nodes: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '2' },
    bound: { type: 'string', default: '60' },
    replicas: { type: 'string', default: '100' },
    scarce: { type: 'string', default: '1,5,50' },
    'scarce-pods': { type: 'string', default: '20' },
    versions: { type: 'string' },
    out: { type: 'string', default: fileURLToPath(new URL('./RESULTS.md', import.meta.url)) },
    section: { type: 'string', default: 'workload-scheduling' },
    /** Which scenarios run: bound, rollout, scarce (all by default). */
    scenarios: { type: 'string', default: 'bound,rollout,scarce' },
    /** How long a scenario may wait for its pods (kube-scheduler retries an unschedulable pod within 5 minutes). */
    'timeout-seconds': { type: 'string', default: '600' },
  },
});
const NODES = Number(args.nodes);
const ROUNDS = Number(args.rounds);
const SCENARIOS = new Set(args.scenarios.split(','));
const SCARCE = SCENARIOS.has('scarce') ? args.scarce.split(',').map(Number) : [];
const NAMESPACE = 'bench';
const TIMEOUT_MS = Number(args['timeout-seconds']) * 1000;
const log = (msg: string) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${msg}`);

const found = await kubeSchedulers();
if (found.skip) {
  console.error(`workload-scheduling: ${found.skip}`);
  process.exit(1);
}
const binaries = found.binaries.filter((b) => !args.versions || args.versions.split(',').includes(b.version));

type Config = 'alone' | 'delegated';
interface Run {
  version: string;
  config: Config;
  scenario: string;
  count: number;
  bound: number;
  seconds: number;
  /** Pods bound to a node their PV does not allow (must be 0). */
  misplaced: number;
  /** Our nominations during the run (delegated). */
  nominated: number;
  /**
   * Rollout: each recreated pod's seconds from its creation to its Binding, the part the scheduler configuration
   * decides (the deletions between are the API server's, alike for both).
   */
  podSeconds?: number[];
  /** Delegated rollout: where a pod's time went, from the extender's log (traceRollout). */
  trace?: string;
}

type Stored = KubeObject & { metadata: { uid?: string }; spec?: Record<string, unknown>; status?: { phase?: string } };

let serial = 0;
/** Seeded: the same nodes on every run. */
let seed = 43;
function randomNodes(nodes: readonly string[], count: number): string[] {
  const chosen = new Set<string>();
  while (chosen.size < count) {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    chosen.add(nodes[seed % nodes.length]);
  }
  return [...chosen];
}

function volume(name: string, node: string, className: string, claim?: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: {
      capacity: { storage: '10Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: className,
      local: { path: `/mnt/${name}` },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] },
          ],
        },
      },
      ...(claim
        ? { claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: NAMESPACE, name: claim } }
        : {}),
    },
  };
}

function claimOf(name: string, className: string, volumeName?: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: NAMESPACE },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '10Gi' } },
      storageClassName: className,
      ...(volumeName ? { volumeName } : {}),
    },
  };
}

function podOf(name: string, schedulerName: string, claim: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NAMESPACE, labels: { app: 'workload' } },
    spec: {
      schedulerName,
      // No requests: the shape's nodes are nearly full, and a PV's node is the pod's only one.
      containers: [{ name: 'main', image: 'app:1' }],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
    },
  };
}

/** Resolves with each pod's node once `names` are all bound (or at the timeout); `act` runs once the watch is on. */
async function bindings(api: KubeApi, names: readonly string[], act: () => Promise<unknown>) {
  const waiting = new Set(names);
  const nodeOf = new Map<string, string>();
  let last = 0;
  const { promise, resolve } = Promise.withResolvers<void>();
  const timer = setTimeout(resolve, TIMEOUT_MS);
  const stop = await api.watch<Stored>(
    'Pod',
    (type, pod) => {
      const node = pod.spec?.nodeName as string | undefined;
      if (type === 'DELETED' || pod.metadata.namespace !== NAMESPACE || !node || !waiting.delete(pod.metadata.name))
        return;
      nodeOf.set(pod.metadata.name, node);
      last = performance.now();
      if (waiting.size === 0) resolve();
    },
    NAMESPACE,
  );
  const start = performance.now();
  await act();
  await promise;
  clearTimeout(timer);
  stop();
  return { nodeOf, seconds: ((waiting.size === 0 ? last : performance.now()) - start) / 1000 };
}

/** Resolves once every named claim is Bound (the PV controller's part), so the next run starts quiet. */
async function claimsBound(api: KubeApi, names: readonly string[]): Promise<void> {
  const unbound = new Set(names);
  const { promise, resolve } = Promise.withResolvers<void>();
  const timer = setTimeout(resolve, TIMEOUT_MS);
  const stop = await api.watch<Stored>(
    'PersistentVolumeClaim',
    (_type, c) => {
      if (c.metadata.namespace === NAMESPACE && c.status?.phase === 'Bound' && unbound.delete(c.metadata.name))
        if (unbound.size === 0) resolve();
    },
    NAMESPACE,
  );
  for (const c of await api.list<Stored>('PersistentVolumeClaim', NAMESPACE))
    if (c.status?.phase === 'Bound') unbound.delete(c.metadata.name);
  if (unbound.size === 0) resolve();
  await promise;
  clearTimeout(timer);
  stop();
}

/** Claims bound to local PVs on `nodes`, one each: created, then waited for until the PV controller has bound them. */
async function boundClaims(api: KubeApi, tag: string, nodes: readonly string[]): Promise<string[]> {
  const claims = nodes.map((_, i) => `${tag}-c${i}`);
  for (const [i, node] of nodes.entries()) {
    await api.create(volume(`${tag}-v${i}`, node, 'bench-bound', claims[i]));
    await api.create(claimOf(claims[i], 'bench-bound', `${tag}-v${i}`));
  }
  await claimsBound(api, claims);
  return claims;
}

async function main() {
  const started = new Date();
  const loadBefore = execSync('uptime').toString().trim();
  const dir = await mkdtemp(join(tmpdir(), 'workload-scheduling-'));
  log(`${NODES} nodes: loading the real control plane`);
  const cluster = await startBenchCluster(NODES);
  const api = cluster.plane.admin;
  log(`${NODES} nodes: loaded in ${cluster.loadSeconds.toFixed(0)} s`);
  // Nodes any pod may use (the shape also has cordoned, tainted and NotReady ones): a PV's node is the pod's only one.
  type NodeObject = KubeObject & {
    spec?: { unschedulable?: boolean; taints?: { effect: string }[] };
    status?: { conditions?: { type: string; status: string }[] };
  };
  const nodes = (await api.list<NodeObject>('Node'))
    .filter(
      (n) =>
        !n.spec?.unschedulable &&
        !(n.spec?.taints ?? []).some((t) => t.effect !== 'PreferNoSchedule') &&
        n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    )
    .map((n) => n.metadata.name);
  log(`${nodes.length} of ${NODES} nodes untainted, schedulable and Ready: the PVs go there`);
  for (const name of ['bench-bound', ...SCARCE.map((k) => `bench-scarce-${k}`)]) {
    await api.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name },
      provisioner: 'kubernetes.io/no-provisioner',
      volumeBindingMode: 'WaitForFirstConsumer',
    } as KubeObject);
  }
  const nameOf = (version: string, config: Config) => `${config}-${version.replaceAll('.', '-')}`;
  const extender = await startExtender(cluster.extenderKubeconfig, [
    '--bind-timeout-seconds',
    '600',
    '--delegated-volume-binding',
    // The names of the pods it serves, as the chart passes its kube-scheduler's.
    `--scheduler-names=${binaries.map((b) => nameOf(b.version, 'delegated')).join(',')}`,
  ]);
  const schedulers: KubeSchedulerProcess[] = [];
  for (const b of binaries) {
    for (const config of ['alone', 'delegated'] as const) {
      schedulers.push(
        await startKubeScheduler(
          b,
          dir,
          {
            kubeconfig: cluster.schedulerKubeconfig,
            schedulerName: nameOf(b.version, config),
            extender:
              config === 'delegated'
                ? { url: extender.url, mode: 'delegated', nodeCacheCapable: true, httpTimeoutSeconds: 610 }
                : undefined,
            // kube-scheduler's defaults (the tests' are shorter): what a cluster runs.
            podInitialBackoffSeconds: 1,
            podMaxBackoffSeconds: 10,
          },
          ['-v=1'],
        ),
      );
      const warm = await cluster.phase(nameOf(b.version, config), 0, 1, 900_000);
      if (warm.bound !== 1) throw new Error(`${nameOf(b.version, config)} did not schedule a warm-up pod`);
      log(`${nameOf(b.version, config)} synced`);
    }
  }
  const nominations = async () => {
    const text = await (await fetch(`${extender.url}/metrics`)).text();
    return Number(/topology_extender_nominations_total\{result="nominated"\} (\d+)/.exec(text)?.[1] ?? 0);
  };
  /**
   * Where a delegated rollout pod's time goes, from the extender's log: creation → our nomination (early: the watch's
   * new pod; late: after a filter that passed none of kube-scheduler's sample), → the bind's start, the bind itself.
   */
  const traceRollout = (createdAt: Map<string, number>, podSeconds: number[]) => {
    type Trace = {
      early?: number;
      late?: number;
      bindStart?: number;
      bindMs?: number;
      volumesMs?: number;
      searchMs?: number;
      writeMs?: number;
    };
    const by = new Map<string, Trace>();
    for (const line of extender.logs) {
      const pod = String(line.pod ?? '').replace(`${NAMESPACE}/`, '');
      const t0 = createdAt.get(pod);
      if (t0 === undefined || Number(line.time) < t0) continue;
      const e = by.get(pod) ?? {};
      by.set(pod, e);
      if (line.msg.includes('before kube-scheduler')) {
        e.early ??= Number(line.time) - t0;
        e.searchMs = Number(line.searchMs);
        e.writeMs = Number(line.writeMs);
      } else if (line.msg.startsWith('nominated node')) e.late ??= Number(line.time) - t0;
      else if (line.msg === 'pod bound') {
        e.bindMs = Number(line.ms);
        e.volumesMs = Number(line.volumesMs);
        e.bindStart = Number(line.time) - Number(line.ms) - t0;
      }
    }
    const p50 = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] : NaN);
    const all = [...by.values()];
    const pick = (f: (e: Trace) => number | undefined) => all.map(f).filter((x): x is number => x !== undefined);
    const ms = (f: (e: Trace) => number | undefined) => p50(pick(f));
    const summary =
      `nominated at creation ${pick((e) => e.early).length} (+${ms((e) => e.early)} ms: search ${ms((e) => e.searchMs)}, ` +
      `write ${ms((e) => e.writeMs)}), again after a refused sample ${pick((e) => e.late).length}; bind starts ` +
      `+${ms((e) => e.bindStart)} ms, takes ${ms((e) => e.bindMs)} (volumes ${ms((e) => e.volumesMs)}); Binding seen ` +
      `+${p50(podSeconds.map((x) => Math.round(x * 1000)))} ms`;
    log(`delegated rollout, per pod (p50): ${summary}`);
    for (const [pod, e] of by)
      if (e.late !== undefined || (e.bindStart ?? 0) > 1000)
        log(
          `  ${pod}: early ${e.early ?? '-'} late ${e.late ?? '-'} bind start ${e.bindStart ?? '-'} bind ${e.bindMs ?? '-'} ms`,
        );
    return summary;
  };
  const volumeNodes = async () =>
    new Map(
      (await api.list<Stored>('PersistentVolume'))
        .filter((v) => String(v.spec?.storageClassName).startsWith('bench-'))
        .map((v) => {
          type Affinity = { required: { nodeSelectorTerms: { matchExpressions: { values: string[] }[] }[] } };
          const terms = (v.spec!.nodeAffinity as Affinity).required.nodeSelectorTerms;
          return [v.metadata.name, terms[0].matchExpressions[0].values[0]];
        }),
    );
  /** Pods whose claim's PV is on another node than the pod. */
  const misplacedOf = async (pods: Map<string, string>, claimOfPod: (pod: string) => string) => {
    const claims = new Map(
      (await api.list<Stored>('PersistentVolumeClaim', NAMESPACE)).map((c) => [
        c.metadata.name,
        c.spec?.volumeName as string,
      ]),
    );
    const where = await volumeNodes();
    return [...pods].filter(([pod, node]) => where.get(claims.get(claimOfPod(pod)) ?? '') !== node).length;
  };

  const runs: Run[] = [];
  const record = async (r: Omit<Run, 'nominated'>, before: number) => {
    const run = { ...r, nominated: r.config === 'delegated' ? (await nominations()) - before : 0 };
    runs.push(run);
    log(
      `${run.version} ${run.config} ${run.scenario}: ${run.bound}/${run.count} bound in ${run.seconds.toFixed(2)} s` +
        (run.misplaced ? ` MISPLACED ${run.misplaced}` : '') +
        (run.config === 'delegated' ? `, ${run.nominated} nominated` : ''),
    );
  };

  for (let round = 0; round < ROUNDS; round++) {
    for (const b of binaries) {
      const configs: Config[] = round % 2 === 0 ? ['alone', 'delegated'] : ['delegated', 'alone'];
      for (const config of configs) {
        const scheduler = nameOf(b.version, config);
        // bound: every pod's claim bound already, the pods created at once.
        if (SCENARIOS.has('bound')) {
          const tag = `b${++serial}`;
          const claims = await boundClaims(api, tag, randomNodes(nodes, Number(args.bound)));
          const pods = claims.map((_, i) => `${tag}-p${i}`);
          const before = await nominations();
          const { nodeOf, seconds } = await bindings(api, pods, () =>
            Promise.all(pods.map((p, i) => api.create(podOf(p, scheduler, claims[i])))),
          );
          const misplaced = await misplacedOf(nodeOf, (p) => p.replace(/-p(\d+)$/, '-c$1'));
          await record(
            {
              version: b.version,
              config,
              scenario: 'bound',
              count: pods.length,
              bound: nodeOf.size,
              seconds,
              misplaced,
            },
            before,
          );
        }
        // rollout: a StatefulSet's pods, running on their claims' nodes, deleted and recreated in order (the last
        // ordinal first), each once the one before is bound again.
        if (SCENARIOS.has('rollout')) {
          const tag = `r${++serial}`;
          const claims = await boundClaims(api, tag, randomNodes(nodes, Number(args.replicas)));
          const pods = claims.map((_, i) => `${tag}-p${i}`);
          await bindings(api, pods, () => Promise.all(pods.map((p, i) => api.create(podOf(p, scheduler, claims[i])))));
          const before = await nominations();
          const t0 = performance.now();
          const placed = new Map<string, string>();
          const podSeconds: number[] = [];
          const createdAt = new Map<string, number>();
          for (let i = pods.length - 1; i >= 0; i--) {
            const pod = podOf(pods[i], scheduler, claims[i]);
            await api.delete(pod, 0);
            await waitGone(api, pods[i]);
            const created = Date.now();
            const { nodeOf, seconds: scheduled } = await bindings(api, [pods[i]], () => api.create(pod));
            for (const [k, v] of nodeOf) placed.set(k, v);
            if (nodeOf.size === 0) break;
            podSeconds.push(scheduled);
            createdAt.set(pods[i], created);
          }
          const trace = config === 'delegated' ? traceRollout(createdAt, podSeconds) : undefined;
          const seconds = (performance.now() - t0) / 1000;
          const misplaced = await misplacedOf(placed, (p) => p.replace(/-p(\d+)$/, '-c$1'));
          await record(
            {
              version: b.version,
              config,
              scenario: 'rollout',
              count: pods.length,
              bound: placed.size,
              seconds,
              misplaced,
              podSeconds,
              trace,
            },
            before,
          );
        }
        // scarce-k: one free PV per pod, on k nodes only.
        for (const k of SCARCE) {
          const tag = `s${++serial}`;
          const count = Number(args['scarce-pods']);
          const className = `bench-scarce-${k}`;
          const hosts = randomNodes(nodes, k);
          for (let i = 0; i < count; i++) await api.create(volume(`${tag}-v${i}`, hosts[i % k], className));
          const claims = Array.from({ length: count }, (_, i) => `${tag}-c${i}`);
          for (const c of claims) await api.create(claimOf(c, className));
          const pods = claims.map((_, i) => `${tag}-p${i}`);
          const before = await nominations();
          const { nodeOf, seconds } = await bindings(api, pods, () =>
            Promise.all(pods.map((p, i) => api.create(podOf(p, scheduler, claims[i])))),
          );
          await claimsBound(
            api,
            claims.filter((_, i) => nodeOf.has(pods[i])),
          );
          const misplaced = await misplacedOf(nodeOf, (p) => p.replace(/-p(\d+)$/, '-c$1'));
          await record(
            { version: b.version, config, scenario: `scarce-${k}`, count, bound: nodeOf.size, seconds, misplaced },
            before,
          );
        }
      }
    }
  }
  for (const ks of schedulers) await ks.stop();
  await extender.stop();
  await cluster.stop();
  await rm(dir, { recursive: true, force: true });
  const loadAfter = execSync('uptime').toString().trim();
  await report(runs, { started, loadBefore, loadAfter, pods: cluster.pods });
}

/** Resolves once the pod is gone from the API server (a forced deletion: no kubelet to confirm it here). */
async function waitGone(api: KubeApi, name: string): Promise<void> {
  const { promise, resolve } = Promise.withResolvers<void>();
  const stop = await api.watch<Stored>(
    'Pod',
    (type, pod) => {
      if (type === 'DELETED' && pod.metadata.name === name) resolve();
    },
    NAMESPACE,
  );
  if (!(await api.get('Pod', name, NAMESPACE))) resolve();
  await promise;
  stop();
}

async function report(
  runs: Run[],
  o: { started: Date; loadBefore: string; loadAfter: string; pods: number },
): Promise<void> {
  const scenarios = [...new Set(runs.map((r) => r.scenario))];
  const versions = [...new Set(runs.map((r) => r.version))];
  const of = (v: string, s: string, c: Config) =>
    runs.filter((r) => r.version === v && r.scenario === s && r.config === c);
  const secs = (rs: Run[]) => rs.map((r) => r.seconds.toFixed(2)).join(' / ');
  const boundOf = (rs: Run[]) => `${rs.reduce((s, r) => s + r.bound, 0)}/${rs.reduce((s, r) => s + r.count, 0)}`;
  const mean = (rs: Run[]) => rs.reduce((s, r) => s + r.seconds, 0) / Math.max(1, rs.length);
  let md = `<!-- ${args.section}: written by bench/workload-scheduling.ts -->
## The pods workloads make, at ${NODES.toLocaleString('en')} nodes: fully delegated against kube-scheduler ${versions.join(', ')} alone (issue 43)

Written by \`./node_modules/.bin/node bench/workload-scheduling.ts --nodes ${NODES} --rounds ${ROUNDS} --bound ${args.bound} --replicas ${args.replicas} --scarce ${args.scarce} --scarce-pods ${args['scarce-pods']}${SCENARIOS.size < 3 ? ` --scenarios ${args.scenarios}` : ''}${args.versions ? ` --versions ${args.versions}` : ''}${args.section === 'workload-scheduling' ? '' : ` --section ${args.section}`}\` on ${o.started.toISOString().slice(0, 16).replace('T', ' ')} UTC.

- **Cluster**: the local-storage shape (${o.pods.toLocaleString('en')} running pods, ten local PVs per node, one CSIStorageCapacity per node) on a real control plane; per kube-scheduler minor one alone (its VolumeBinding on) and one fully delegated to the extender (the chart's registration; percentageOfNodesToScore unset: adaptive), backoff at kube-scheduler's defaults (1 s, 10 s).
- **Scenarios**: ${[
    SCENARIOS.has('bound') &&
      `*bound*: ${args.bound} pods created at once, each claim already bound to a local PV on its own random node`,
    SCENARIOS.has('rollout') &&
      `*rollout*: a ${args.replicas}-replica StatefulSet's pods deleted and recreated one by one, last ordinal first, each once the one before is bound (claims bound, as a rolling update finds them)`,
    SCENARIOS.has('scarce') &&
      `*scarce-k*: ${args['scarce-pods']} pods at once of a WaitForFirstConsumer class whose ${args['scarce-pods']} free PVs sit on k random nodes only`,
  ]
    .filter(Boolean)
    .join('; ')}. Seconds from creation to the last Binding; rounds alternate which configuration goes first.
- **Load**: before \`${o.loadBefore}\`, after \`${o.loadAfter}\`.

| kube-scheduler | scenario | alone: bound, seconds per round | delegated: bound, seconds per round | delegated ÷ alone (mean) | nominations per round | misplaced |
|---|---|---|---|---:|---|---:|
`;
  for (const v of versions)
    for (const s of scenarios) {
      const a = of(v, s, 'alone');
      const d = of(v, s, 'delegated');
      md += `| ${v} | ${s} | ${boundOf(a)}, ${secs(a)} | ${boundOf(d)}, ${secs(d)} | ${(mean(d) / Math.max(1e-9, mean(a))).toFixed(2)}× | ${d.map((r) => r.nominated).join(' / ')} | ${[...a, ...d].reduce((x, r) => x + r.misplaced, 0)} |\n`;
    }
  const rollouts = runs.filter((r) => r.podSeconds?.length);
  if (rollouts.length > 0) {
    md +=
      '\n**Rollout, per recreated pod** (seconds from its creation to its Binding; the rest of a round is deleting and waiting for the pod to go, alike for both):\n\n| kube-scheduler | configuration | round | sum | p50 | p90 | max | pods over 1 s |\n|---|---|---:|---:|---:|---:|---:|---:|\n';
    for (const r of rollouts) {
      const xs = [...r.podSeconds!].sort((a, b) => a - b);
      const q = (f: number) => xs[Math.min(xs.length - 1, Math.floor(f * xs.length))].toFixed(2);
      const round = of(r.version, 'rollout', r.config).indexOf(r) + 1;
      md += `| ${r.version} | ${r.config} | ${round} | ${xs.reduce((a, b) => a + b, 0).toFixed(1)} s | ${q(0.5)} | ${q(0.9)} | ${xs[xs.length - 1].toFixed(2)} | ${xs.filter((x) => x > 1).length} |\n`;
    }
    const traced = rollouts.filter((r) => r.trace);
    if (traced.length > 0) {
      md += "\n**Delegated rollout, where a pod's time goes** (p50 from its creation, the extender's log):\n\n";
      for (const r of traced)
        md += `- ${r.version}, round ${of(r.version, 'rollout', r.config).indexOf(r) + 1}: ${r.trace}\n`;
    }
  }
  md += `<!-- /${args.section} -->\n`;
  await writeResultsSection(args.out, args.section, md);
  console.log(md);
}

await main();
process.exit(0);
