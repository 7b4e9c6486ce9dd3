// Explain: why a pod fits or does not fit each node, from a run of kube-scheduler's default profile (preFilter once,
// then the filter plugins per node until one rejects, the volume plugins being the verbs' own), with the PodScheduled
// message kube-scheduler writes, every plugin that rejects each node and each plugin's detail. With
// delegatedVolumeBinding the message is a fully delegated kube-scheduler's, which counts this extender's verdicts.
import type { NodeInfo } from '../cache/node-info.ts';
import { unavailableKindNotes } from '../cluster/analysis-kinds.ts';
import { DEFAULT_NAMESPACE, objectKey, type Pod } from '../cluster/types.ts';
import { unknownNodeReason } from '../extender/candidates.ts';
import { BadRequestError, type ExtenderDeps } from '../extender/deps.ts';
import { podFromRequest } from '../extender/pod.ts';
import type { WirePod } from '../extender/wire.ts';
import { CycleState } from '../framework/cycle-state.ts';
import { fitErrorMessage } from '../framework/fit-error.ts';
import { isSuccess, type Status } from '../framework/interfaces.ts';
import type { Framework } from '../framework/runner.ts';
import { DEFAULT_PROFILE_PLUGINS } from '../plugins/default-profile.ts';
import { PLUGIN_NAMES } from '../plugins/names.ts';
import { lostNodeNotes } from './lost-node.ts';
import { type PreemptionVerdict, postFilter } from './post-filter.ts';
import { defaultProfileFramework } from './profile.ts';

/**
 * The kube-scheduler minors whose default profile and reason strings explain follows, checked byte for byte against
 * each (test/e2e/explain-vs-kube-scheduler.test.ts), oldest first.
 */
export const MATCHED_MINORS = ['v1.35', 'v1.36', 'v1.37'] as const;

/** The cluster's kube-scheduler minor (its API server's, as kube-scheduler runs at the control plane's version). */
export function kubeSchedulerMinor(clusterVersion: string | undefined): string {
  return /^v\d+\.\d+/.exec(clusterVersion ?? '')?.[0] ?? MATCHED_MINORS[MATCHED_MINORS.length - 1];
}
export const DEFAULT_SCHEDULER_NAME = 'default-scheduler';

export const DEFAULT_NODE_LIMIT = 100;
export const DEFAULT_MAX_VOLUMES = 10;

export interface ExplainRequest {
  /** The pod as a full object; or `namespace` and `name` of a pod the extender's store holds. */
  pod?: WirePod;
  namespace?: string;
  name?: string;
  /** The nodes to judge (default: every node in the cache, in its zone-interleaved order). */
  nodes?: string[];
  /** How many nodes to list (default 100); the summary always covers every judged node. */
  limit?: number;
  /** How many refused PVs to list per claim and node (default 10). */
  maxVolumes?: number;
  /** Default-profile plugins to leave out, by kube-scheduler's names (as a profile's `disabled` list). */
  disabledPlugins?: string[];
}

export type Verdict = 'Fits' | 'Unschedulable' | 'UnschedulableAndUnresolvable' | 'Error';

export interface NodeExplanation {
  name: string;
  verdict: Verdict;
  /** The plugin that rejected the node (null when it fits, or when the cache does not know the node). */
  plugin: string | null;
  /** Upstream's reason strings of the rejecting plugin. */
  reasons: string[];
  /** Every filter plugin that rejects the node, not only the first (kube-scheduler stops at the first). */
  failures: { plugin: string; code: string; reasons: string[] }[];
  /** What each plugin found on this node (the numbers behind a verdict), by plugin name. */
  detail: Record<string, object>;
}

export interface ExplainAnswer {
  pod: string;
  /**
   * When no node fits, the PodScheduled message kube-scheduler writes (its FitError: "0/N nodes are available:
   * ..." with what preemption found), else "M/N nodes are available".
   */
  summary: string;
  /** Said when the pod belongs to another scheduler, preemption would make room, or a kind could not be listed. */
  notes?: string[];
  /** The kube-scheduler release whose reason strings and default profile the answer follows. */
  kubeSchedulerVersion: string;
  feasibleNodes: number;
  totalNodes: number;
  nodes: NodeExplanation[];
  /** Judged nodes not listed (beyond `limit`). */
  nodesOmitted: number;
}

export class NotFoundError extends Error {
  readonly statusCode = 404;
  constructor(message: string) {
    super(message);
    this.name = 'NotFoundError';
  }
}

