// NodePorts (upstream plugins/nodeports): a host port (protocol, IP, port) in use on the node cannot be taken again;
// 0.0.0.0 conflicts with every IP on the same protocol and port.
import type { NodeInfo } from '../cache/node-info.ts';
import { hostPortKey, podHostPorts } from '../cache/pod-usage.ts';
import type { Pod } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import {
  type FilterPlugin,
  type PreFilterPlugin,
  SKIP,
  type Status,
  SUCCESS,
  status,
} from '../framework/interfaces.ts';

export const NODE_PORTS = 'NodePorts';
export const ERR_REASON_NODE_PORTS = "node(s) didn't have free ports for the requested pod ports";
const PRE_FILTER_KEY = 'PreFilterNodePorts';
const BIND_ALL = '0.0.0.0';

/** HostPortInfo.CheckConflict over the node's "protocol/ip/port" keys. */
export function portConflicts(used: ReadonlyMap<string, number>, key: string): boolean {
  const [protocol, ip, port] = key.split('/');
  if (ip === BIND_ALL) {
    for (const k of used.keys()) {
      const [p, , n] = k.split('/');
      if (p === protocol && n === port) return true;
    }
    return false;
  }
  return used.has(key) || used.has(hostPortKey(protocol, BIND_ALL, Number(port)));
}

export class NodePortsPlugin implements PreFilterPlugin, FilterPlugin {
  readonly name = NODE_PORTS;

  preFilter(state: CycleState, pod: Pod): Status {
    const wanted = podHostPorts(pod);
    if (wanted.length === 0) return SKIP;
    state.write(PRE_FILTER_KEY, wanted);
    return SUCCESS;
  }

  filter(state: CycleState, _pod: Pod, nodeInfo: NodeInfo): Status {
    return this.conflicts(state, nodeInfo).length > 0 ? status('Unschedulable', ERR_REASON_NODE_PORTS) : SUCCESS;
  }

  conflicts(state: CycleState, nodeInfo: NodeInfo): string[] {
    const wanted = state.read<string[]>(PRE_FILTER_KEY) ?? [];
    return wanted.filter((key) => portConflicts(nodeInfo.usedPorts, key));
  }

  /** The ports in use, for explain. */
  explain(state: CycleState, _pod: Pod, nodeInfo: NodeInfo): object | undefined {
    const taken = this.conflicts(state, nodeInfo);
    return taken.length > 0 ? { portsInUse: taken } : undefined;
  }
}
