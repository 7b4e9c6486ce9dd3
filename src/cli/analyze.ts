// `topology-extender explain` and `simulate`: the analysis routes without a server, on a cluster-state file (kubectl's
// `get -o yaml` output, frozen by default: no simulated PV controller or provisioner) or on a live cluster listed
// once. Output is a kubectl-like table, or the route's answer with -o json|yaml.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { parseAllDocuments } from 'yaml';
import { unreadableReason } from '../cluster/state-file/error.ts';
import { ClusterStateSource } from '../cluster/state-file/source.ts';
import { VolumeController } from '../cluster/state-file/volume-controller.ts';
import { ClusterStateWriter } from '../cluster/state-file/writer.ts';
import { ClusterStore } from '../cluster/store.ts';
import type { Taint } from '../cluster/types.ts';
import type { ClusterWriter } from '../cluster/writer.ts';
import { defaultSettings } from '../config.ts';
import { buildExtenderDeps } from '../extender/build.ts';
import type { ExtenderDeps } from '../extender/deps.ts';
import type { WirePod } from '../extender/wire.ts';
import {
  DEFAULT_SCHEDULER_NAME,
  type ExplainAnswer,
  type ExplainRequest,
  explain,
  kubeSchedulerMinor,
} from '../ops/explain.ts';
import { GROUPINGS, type Grouping, type PendingAnswer, pendingAnswer } from '../ops/pending.ts';
import { pendingOnce } from '../ops/pending-report.ts';
import { type SimulateAnswer, type StatefulSetTemplate, simulate } from '../ops/simulate.ts';
import { type StorageView, storageView } from '../ops/storage.ts';
import type { InsufficientResource } from '../plugins/node-resources-fit.ts';
import type { ClaimExplanation } from '../volumes/explain.ts';

export const ANALYZE_USAGE = `  topology-extender explain  (-f POD.yaml | NAMESPACE/NAME) [--nodes a,b] [--limit N] [--max-volumes N] [--disabled-plugins P,Q] [--delegated-volume-binding] [source] [-o table|json|yaml]
  topology-extender simulate (-f POD_OR_STATEFULSET.yaml | NAMESPACE/NAME) [--replicas N] [--nodes a,b] [--disabled-plugins P,Q] [source] [-o ...]
  topology-extender pending  [--namespace N] [--by reason|workload|zone] [--scheduler-names a,b] [--delegated-volume-binding] [source] [-o ...]
  topology-extender storage  [--by-node] [source] [-o ...]
`;

const SOURCE_HELP = `Cluster state (one of):
  --cluster-state FILE           a \`kubectl get -o yaml|json\` dump, judged exactly as written
  --simulate-volume-controller   with --cluster-state: first bind pre-bound claims and provision selected-node ones,
                                 as \`serve\` does
  --kubeconfig FILE              a live cluster, listed once
  --in-cluster                   the pod's service account
  (none)                         kubectl's default: KUBECONFIG, ~/.kube/config`;

const OUTPUT_HELP = `  -o, --output FORMAT  table (default), json or yaml (the HTTP route's full answer)
  -h, --help           this help`;

const DELEGATED_HELP = `  --delegated-volume-binding  write the line of a fully delegated kube-scheduler (its volume plugins off), which
                       counts the extender's verdicts (serve's setting delegatedVolumeBinding)`;

const COMMON_HELP = `  --nodes a,b,c        judge only these nodes (default: every node)
  --disabled-plugins P,Q  leave these plugins of kube-scheduler's default profile out, by its names
                       (e.g. NodeResourcesFit,PodTopologySpread)
  --kube-version vX.Y  the cluster's Kubernetes version, whose kube-scheduler's wording explain follows (default: the
                       API server's; v1.37 with --cluster-state)
${DELEGATED_HELP}
${OUTPUT_HELP}`;

export type AnalyzeCommand = 'explain' | 'simulate' | 'pending' | 'storage';
export const ANALYZE_COMMANDS: readonly AnalyzeCommand[] = ['explain', 'simulate', 'pending', 'storage'];

