// A pod whose claim is bound to a local PV whose node is gone or NotReady can run nowhere else: upstream only says
// "node(s) didn't match PersistentVolume's node affinity" on every node. Explain (and with it the pending report and
// the CLI) says which node, since when, and the operator's two ways out. Nothing is deleted here: losing the data is
// the operator's call.
import type { ClusterStore } from '../cluster/store.ts';
import { type Node, type NodeSelector, namespaceOf, type Pod } from '../cluster/types.ts';
import { podClaimRefs } from '../volumes/claims.ts';
import { matchNodeSelectorTerms } from '../volumes/node-affinity.ts';

const UNREACHABLE = 'node.kubernetes.io/unreachable';
const NOT_READY = 'node.kubernetes.io/not-ready';

/** The node names a selector names outright (kubernetes.io/hostname In, or metadata.name In): who the PV was on. */
function namedNodes(selector: NodeSelector): string[] {
  return (selector.nodeSelectorTerms ?? [])
    .flatMap((t) => [
      ...(t.matchExpressions ?? []).filter((m) => m.key === 'kubernetes.io/hostname' && m.operator === 'In'),
      ...(t.matchFields ?? []).filter((m) => m.key === 'metadata.name' && m.operator === 'In'),
    ])
    .flatMap((m) => m.values ?? []);
}

/** Why a node cannot run pods, with since when, or undefined when it is Ready. */
function notReady(node: Node): string | undefined {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  // No Ready condition (a cluster-state file's node): nothing known against it.
  if (!ready || ready.status === 'True') return undefined;
  const taint = node.spec?.taints?.find((t) => t.key === UNREACHABLE || t.key === NOT_READY);
  const since = ready.lastTransitionTime ? ` since ${ready.lastTransitionTime}` : '';
  const why = ready.status === 'Unknown' ? 'stopped reporting' : 'is NotReady';
  return `${why}${since}${taint ? ` (taint ${taint.key})` : ''}`;
}

/** A note per claim of the pod bound to a volume that only gone or NotReady nodes can reach. */
export function lostNodeNotes(store: ClusterStore, pod: Pod): string[] {
  const namespace = namespaceOf(pod);
  const notes: string[] = [];
  for (const ref of podClaimRefs(pod)) {
    const claim = store.get('PersistentVolumeClaim', `${namespace}/${ref.name}`);
    const volumeName = claim?.spec.volumeName;
    const pv = volumeName ? store.get('PersistentVolume', volumeName) : undefined;
    const required = pv?.spec.nodeAffinity?.required;
    if (!pv || !required) continue;
    // A hostname label is its node's name nearly always: one Ready among the named nodes settles it without a scan
    // of every node (the pending report asks this of each pending pod).
    const named = namedNodes(required).map((n) => store.get('Node', n));
    if (named.some((n) => n && matchNodeSelectorTerms(required, n.metadata.labels) && !notReady(n))) continue;
    const reachable: Node[] = [];
    for (const node of store.list('Node')) {
      if (matchNodeSelectorTerms(required, node.metadata.labels)) reachable.push(node);
    }
    const lost = reachable.map((n) => [n.metadata.name, notReady(n)] as const);
    if (lost.some(([, why]) => why === undefined)) continue;
    const where =
      lost.length > 0
        ? lost.map(([name, why]) => `node "${name}", which ${why}`).join('; ')
        : `${
            namedNodes(required)
              .map((n) => `node "${n}"`)
              .join(', ') || 'the nodes it names'
          }, not in the cluster`;
    notes.push(
      `claim "${namespace}/${ref.name}" is bound to PersistentVolume "${pv.metadata.name}", whose node affinity admits only ${where}: ` +
        'bring the node back, or delete the claim and then the pod (the data on that volume is lost) so that its workload makes a new claim',
    );
  }
  return notes;
}
