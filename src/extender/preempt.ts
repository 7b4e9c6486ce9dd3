// preempt: kube-scheduler's DefaultPreemption chose candidate nodes and victims with its in-tree filters only (its
// dry run never calls our filter). For each candidate we decide, with the volume plugins, whether the pod fits once
// the victims are gone: nodes no eviction can fix are dropped, the pods that volumes require (an RWOP claim's
// holder, CSI attach slots) are added when they are of lower priority, and the scheduler's own victims always stay.
// The answer always uses NodeNameToMetaVictims (UIDs), whatever the request's mode.
import { preemptionPolicy } from '../cache/priority.ts';
import type { PodDisruptionBudget } from '../cluster/types.ts';
import { CycleState } from '../framework/cycle-state.ts';
import { isSuccess } from '../framework/interfaces.ts';
import { FrameworkError } from '../framework/runner.ts';
import { ERR_REASON_MAX_VOLUME_COUNT } from '../plugins/node-volume-limits.ts';
import { ERR_REASON_UNBOUND_IMMEDIATE } from '../plugins/volume-binding.ts';
import { ERR_REASON_DISK_CONFLICT, ERR_REASON_RWOP_CONFLICT } from '../plugins/volume-restrictions.ts';
import { ERR_REASON_VOLUME_ZONE_CONFLICT } from '../plugins/volume-zone.ts';
import { countPDBViolations } from '../preemption/pdb.ts';
import { type NodeVerdict, selectVictimsOnNode, type Victim } from '../preemption/select-victims.ts';
import {
  ERR_REASON_BIND_CONFLICT,
  ERR_REASON_NODE_CONFLICT,
  ERR_REASON_NOT_ENOUGH_SPACE,
  ERR_REASON_PV_NOT_EXIST,
} from '../volumes/binder.ts';
import type { ExtenderDeps } from './deps.ts';
import { podFromRequest } from './pod.ts';
import type { ExtenderPreemptionArgs, ExtenderPreemptionResult, MetaVictims } from './wire.ts';

/** What one preempt call decided, for /metrics. */
export interface PreemptOutcome {
  kept: number;
  /** reason (upstream's fixed string, or `other`) → nodes dropped for it */
  dropped: Map<string, number>;
  victimsAdded: number;
}

/** The victims kube-scheduler chose per candidate node (its NumPDBViolations is counted again, see passThrough). */
function candidatesOf(args: ExtenderPreemptionArgs): Map<string, Victim[]> {
  const out = new Map<string, Victim[]>();
  if (args.NodeNameToMetaVictims) {
    for (const [node, v] of Object.entries(args.NodeNameToMetaVictims)) {
      out.set(
        node,
        (v.Pods ?? []).map((p) => ({ uid: p.UID })),
      );
    }
  } else if (args.NodeNameToVictims) {
    for (const [node, v] of Object.entries(args.NodeNameToVictims)) {
      out.set(
        node,
        (v.Pods ?? []).map((p) => ({ uid: p.metadata.uid, pod: podFromRequest(p) })),
      );
    }
  }
  return out;
}

const NEVER = 'pod has preemptionPolicy: Never';
/** Upstream's fixed reason strings; anything else (a message naming a claim) is counted as `other`. */
const KNOWN_REASONS = new Set<string>([
  NEVER,
  ERR_REASON_NODE_CONFLICT,
  ERR_REASON_BIND_CONFLICT,
  ERR_REASON_NOT_ENOUGH_SPACE,
  ERR_REASON_PV_NOT_EXIST,
  ERR_REASON_UNBOUND_IMMEDIATE,
  ERR_REASON_VOLUME_ZONE_CONFLICT,
  ERR_REASON_DISK_CONFLICT,
  ERR_REASON_RWOP_CONFLICT,
  ERR_REASON_MAX_VOLUME_COUNT,
]);