/** The pod to explain: the one sent, or the store's pod named by namespace/name. */
export function resolvePod(deps: Pick<ExtenderDeps, 'store' | 'clusterStateFile'>, req: ExplainRequest): Pod {
  if (req.pod) {
    if (req.name !== undefined)
      throw new BadRequestError(
        'pod and name are both set: give the pod whole (pod) or by name (namespace/name), not both',
      );
    if (req.namespace !== undefined)
      throw new BadRequestError('pod and namespace are both set: a pod given whole is in its metadata.namespace');
    // A manifest not created yet has no uid; the plugins key decisions by it.
    const meta = req.pod.metadata;
    const uid = meta.uid || `explain:${meta.namespace || DEFAULT_NAMESPACE}/${meta.name}`;
    return podFromRequest({ ...req.pod, metadata: { ...meta, uid } });
  }
  if (!req.name) throw new BadRequestError('one of pod (a full Pod object) or name (with namespace) must be set');
  const key = `${req.namespace || DEFAULT_NAMESPACE}/${req.name}`;
  const pod = deps.store.get('Pod', key);
  if (!pod) {
    const where = deps.clusterStateFile ? `the cluster-state file ${deps.clusterStateFile}` : "the extender's cache";
    throw new NotFoundError(`pod ${key} is not in ${where}`);
  }
  return pod;
}

function verdictOf(s: Status): Verdict {
  return isSuccess(s) ? 'Fits' : (s.code as Verdict);
}

/** Where a preFilter narrowed the cycle to named nodes: what kube-scheduler records for every other node. */
export function notInPreFilterResult(plugins: readonly string[]): string {
  return `node(s) didn't satisfy plugin(s) [${plugins.join(' ')}]`;
}

/** The note for a pod another scheduler handles: explained all the same, with the default profile. */
function schedulerNote(pod: Pod): string | undefined {
  const name = pod.spec.schedulerName;
  if (!name || name === DEFAULT_SCHEDULER_NAME) return undefined;
  return `the pod's schedulerName is "${name}": explained with kube-scheduler's default profile, which that scheduler may not run`;
}

/** Nodes judged between two yields of `judge`: short enough for a slice of the pending report to end on time. */
export const NODES_PER_STEP = 16;

/** Runs a step-wise computation (a generator that yields between nodes) to its end. */
export function drain<T>(steps: Generator<void, T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}

/** What explain found, with what the pending report reads besides the answer. */
export interface Judgement {
  answer: ExplainAnswer;
  /** Judged nodes that do not fit, by the plugin that rejected them (the one kube-scheduler's status names). */
  deciding: Map<string, number>;
  /** Per reason string, the nodes it was given for (the counts of the FitError line; the preFilter's message alone). */
  reasons: Map<string, number>;
  /** A node where evicting lower-priority pods makes room (when no node fits). */
  preemptionCandidate?: string;
  framework: Framework;
  /** The cycle state after preFilter. */
  state: CycleState;
  pod: Pod;
  /** What judged each node (the pending report judges some nodes again with it: src/ops/pending-nodes.ts). */
  context: JudgeContext;
  /** The nodes judged, in order. */
  names: readonly string[];
  /** The judged nodes that do not fit, in order, with the status kube-scheduler counts. */
  statuses: ReadonlyMap<string, Status>;
  /** DefaultPreemption's verdict on each node its dry run tried (when no node fits). */
  tried: ReadonlyMap<string, PreemptionVerdict>;
  /** The kube-scheduler minor whose messages the answer follows, as a number (36 for v1.36). */
  minor: number;
}

/** What a node's status in a judgement depends on besides the node. */
export interface JudgeContext {
  deps: ExtenderDeps;
  pod: Pod;
  framework: Framework;
  state: CycleState;
  /** The preFilter whose rejection is the pod's (kube-scheduler's own; delegated, the volume plugins' is per node). */
  podPre: Status;
  /** The nodes a preFilter narrowed the cycle to. */
  narrowed?: { nodeNames: ReadonlySet<string>; plugins: string[] };
  delegated?: Delegation;
}

/** A node's status as kube-scheduler records it, and whether it was filtered (not left out by a narrowing preFilter). */
export function judgeNode(c: JudgeContext, name: string): { s: Status; judged: boolean } {
  const info = c.deps.cache.nodeInfo(name);
  if (!info?.node) return { s: { code: 'Unschedulable', reasons: [unknownNodeReason(name)] }, judged: true };
  if (!isSuccess(c.podPre)) return { s: c.podPre, judged: true };
  if (c.narrowed && !c.narrowed.nodeNames.has(name))
    return {
      s: { code: 'UnschedulableAndUnresolvable', reasons: [notInPreFilterResult(c.narrowed.plugins)] },
      judged: false,
    };
  const s = c.delegated
    ? delegatedFilter(c.delegated, c.pod, info)
    : c.framework.runFilterWithNominatedPods(c.state, c.pod, info);
  return { s, judged: true };
}

