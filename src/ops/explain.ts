// Explain: why a pod fits or does not fit each node, from the same framework run as the filter verb (preFilter once,
// then every filter plugin per node until one rejects), with upstream's FitError line and each volume plugin's detail.
import { DEFAULT_NAMESPACE, objectKey, type Pod } from '../cluster/types.ts';
import { unknownNodeReason } from '../extender/candidates.ts';
import { BadRequestError, type ExtenderDeps } from '../extender/deps.ts';
import { podFromRequest } from '../extender/pod.ts';
import type { WirePod } from '../extender/wire.ts';
import { CycleState } from '../framework/cycle-state.ts';
import { fitErrorMessage } from '../framework/fit-error.ts';
import { isSuccess, type Status } from '../framework/interfaces.ts';

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
}

export type Verdict = 'Fits' | 'Unschedulable' | 'UnschedulableAndUnresolvable' | 'Error';

export interface NodeExplanation {
  name: string;
  verdict: Verdict;
  /** The plugin that rejected the node (null when it fits, or when the cache does not know the node). */
  plugin: string | null;
  /** Upstream's reason strings, as the filter verb reports them. */
  reasons: string[];
  /** What each volume plugin found on this node, by plugin name. */
  detail: Record<string, object>;
}

export interface ExplainAnswer {
  pod: string;
  /** kube-scheduler's FitError line when no node fits ("0/N nodes are available: ..."), else "M/N nodes fit". */
  summary: string;
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
export function resolvePod(deps: Pick<ExtenderDeps, 'store'>, req: ExplainRequest): Pod {
  if (req.pod) {
    // A manifest not created yet has no uid; the plugins key decisions by it.
    const meta = req.pod.metadata;
    const uid = meta.uid || `explain:${meta.namespace || DEFAULT_NAMESPACE}/${meta.name}`;
    return podFromRequest({ ...req.pod, metadata: { ...meta, uid } });
  }
  if (!req.name) throw new BadRequestError('one of pod (a full Pod object) or name (with namespace) must be set');
  const key = `${req.namespace || DEFAULT_NAMESPACE}/${req.name}`;
  const pod = deps.store.get('Pod', key);
  if (!pod) throw new NotFoundError(`pod ${key} is not in the extender's cache`);
  return pod;
}

function verdictOf(s: Status): Verdict {
  return isSuccess(s) ? 'Fits' : (s.code as Verdict);
}

export function explain(deps: ExtenderDeps, req: ExplainRequest): ExplainAnswer {
  const pod = resolvePod(deps, req);
  const names = req.nodes ?? deps.cache.nodeNames();
  const limit = req.limit ?? DEFAULT_NODE_LIMIT;
  const limits = { maxVolumes: req.maxVolumes ?? DEFAULT_MAX_VOLUMES };
  const { framework, cache } = deps;
  const state = new CycleState();
  const pre = framework.runPreFilter(state, pod);
  const failed: Status[] = [];
  const nodes: NodeExplanation[] = [];
  let feasible = 0;
  for (const name of names) {
    const info = cache.nodeInfo(name);
    let s: Status;
    if (!info?.node) s = { code: 'Unschedulable', reasons: [unknownNodeReason(name)] };
    else s = isSuccess(pre) ? framework.runFilterWithNominatedPods(state, pod, info) : pre;
    if (isSuccess(s)) feasible++;
    else failed.push(s);
    if (nodes.length >= limit) continue;
    nodes.push({
      name,
      verdict: verdictOf(s),
      plugin: isSuccess(s) ? null : (s.plugin ?? null),
      reasons: [...s.reasons],
      detail: info?.node && isSuccess(pre) ? framework.explainNode(state, pod, info, limits) : {},
    });
  }
  const preFilterMsg = isSuccess(pre) ? '' : pre.reasons.join(', ');
  return {
    pod: objectKey('Pod', pod),
    summary:
      feasible === 0
        ? fitErrorMessage(names.length, preFilterMsg, failed)
        : `${feasible}/${names.length} nodes are available`,
    feasibleNodes: feasible,
    totalNodes: names.length,
    nodes,
    nodesOmitted: names.length - nodes.length,
  };
}