/** A bounded label for /metrics: the first of the reasons when it is one of upstream's fixed strings. */
function reasonLabel(reason: string): string {
  const first = reason.split(', ')[0]!;
  return KNOWN_REASONS.has(first) ? first : 'other';
}

const meta = (victims: readonly Victim[], numPDBViolations: number): MetaVictims => ({
  Pods: victims.map((v) => ({ UID: v.uid })),
  NumPDBViolations: numPDBViolations,
});

export function preempt(
  args: ExtenderPreemptionArgs,
  deps: ExtenderDeps,
  onOutcome?: (outcome: PreemptOutcome) => void,
): ExtenderPreemptionResult {
  const pod = podFromRequest(args.Pod);
  const outcome: PreemptOutcome = { kept: 0, dropped: new Map(), victimsAdded: 0 };
  const answer = (nodes: Record<string, MetaVictims>): ExtenderPreemptionResult => {
    onOutcome?.(outcome);
    return { NodeNameToMetaVictims: nodes };
  };
  const candidates = candidatesOf(args);
  const drop = (reason: string) => {
    const label = reasonLabel(reason);
    outcome.dropped.set(label, (outcome.dropped.get(label) ?? 0) + 1);
  };
  // Upstream PodEligibleToPreemptOthers: such a pod may not preempt at all.
  if (preemptionPolicy(pod, deps.store) === 'Never') {
    for (const _ of candidates) drop(NEVER);
    return answer({});
  }
  const out: Record<string, MetaVictims> = {};
  let pdbs: PodDisruptionBudget[] | undefined;
  const pdbList = () => (pdbs ??= [...deps.store.list('PodDisruptionBudget')]);
  // The scheduler's victims stand as sent, but NumPDBViolations is counted as for every other answer (over the
  // victims the cache knows), so the same victims on the same node never get two counts depending on the preemptor.
  const passThrough = (node: string, victims: Victim[]) => {
    outcome.kept++;
    const onNode = deps.cache.nodeInfo(node)?.pods;
    const known = victims.flatMap((v) => {
      const victim = v.pod ?? onNode?.get(v.uid)?.pod;
      return victim ? [victim] : [];
    });
    out[node] = meta(victims, countPDBViolations(known, pdbList()));
  };

  const { framework } = deps;
  const state = new CycleState();
  const pre = framework.runPreFilter(state, pod);
  if (pre.code === 'Error') throw new FrameworkError(pre.plugin ?? 'preFilter', pre.reasons);
  // No volume plugin has anything to check for this pod: the scheduler's choice stands as sent.
  if (isSuccess(pre) && framework.allFiltersSkipped(state)) {
    for (const [node, victims] of candidates) passThrough(node, victims);
    return answer(out);
  }
  const ctx = { framework, state, pod, pdbs: pdbList(), now: Date.now() };
  for (const [node, victims] of candidates) {
    const nodeInfo = deps.cache.nodeInfo(node);
    if (!nodeInfo?.node) {
      // A node the scheduler knows and we do not (yet): nothing to judge it by.
      passThrough(node, victims);
      continue;
    }
    let verdict: NodeVerdict;
    try {
      verdict = isSuccess(pre)
        ? selectVictimsOnNode(ctx, nodeInfo, victims)
        : { kept: false, reason: pre.reasons.join(', ') };
    } catch (err) {
      // An internal failure is no verdict on the node: the scheduler's own choice stands.
      if (!(err instanceof FrameworkError)) throw err;
      deps.logger.error({ err, node }, 'preempt: evaluating the candidate failed; passing it through');
      passThrough(node, victims);
      continue;
    }
    if (!verdict.kept) {
      deps.logger.debug({ node, reason: verdict.reason }, 'preemption candidate dropped');
      drop(verdict.reason);
      continue;
    }
    outcome.kept++;
    outcome.victimsAdded += verdict.added;
    out[node] = meta(verdict.victims, verdict.numPDBViolations);
  }
  return answer(out);
}
