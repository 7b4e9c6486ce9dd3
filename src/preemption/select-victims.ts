// Volume-aware victim selection on one candidate node (after upstream DefaultPreemption.SelectVictimsOnNode), on a
// copy of the node's NodeInfo and a clone of the cycle state, with the volume plugins and their AddPod/RemovePod
// extensions. Differences from upstream, because kube-scheduler has already chosen victims for rules we cannot see:
// its victims are never reprieved, only the extra pods that volumes require are added (reprieved greedily in
// upstream's order: PDB-violating first, then the others, each most important first), and a node no eviction fixes
// is dropped.
import { copyNodeInfo, type NodeInfo } from '../cache/node-info.ts';
import { moreImportantFirst } from '../cache/priority.ts';
import type { Pod, PodDisruptionBudget } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import { isSuccess, type Status } from '../framework/interfaces.ts';
import { type Framework, FrameworkError } from '../framework/runner.ts';
import { countPDBViolations, splitByPDBViolation } from './pdb.ts';

/** A victim as kube-scheduler sent it: the pod when the request or the cache has it, else only its UID. */
export interface Victim {
  uid: string;
  pod?: Pod;
}

export type NodeVerdict =
  | { kept: true; victims: Victim[]; added: number; numPDBViolations: number }
  | { kept: false; reason: string };

export interface SelectionContext {
  framework: Framework;
  /** The cycle state after preFilter; cloned per node. */
  state: CycleState;
  pod: Pod;
  pdbs: readonly PodDisruptionBudget[];
  now: number;
}

function ok(s: Status): boolean {
  if (s.code === 'Error') throw new FrameworkError(s.plugin ?? 'preempt', s.reasons);
  return isSuccess(s);
}

export function selectVictimsOnNode(ctx: SelectionContext, nodeInfo: NodeInfo, sent: readonly Victim[]): NodeVerdict {
  const { framework, pod } = ctx;
  const priorityOf = framework.priorityOf;
  const priority = priorityOf(pod);
  const node = copyNodeInfo(nodeInfo);
  const state = ctx.state.clone();
  const remove = (victim: Pod) => {
    node.removePod(victim.metadata.uid);
    ok(framework.runPreFilterRemovePod(state, pod, victim, node));
  };
  const fits = () => ok(framework.runFilterWithNominatedPods(state, pod, node));

  // The scheduler's victims leave first: they go whatever we decide. One it sent that the cache does not hold on
  // this node (watch lag) is not there to remove, and stays in the answer as sent.
  const chosen: Victim[] = [];
  const seen = new Set<string>();
  for (const v of sent) {
    if (seen.has(v.uid)) continue; // the same pod named twice is one victim
    seen.add(v.uid);
    const onNode = node.pods.get(v.uid)?.pod;
    if (onNode) remove(onNode);
    chosen.push(onNode ? { uid: v.uid, pod: onNode } : v);
  }
  // Then every other pod of strictly lower priority: if the pod does not fit even so, no eviction can make it fit.
  const extras = [...node.pods.values()].map((p) => p.pod).filter((p) => priorityOf(p) < priority);
  for (const p of extras) remove(p);
  const first = framework.runFilterWithNominatedPods(state, pod, node);
  if (!ok(first)) return { kept: false, reason: first.reasons.join(', ') };

  const order = moreImportantFirst(priorityOf, ctx.now);
  const added: Victim[] = [];
  if (extras.length > 0) {
    const extra = new Set(extras);
    const known = chosen.flatMap((v) => (v.pod ? [v.pod] : []));
    const { violating, nonViolating } = splitByPDBViolation([...known, ...extras].sort(order), ctx.pdbs);
    for (const p of [...violating, ...nonViolating]) {
      if (!extra.has(p)) continue;
      node.addPod(p);
      ok(framework.runPreFilterAddPod(state, pod, p, node));
      if (fits()) continue;
      remove(p);
      added.push({ uid: p.metadata.uid, pod: p });
    }
  }
  // Most important first; a UID we know nothing about cannot be placed, so it goes last, in the order sent.
  const victims = [...chosen, ...added];
  const withPod = victims.filter((v) => v.pod).sort((a, b) => order(a.pod!, b.pod!));
  const final = [...withPod, ...victims.filter((v) => !v.pod)];
  const numPDBViolations = countPDBViolations(
    withPod.map((v) => v.pod!),
    ctx.pdbs,
  );
  return { kept: true, victims: final, added: added.length, numPDBViolations };
}