/** Each analysis command's own help: what it answers and every flag it takes. */
export const COMMAND_USAGE: Record<AnalyzeCommand, string> = {
  explain: `Usage: topology-extender explain (-f POD.yaml | NAMESPACE/NAME) [flags]

Why a pod is Pending, node by node: kube-scheduler's default profile is run on every node (NodeResourcesFit,
NodeAffinity, TaintToleration, PodTopologySpread, InterPodAffinity, the volume plugins and the rest) and each plugin
that rejects a node is named with its reason and the numbers behind it: requested against allocatable, the
untolerated taint, the PVs looked at and why each was refused, the CSIStorageCapacity consulted, ReadWriteOncePod
holders and CSI attach slots. The first line is the message kube-scheduler writes. The same answer as
POST /api/v1/explain.

  -f, --filename FILE  the pod from a YAML/JSON file (the first Pod in it); or NAMESPACE/NAME of a pod in the cluster
  --limit N            list at most N nodes (default 100; the summary line always counts every judged node)
  --max-volumes N      list at most N refused PVs per claim and node (default 10)
${COMMON_HELP}

${SOURCE_HELP}
`,
  pending: `Usage: topology-extender pending [flags]

Why every pending pod is pending: per unbound pod of the schedulers named, kube-scheduler's line (explain's summary),
the plugin that rejects the most nodes and the reason given for the most nodes, its workload, how long it has
waited, whether preemption would help and whom it would evict, and the zones with room for its unbound claims.
The same answer as GET /api/v1/pending.

  -n, --namespace N        only this namespace's pods
  --by reason|workload|zone  group the pods (each pod in one group): by the reason given for the most nodes, by
                           workload, or by the storage classes of their unbound claims with the zones that have room
  --scheduler-names a,b    the pods of these schedulerNames (default: default-scheduler)
${DELEGATED_HELP}
${OUTPUT_HELP}

${SOURCE_HELP}
`,
  storage: `Usage: topology-extender storage [flags]

Storage headroom per storage class and zone: PVs available, bound and released (count and bytes; the available
ones by size), the CSIStorageCapacity left, and the claims waiting per class. The same answer as GET /api/v1/storage.

  --by-node            one row per class, zone and node (local PVs and per-node CSIStorageCapacity)
${OUTPUT_HELP}

${SOURCE_HELP}
`,
  simulate: `Usage: topology-extender simulate (-f POD_OR_STATEFULSET.yaml | NAMESPACE/NAME) [flags]

How many more replicas fit: places them one after another as kube-scheduler would (filter, best score, then the
placement assumed: PVs bound, claims provisioned, the pod on its node), on a private copy of the state; nothing is
written. A StatefulSet's volumeClaimTemplates become one claim per replica. The same answer as POST /api/v1/simulate.

  -f, --filename FILE  a StatefulSet or a Pod from a YAML/JSON file; or NAMESPACE/NAME of a pod in the cluster
  --replicas N         how many to place (default: the StatefulSet's spec.replicas, else 1)
${COMMON_HELP}

${SOURCE_HELP}
`,
};

export class UsageError extends Error {}

const OPTIONS = {
  filename: { type: 'string', short: 'f' },
  output: { type: 'string', short: 'o', default: 'table' },
  'cluster-state': { type: 'string' },
  kubeconfig: { type: 'string' },
  'in-cluster': { type: 'boolean', default: false },
  'simulate-volume-controller': { type: 'boolean', default: false },
  nodes: { type: 'string' },
  limit: { type: 'string' },
  'max-volumes': { type: 'string' },
  replicas: { type: 'string' },
  'disabled-plugins': { type: 'string' },
  'kube-version': { type: 'string' },
  'delegated-volume-binding': { type: 'boolean', default: false },
  namespace: { type: 'string', short: 'n' },
  by: { type: 'string' },
  'scheduler-names': { type: 'string', default: DEFAULT_SCHEDULER_NAME },
  'by-node': { type: 'boolean', default: false },
} as const;

