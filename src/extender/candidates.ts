// Which nodes a filter or prioritize request asks about, in the request's own mode: node-cache mode names them
// (`NodeNames`), non-cache mode sends them whole (`Nodes`). The answer must use the same mode.
import type { NodeInfo } from '../cache/node-info.ts';
import type { Node } from '../cluster/types.ts';
import { BadRequestError, type ExtenderDeps } from './deps.ts';
import type { ExtenderArgs, WireNode } from './wire.ts';

export interface Candidates {
  mode: 'node-cache' | 'full-nodes';
  names: string[];
  /** Non-cache mode: the nodes exactly as received, to echo back the ones that pass. */
  nodes?: Map<string, WireNode>;
  lookup: (name: string) => NodeInfo | undefined;
}

export function candidatesOf(args: ExtenderArgs, deps: ExtenderDeps): Candidates {
  if (Array.isArray(args.NodeNames)) {
    const lookup = (name: string) => {
      const info = deps.cache.nodeInfo(name);
      return info?.node ? info : undefined;
    };
    return { mode: 'node-cache', names: args.NodeNames, lookup };
  }
  if (args.Nodes && Array.isArray(args.Nodes.items)) {
    const nodes = new Map<string, WireNode>();
    for (const node of args.Nodes.items) {
      if (nodes.has(node.metadata.name)) {
        throw new BadRequestError(`Nodes.items names node "${node.metadata.name}" twice`);
      }
      nodes.set(node.metadata.name, node);
    }
    // The cache's NodeInfo carries the node's pods; a node only the scheduler knows yet is judged as sent, podless.
    const lookup = (name: string) => {
      const info = deps.cache.nodeInfo(name);
      if (info?.node) return info;
      const sent = nodes.get(name);
      return sent ? deps.nodeInfoForUnknownNode(sent as unknown as Node) : undefined;
    };
    return { mode: 'full-nodes', names: [...nodes.keys()], nodes, lookup };
  }
  throw new BadRequestError(
    'one of NodeNames (nodeCacheCapable: true) or Nodes.items (nodeCacheCapable: false) must be set; both are null',
  );
}

export function unknownNodeReason(name: string): string {
  return `node "${name}" is not in the extender's cache (watch lag, or a node the extender cannot see)`;
}
