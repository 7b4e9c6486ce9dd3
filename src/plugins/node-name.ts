// NodeName (upstream plugins/nodename): a pod naming a node in spec.nodeName fits only that node.
import type { NodeInfo } from '../cache/node-info.ts';
import type { Pod } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import { type FilterPlugin, type Status, SUCCESS, status } from '../framework/interfaces.ts';

export const NODE_NAME = 'NodeName';
export const ERR_REASON_NODE_NAME = "node(s) didn't match the requested node name";

export class NodeNamePlugin implements FilterPlugin {
  readonly name = NODE_NAME;

  filter(_state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status {
    const wanted = pod.spec.nodeName;
    if (!wanted || wanted === nodeInfo.node?.metadata.name) return SUCCESS;
    return status('UnschedulableAndUnresolvable', ERR_REASON_NODE_NAME);
  }
}