function count(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a non-negative integer, got "${value}"`);
  return n;
}

/** The first Pod or StatefulSet in a YAML/JSON file (a List's items included). */
async function objectFrom(file: string): Promise<{ kind: string; metadata: { name: string } }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`-f ${file}: cannot read the file: ${unreadableReason(err)}`);
  }
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new UsageError(`${file}: ${doc.errors[0].message}`);
    const value = doc.toJS() as { kind?: string; items?: unknown[] } | null;
    const candidates = value?.kind === 'List' ? (value.items ?? []) : [value];
    for (const c of candidates as { kind?: string; metadata?: { name?: string } }[]) {
      if ((c?.kind === 'Pod' || c?.kind === 'StatefulSet') && c.metadata?.name) {
        return c as { kind: string; metadata: { name: string } };
      }
    }
  }
  throw new UsageError(`${file} holds no Pod or StatefulSet`);
}

/** The cluster state, loaded once into a store with the verbs' plugins over it. */
async function load(values: Record<string, unknown>): Promise<{ deps: ExtenderDeps; close: () => Promise<void> }> {
  const logger = pino({ level: 'silent' });
  const settings = defaultSettings();
  const store = new ClusterStore();
  const file = values['cluster-state'] as string | undefined;
  const kubeVersion = values['kube-version'] as string | undefined;
  if (kubeVersion !== undefined && !/^v?\d+\.\d+(\.\d+)?$/.test(kubeVersion)) {
    throw new UsageError(`--kube-version must look like v1.36 or v1.36.3, got "${kubeVersion}"`);
  }
  const given = kubeVersion && (kubeVersion.startsWith('v') ? kubeVersion : `v${kubeVersion}`);
  const delegatedVolumeBinding = values['delegated-volume-binding'] as boolean;
  if (file) {
    const source = new ClusterStateSource({ file, watch: false });
    let controller: VolumeController | undefined;
    const { deps } = buildExtenderDeps({
      store,
      writer: new ClusterStateWriter(source),
      logger,
      settings,
      assumedPodTTLms: Number.MAX_SAFE_INTEGER,
      clusterVersion: () => given,
      delegatedVolumeBinding,
      clusterStateFile: file,
      onStore: values['simulate-volume-controller']
        ? (s) => {
            controller = new VolumeController(s, source);
            controller.start();
          }
        : undefined,
    });
    await source.start(store);
    await controller?.idle();
    return { deps, close: () => source.stop() };
  }
  // client-node loads in over half a second: only the API path imports it (main.ts says the same).
  const [{ loadKubeConfig }, { KubeSource }] = await Promise.all([
    import('../cluster/kubeconfig.ts'),
    import('../cluster/kube/source.ts'),
  ]);
  const kubeConfig = loadKubeConfig({
    kubeconfig: values.kubeconfig as string | undefined,
    inCluster: values['in-cluster'] as boolean,
  });
  const source = new KubeSource({ kubeConfig, logger });
  const readOnly = {} as ClusterWriter; // analysis never writes
  const { deps } = buildExtenderDeps({
    store,
    writer: readOnly,
    logger,
    settings,
    assumedPodTTLms: Number.MAX_SAFE_INTEGER,
    sourceStatus: () => source.status(),
    clusterVersion: () => given || source.serverVersion(),
    delegatedVolumeBinding,
  });
  await source.start(store);
  return { deps, close: () => source.stop() };
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows
    .map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]))).join('   '))
    .join('\n');
}

/** One line per claim: what VolumeBinding found for it on the node. */
function claimLine(c: ClaimExplanation): string {
  const parts: string[] = [c.claim];
  if (c.volume)
    parts.push(
      c.volume.found
        ? `bound to ${c.volume.name}${c.volume.nodeAffinityMatches ? '' : ' (affinity does not match)'}`
        : `bound to missing PV ${c.volume.name}`,
    );
  if (c.selectedNode) parts.push(`provisioning for ${c.selectedNode}`);
  if (c.chosenVolume) parts.push(`would bind ${c.chosenVolume}`);
  for (const r of c.refusedVolumes ?? []) parts.push(`${r.name}: ${r.message}`);
  if (c.refusedVolumesOmitted) parts.push(`${c.refusedVolumesOmitted} more refused`);
  if (c.volumesOnOtherNodesMessage) parts.push(c.volumesOnOtherNodesMessage);
  const p = c.provisioning;
  if (p) {
    const cap = p.capacity ?? p.capacitiesReachingNode?.[0];
    parts.push(
      `class ${p.storageClass}: ${p.verdict}${cap ? ` (CSIStorageCapacity ${cap.namespace}/${cap.name} ${cap.capacity ?? '-'})` : ''}`,
    );
  }
  return parts.join('; ');
}

export function explainTable(a: ExplainAnswer): string {
  const rows = [['NODE', 'VERDICT', 'PLUGIN', 'REASON', 'DETAIL']];
  for (const n of a.nodes) {
    const claims = (n.detail.VolumeBinding as { claims?: ClaimExplanation[] } | undefined)?.claims ?? [];
    const extra: string[] = [];
    for (const r of (n.detail.NodeResourcesFit as { insufficient?: InsufficientResource[] } | undefined)
      ?.insufficient ?? []) {
      const unit = r.resourceName === 'cpu' ? 'm' : '';
      extra.push(`${r.resourceName}: ${r.requested}${unit} requested, ${r.used}${unit} of ${r.capacity}${unit} used`);
    }
    const taint = (n.detail.TaintToleration as { untoleratedTaint?: Taint } | undefined)?.untoleratedTaint;
    if (taint) extra.push(`taint ${taint.key}${taint.value ? `=${taint.value}` : ''}:${taint.effect}`);
    for (const c of (
      n.detail.PodTopologySpread as { violatedConstraints?: { topologyKey: string; skew?: number; maxSkew: number }[] }
    )?.violatedConstraints ?? []) {
      extra.push(
        c.skew === undefined ? `no ${c.topologyKey} label` : `${c.topologyKey}: skew ${c.skew} > maxSkew ${c.maxSkew}`,
      );
    }
    for (const r of (n.detail.VolumeRestrictions as { readWriteOncePod?: { claim: string; heldBy: string[] }[] })
      ?.readWriteOncePod ?? []) {
      if (r.heldBy.length > 0) extra.push(`${r.claim} (ReadWriteOncePod) held by ${r.heldBy.join(', ')}`);
    }
    for (const l of (
      n.detail.NodeVolumeLimits as {
        attachLimits?: { driver: string; limit: number; attached: number; adding: number; heldBy: string[] }[];
      }
    )?.attachLimits ?? []) {
      extra.push(
        `${l.driver}: ${l.attached}+${l.adding} of ${l.limit} attached${l.heldBy.length ? ` (${l.heldBy.join(', ')})` : ''}`,
      );
    }
    // Every rejecting plugin: the deciding one first, then what else stands in the way.
    const others = n.failures.filter((f) => f.plugin !== n.plugin).map((f) => `${f.plugin}: ${f.reasons.join(', ')}`);
    rows.push([
      n.name,
      n.verdict,
      n.plugin ?? '-',
      [n.reasons.join(', '), ...others].filter(Boolean).join('; ') || '-',
      [...claims.map(claimLine), ...extra].join(' | ') || '-',
    ]);
  }
  const more = a.nodesOmitted > 0 ? `\n(${a.nodesOmitted} more nodes; --limit to list them)` : '';
  const notes = (a.notes ?? []).map((n) => `Note: ${n}\n`).join('');
  return `${a.summary}\n${notes}\n${table(rows)}${more}\n`;
}

export function simulateTable(a: SimulateAnswer): string {
  const rows = [['REPLICA', 'NODE', 'SCORE', 'VOLUMES']];
  for (const p of a.placements) {
    const volumes = [
      ...p.boundVolumes.map((b) => `${b.claim} -> ${b.volume}`),
      ...p.provisionedClaims.map(
        (c) => `${c.claim} provisioned (${c.storageClass}${c.capacity ? `, ${c.capacity}` : ''})`,
      ),
    ];
    rows.push([p.pod, p.node, String(p.score), volumes.join(', ') || '-']);
  }
  const head = `${a.placed}/${a.requested} replicas placed${(a.notes ?? []).map((n) => `\nNote: ${n}`).join('')}`;
  const tail = a.unplaced ? `\n\n${a.unplaced.pod} does not fit: ${a.unplaced.explanation.summary}\n` : '\n';
  return `${head}\n\n${a.placements.length > 0 ? table(rows) : '(none)'}${tail}`;
}

/** `pending` and `storage`: the whole cluster's report, computed once on the loaded state. */
async function report(
  command: 'pending' | 'storage',
  values: Record<string, string | boolean | undefined>,
  positionals: string[],
): Promise<string> {
  if (positionals.length > 0) throw new UsageError(`${command} takes no arguments, got "${positionals.join(' ')}"`);
  const by = values.by as string | undefined;
  if (by !== undefined && !(GROUPINGS as readonly string[]).includes(by))
    throw new UsageError(`--by must be one of ${GROUPINGS.join(', ')}, got "${by}"`);
  const { deps, close } = await load(values);
  try {
    const output = values.output as string;
    if (command === 'storage') {
      const view = storageView(deps.store, { byNode: values['by-node'] as boolean });
      return await render(view, output, () => storageTable(view));
    }
    const names = String(values['scheduler-names']).split(',').filter(Boolean);
    const answer = pendingAnswer(
      pendingOnce(deps, names),
      names,
      { namespace: values.namespace as string | undefined, by: by as Grouping | undefined },
      Date.now(),
      kubeSchedulerMinor(deps.clusterVersion?.()),
    );
    return await render(answer, output, () => pendingTable(answer));
  } finally {
    await close();
  }
}

async function render(value: unknown, output: string, asTable: () => string): Promise<string> {
  if (output === 'json') return `${JSON.stringify(value, null, 2)}\n`;
  if (output === 'yaml') return (await import('yaml')).stringify(value);
  return asTable();
}

/** kubectl's short durations: 45s, 12m, 5h, 3d. */
export function shortDuration(seconds: number | null): string {
  if (seconds === null) return '-';
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 172800) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

const gib = (bytes: number) => (bytes === 0 ? '0' : `${Number((bytes / 2 ** 30).toFixed(1))}Gi`);

export function pendingTable(a: PendingAnswer): string {
  const head = `${a.pods} pending pod(s) of ${a.schedulerNames.join(', ')}${a.notExplainedYet ? `, ${a.notExplainedYet} not explained yet` : ''}`;
  if (a.groups) {
    const rows =
      a.by === 'reason'
        ? [['PODS', 'WORKLOADS', 'OLDEST', 'PLUGIN', 'REASON']]
        : a.by === 'workload'
          ? [['PODS', 'OLDEST', 'WORKLOAD', 'REASONS']]
          : [['PODS', 'OLDEST', 'STORAGE CLASS', 'ZONES WITH ROOM (PODS)']];
    for (const g of a.groups) {
      const oldest = shortDuration(g.oldestAge);
      if (a.by === 'reason') rows.push([String(g.pods), String(g.workloads), oldest, g.plugin || '-', g.key]);
      else if (a.by === 'workload') rows.push([String(g.pods), oldest, g.key, (g.reasons ?? []).join('; ')]);
      else {
        const zones = Object.entries(g.zonesWithRoom ?? {}).map(([z, n]) => `${z || '(no zone)'} (${n})`);
        rows.push([String(g.pods), oldest, g.key, g.key === '-' ? '-' : zones.join(', ') || 'none']);
      }
    }
    return `${head}\n\n${table(rows)}\n`;
  }
  const rows = [['NAMESPACE', 'NAME', 'WORKLOAD', 'WAITING', 'PLUGIN', 'PREEMPTION', 'CLAIMS', 'MESSAGE']];
  for (const p of a.items) {
    const preemption = !p.preemption
      ? '-'
      : p.preemption.helps
        ? `evicts ${p.preemption.victims?.join(',') || 'nothing'} on ${p.preemption.node}`
        : 'no';
    const claims = p.claims.map((c) =>
      c.volume
        ? `${c.claim}: bound`
        : `${c.claim} (${c.storageClass || '""'} ${gib(c.requestBytes)}): ${c.zonesWithRoom?.join(',') || 'no zone has room'}`,
    );
    rows.push([
      p.namespace,
      p.name,
      p.workload,
      shortDuration(p.age),
      p.plugin || '-',
      preemption,
      claims.join('; ') || '-',
      p.summary,
    ]);
  }
  return `${head}\n\n${table(rows)}\n`;
}

export function storageTable(a: StorageView): string {
  const byNode = a.rows.some((r) => r.node !== undefined);
  const rows = [
    [
      'STORAGE CLASS',
      'ZONE',
      ...(byNode ? ['NODE'] : []),
      'PV AVAILABLE',
      'PV BOUND',
      'PV RELEASED',
      'AVAILABLE BY SIZE (<=)',
      'CSI CAPACITY',
    ],
  ];
  const pv = (v: { count: number; bytes: number }) => `${v.count} (${gib(v.bytes)})`;
  for (const r of a.rows) {
    const sizes = Object.entries(r.freeSizes).filter(([, n]) => n > 0);
    rows.push([
      r.storageClass || '""',
      r.zone || '-',
      ...(byNode ? [r.node || '-'] : []),
      pv(r.volumes.available),
      pv(r.volumes.bound),
      pv(r.volumes.released),
      sizes.map(([le, n]) => `${le}:${n}`).join(' ') || '-',
      r.capacityObjects ? `${gib(r.capacityBytes)} (max volume ${gib(r.largestProvisionableBytes)})` : '-',
    ]);
  }
  const waiting = [['STORAGE CLASS', 'CLAIMS WAITING', 'REQUESTED']];
  for (const w of a.claimsWaiting) waiting.push([w.storageClass || '""', String(w.count), gib(w.bytes)]);
  return `${table(rows)}\n\n${a.claimsWaiting.length ? table(waiting) : 'No claim waiting.'}\n`;
}

/** Runs an analysis command with its arguments; returns the text to print. Throws UsageError on bad input. */
export async function analyze(command: AnalyzeCommand, argv: string[]): Promise<string> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (!['table', 'json', 'yaml'].includes(values.output)) {
    throw new UsageError(`-o must be table, json or yaml, got "${values.output}"`);
  }
  if (command === 'pending' || command === 'storage') return report(command, values, positionals);
  if (!values.filename && positionals.length !== 1) throw new UsageError('give the pod: -f FILE or NAMESPACE/NAME');
  if (values.filename && positionals.length > 0) {
    throw new UsageError('give the pod once: -f FILE or NAMESPACE/NAME, not both');
  }
  const req: ExplainRequest & { statefulSet?: StatefulSetTemplate } = {};
  if (values.filename) {
    const obj = await objectFrom(values.filename);
    if (obj.kind === 'StatefulSet') {
      if (command === 'explain') throw new UsageError('explain takes a Pod; simulate takes a StatefulSet');
      req.statefulSet = obj as unknown as StatefulSetTemplate;
    } else req.pod = obj as unknown as WirePod;
  } else {
    const [namespace, name] = positionals[0].includes('/') ? positionals[0].split('/', 2) : ['default', positionals[0]];
    Object.assign(req, { namespace, name });
  }
  if (values.nodes) req.nodes = values.nodes.split(',').filter(Boolean);
  if (values['disabled-plugins']) req.disabledPlugins = values['disabled-plugins'].split(',').filter(Boolean);
  const { deps, close } = await load(values);
  try {
    if (command === 'explain') {
      const answer = explain(deps, {
        ...req,
        limit: count('limit', values.limit),
        maxVolumes: count('max-volumes', values['max-volumes']),
      });
      return await render(answer, values.output, () => explainTable(answer));
    }
    const answer = simulate(deps, defaultSettings(), { ...req, replicas: count('replicas', values.replicas) });
    return await render(answer, values.output, () => simulateTable(answer));
  } finally {
    await close();
  }
}