/** The plugin a node not fitting is counted under (judge's `deciding`). */
export function decidingPlugin(c: JudgeContext, s: Status, judged: boolean): string {
  return s.plugin ?? (judged ? '' : c.narrowed?.plugins.join(' ')) ?? '';
}

/**
 * The FitError line when no node fits, before PostFilter's part, and its counts per reason: `failed` are the judged
 * nodes' statuses, the `filtered` of `numAllNodes` nodes that a narrowing preFilter did not leave out.
 */
export function fitErrorOf(
  c: JudgeContext,
  numAllNodes: number,
  failed: Status[],
  filtered: number,
): { summary: string; reasons: Map<string, number> } {
  // Upstream counts the nodes a preFilter excluded by the absent nodes' status, not one by one.
  if (c.narrowed)
    for (let i = filtered; i < numAllNodes; i++)
      failed.push({ code: 'UnschedulableAndUnresolvable', reasons: [notInPreFilterResult(c.narrowed.plugins)] });
  const preFilterMsg = isSuccess(c.podPre) ? '' : c.podPre.reasons.join(', ');
  const reasons = new Map<string, number>();
  if (preFilterMsg) reasons.set(preFilterMsg, numAllNodes);
  else for (const f of failed) for (const r of f.reasons) reasons.set(r, (reasons.get(r) ?? 0) + 1);
  return { summary: fitErrorMessage(numAllNodes, preFilterMsg, failed), reasons };
}

/** Explain's notes on the pod and the cluster (not the one on preemption). */
export function explainNotes(deps: ExtenderDeps, pod: Pod, minor: string): string[] {
  const notes: string[] = [];
  const note = schedulerNote(pod);
  if (note) notes.push(note);
  notes.push(...lostNodeNotes(deps.store, pod));
  notes.push(...unavailableKindNotes(deps.sourceStatus?.() ?? []));
  if (!(MATCHED_MINORS as readonly string[]).includes(minor))
    notes.push(
      `this cluster runs ${minor}: the reasons are kube-scheduler ${MATCHED_MINORS[0]}–${MATCHED_MINORS.at(-1)}'s, an older or newer one may word some differently`,
    );
  return notes;
}

/**
 * A fully delegated kube-scheduler (deps.delegatedVolumeBinding): its own profile without the volume plugins, whose
 * preFilter and filters come first, and this extender's filter (the volume plugins alone) on the nodes that pass them.
 */
export interface Delegation {
  scheduler: Framework;
  schedulerState: CycleState;
  schedulerPre: Status;
  extender: Framework;
  extenderState: CycleState;
  extenderPre: Status;
}

function delegation(deps: ExtenderDeps, pod: Pod, disabled: readonly string[] = []): Delegation {
  const scheduler = defaultProfileFramework(deps, [...disabled, ...PLUGIN_NAMES]);
  const extender = defaultProfileFramework(deps, [...disabled, ...DEFAULT_PROFILE_PLUGINS]);
  const schedulerState = new CycleState({ analysis: true });
  const extenderState = new CycleState({ analysis: true });
  return {
    scheduler,
    schedulerState,
    schedulerPre: scheduler.runPreFilter(schedulerState, pod),
    extender,
    extenderState,
    extenderPre: extender.runPreFilter(extenderState, pod),
  };
}

/**
 * The node's status as a fully delegated kube-scheduler records it: its own filters' first rejection, else the
 * extender's verdict (a rejection by its preFilter comes back for each node, as the filter verb answers it).
 */
export function delegatedFilter(d: Delegation, pod: Pod, info: NodeInfo): Status {
  const own = d.scheduler.runFilterWithNominatedPods(d.schedulerState, pod, info);
  if (!isSuccess(own)) return own;
  if (!isSuccess(d.extenderPre)) return d.extenderPre;
  return d.extender.runFilterWithNominatedPods(d.extenderState, pod, info);
}

/**
 * The status kube-scheduler counts for the node: the extender protocol carries one message per node (the filter verb
 * joins the plugin's reasons), which kube-scheduler's FitError counts as one reason.
 */
export function counted(s: Status, d: Delegation | undefined): Status {
  if (!d || isSuccess(s) || !(PLUGIN_NAMES as readonly (string | undefined)[]).includes(s.plugin)) return s;
  return { ...s, reasons: [s.reasons.join(', ')] };
}

export function explain(deps: ExtenderDeps, req: ExplainRequest): ExplainAnswer {
  return drain(judge(deps, resolvePod(deps, req), req)).answer;
}

/**
 * Explain's computation for a resolved pod, a step per NODES_PER_STEP nodes: the pending report (src/ops/pending-report.ts) runs
 * it a few milliseconds at a time between the verbs; `explain` runs it to the end.
 */
