// A paginated list, as client-go's pager: `limit` per page, follow `continue`; when the continue token expires between
// pages (410 after compaction), start the list over. Items are trimmed page by page, so a 150,000-pod list never holds
// more than one page of full objects.
// Unlike client-go's reflector we never list with resourceVersion=0: API servers answer that from the watch cache and
// (before list-from-cache pagination) ignore `limit`, so 150,000 pods would arrive as one ~900 MB body, past V8's
// largest string. A list without resourceVersion is consistent and paginated (and served from the cache on 1.31+).
import { trimObject } from '../trim.ts';
import type { Kind, KindMap } from '../types.ts';
import { KubeApiError, type KubeClient } from './client.ts';
import { collectionPath, RESOURCES } from './resources.ts';

interface ListResponse<T> {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: T[];
}

export interface ListOptions {
  pageSize?: number;
  signal?: AbortSignal;
  /** Called when a continue token expired and the list starts over. */
  onRestart?: () => void;
}

export interface ListResult<K extends Kind> {
  items: KindMap[K][];
  resourceVersion: string;
}

export async function listAll<K extends Kind>(
  client: KubeClient,
  kind: K,
  opts: ListOptions = {},
): Promise<ListResult<K>> {
  const path = collectionPath(RESOURCES[kind]);
  const items: KindMap[K][] = [];
  let cont: string | undefined;
  let resourceVersion = '';
  for (;;) {
    let page: ListResponse<KindMap[K]>;
    try {
      page = await client.request<ListResponse<KindMap[K]>>('GET', path, {
        query: { limit: opts.pageSize ?? 500, continue: cont },
        signal: opts.signal,
      });
    } catch (err) {
      if (err instanceof KubeApiError && err.code === 410 && cont) {
        opts.onRestart?.();
        items.length = 0;
        cont = undefined;
        continue;
      }
      throw err;
    }
    for (const item of page.items ?? []) items.push(trimObject(kind, item));
    resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
    cont = page.metadata?.continue || undefined;
    if (!cont || opts.signal?.aborted) return { items, resourceVersion };
  }
}
