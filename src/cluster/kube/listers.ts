// Fresh reads from the API server, for the cache comparer (`GET /api/v1/debug/cache-diff`): every pod and every node,
// paginated and trimmed like the store's objects. 5xx and network failures are retried a few times with backoff.
// Lives here because only src/cluster/ talks to client-node.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Kind, KindMap, Node, Pod } from '../types.ts';
import { Backoff, type BackoffOptions, wait } from './backoff.ts';
import { KubeApiError, KubeClient } from './client.ts';
import { listAll } from './list.ts';

export interface ApiListers {
  listPods: () => Promise<Pod[]>;
  listNodes: () => Promise<Node[]>;
}

export interface ApiListersOptions {
  pageSize?: number;
  /** Extra attempts after a 5xx or network failure. Default 3. */
  retries?: number;
  backoff?: BackoffOptions;
}

export function makeApiListers(kubeConfig: KubeConfig, options: ApiListersOptions = {}): ApiListers {
  const client = new KubeClient(kubeConfig);
  const pageSize = options.pageSize ?? 500;
  const retries = options.retries ?? 3;
  const never = new AbortController().signal;
  const list = async <K extends Kind>(kind: K): Promise<KindMap[K][]> => {
    const backoff = new Backoff({ initialMs: 100, maxMs: 2_000, ...options.backoff });
    for (let attempt = 0; ; attempt++) {
      try {
        return (await listAll(client, kind, { pageSize })).items;
      } catch (err) {
        if (!(err instanceof KubeApiError && err.retriable) || attempt >= retries) throw err;
        await wait(backoff.next(), never);
      }
    }
  };
  return { listPods: () => list('Pod'), listNodes: () => list('Node') };
}