export function* judge(
  deps: ExtenderDeps,
  pod: Pod,
  req: Omit<ExplainRequest, 'pod' | 'namespace' | 'name'>,
): Generator<void, Judgement> {
  const names = req.nodes ?? deps.cache.nodeNames();
  const limit = req.limit ?? DEFAULT_NODE_LIMIT;
  const limits = { maxVolumes: req.maxVolumes ?? DEFAULT_MAX_VOLUMES };
  const { cache } = deps;
  const framework = defaultProfileFramework(deps, req.disabledPlugins);
  const state = new CycleState({ analysis: true });
  const pre = framework.runPreFilter(state, pod);
  const delegated = deps.delegatedVolumeBinding ? delegation(deps, pod, req.disabledPlugins) : undefined;
  // The preFilter whose rejection is the pod's (kube-scheduler's own; delegated, the volume plugins' is per node).
  const podPre = delegated ? delegated.schedulerPre : pre;
  const narrowed = isSuccess(podPre)
    ? (delegated?.scheduler ?? framework).preFilterResult(delegated?.schedulerState ?? state)
    : undefined;
  const context: JudgeContext = { deps, pod, framework, state, podPre, narrowed, delegated };
  const statuses = new Map<string, Status>();
  const nodes: NodeExplanation[] = [];
  const deciding = new Map<string, number>();
  let feasible = 0;
  let filtered = 0;
  let step = 0;
  for (const name of names) {
    // A step per NODES_PER_STEP nodes (a few microseconds each): the caller looks at its clock between steps.
    if (step++ % NODES_PER_STEP === 0) yield;
    const { s, judged } = judgeNode(context, name);
    if (judged) filtered++;
    if (isSuccess(s)) feasible++;
    else {
      if (judged) statuses.set(name, counted(s, delegated));
      const plugin = decidingPlugin(context, s, judged);
      deciding.set(plugin, (deciding.get(plugin) ?? 0) + 1);
    }
    if (nodes.length >= limit) continue;
    const info = cache.nodeInfo(name);
    const listed = Boolean(info?.node && isSuccess(podPre) && judged);
    const all = listed && !isSuccess(s) ? (isSuccess(pre) ? framework.runAllFilters(state, pod, info!) : [pre]) : [];
    nodes.push({
      name,
      verdict: verdictOf(s),
      plugin: isSuccess(s) ? null : (s.plugin ?? null),
      reasons: [...s.reasons],
      failures: all.map((f) => ({ plugin: f.plugin ?? '', code: f.code, reasons: [...f.reasons] })),
      detail: info?.node && isSuccess(pre) && judged ? framework.explainNode(state, pod, info, limits) : {},
    });
  }
  let summary = `${feasible}/${names.length} nodes are available`;
  const minor = kubeSchedulerMinor(deps.clusterVersion?.());
  const notes = explainNotes(deps, pod, minor);
  let reasons = new Map<string, number>();
  let preemptionCandidate: string | undefined;
  const tried = new Map<string, PreemptionVerdict>();
  if (feasible === 0) {
    ({ summary, reasons } = fitErrorOf(context, names.length, [...statuses.values()], filtered));
    if (podPre.code === 'UnschedulableAndUnresolvable') {
      // kube-scheduler stops at such a preFilter rejection, before DynamicResources (the profile's last preFilter)
      // wrote its cycle state. Its PostFilter, the first, then fails to read that state, and the error ends the
      // PostFilter phase, DefaultPreemption unrun: the message ends "not found" (v1.35 to v1.37 alike).
      summary += ' not found';
    } else {
      const post = yield* postFilter(
        delegated?.scheduler ?? framework,
        delegated?.schedulerState ?? state,
        pod,
        names.length,
        isSuccess(podPre) ? statuses : new Map(),
        (n) => cache.nodeInfo(n),
        Number(minor.split('.')[1]),
        delegated && { framework: delegated.extender, state: delegated.extenderState },
        tried,
      );
      if (post.message) summary += ` ${post.message}`;
      preemptionCandidate = post.preemptionCandidate;
    }
    if (preemptionCandidate)
      notes.push(
        `evicting lower-priority pods would make room on ${preemptionCandidate}: kube-scheduler would preempt`,
      );
  }
  const answer: ExplainAnswer = {
    pod: objectKey('Pod', pod),
    summary,
    ...(notes.length > 0 ? { notes } : {}),
    kubeSchedulerVersion: minor,
    feasibleNodes: feasible,
    totalNodes: names.length,
    nodes,
    nodesOmitted: names.length - nodes.length,
  };
  return {
    answer,
    deciding,
    reasons,
    preemptionCandidate,
    framework,
    state,
    pod,
    context,
    names,
    statuses,
    tried,
    minor: Number(minor.split('.')[1]),
  };
}
