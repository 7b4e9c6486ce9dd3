// Fresh reads from the API server, for the cache comparer (`GET /api/v1/debug/cache-diff`): every pod and every node,
// paginated and trimmed like the store's objects. Lives here because only src/cluster/ talks to client-node.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Node, Pod } from '../types.ts';
import { KubeClient } from './client.ts';
import { listAll } from './list.ts';

export interface ApiListers {
  listPods: () => Promise<Pod[]>;
  listNodes: () => Promise<Node[]>;
}

export function makeApiListers(kubeConfig: KubeConfig, options: { pageSize?: number } = {}): ApiListers {
  const client = new KubeClient(kubeConfig);
  const pageSize = options.pageSize ?? 500;
  return {
    listPods: async () => (await listAll(client, 'Pod', { pageSize })).items,
    listNodes: async () => (await listAll(client, 'Node', { pageSize })).items,
  };
}
