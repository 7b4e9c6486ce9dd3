// NodeUnschedulable (upstream plugins/nodeunschedulable): a cordoned node takes only pods tolerating its
// node.kubernetes.io/unschedulable:NoSchedule taint.
import type { NodeInfo } from '../cache/node-info.ts';
import type { Pod } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import { type FilterPlugin, type Status, SUCCESS, status } from '../framework/interfaces.ts';
import { tolerationsTolerateTaint } from './helper.ts';

export const NODE_UNSCHEDULABLE = 'NodeUnschedulable';
export const ERR_REASON_UNKNOWN_CONDITION = 'node(s) had unknown conditions';
export const ERR_REASON_UNSCHEDULABLE = 'node(s) were unschedulable';
export const TAINT_NODE_UNSCHEDULABLE = 'node.kubernetes.io/unschedulable';

export class NodeUnschedulablePlugin implements FilterPlugin {
  readonly name = NODE_UNSCHEDULABLE;

  filter(_state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status {
    const node = nodeInfo.node;
    if (!node) return status('UnschedulableAndUnresolvable', ERR_REASON_UNKNOWN_CONDITION);
    if (!node.spec?.unschedulable) return SUCCESS;
    const tolerates = tolerationsTolerateTaint(pod.spec.tolerations, {
      key: TAINT_NODE_UNSCHEDULABLE,
      effect: 'NoSchedule',
    });
    return tolerates ? SUCCESS : status('UnschedulableAndUnresolvable', ERR_REASON_UNSCHEDULABLE);
  }
}
