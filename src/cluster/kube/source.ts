// The live source: one reflector (paginated list + bookmark watch) per stored kind, all feeding the store.
// start() resolves once every kind has been listed (an analysis-only kind: or has failed to list once, see
// ../analysis-kinds.ts); errors are retried with backoff and logged, never thrown.

import type { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { Log } from '../../log.ts';
import { ANALYSIS_ONLY_KINDS, unavailableKinds } from '../analysis-kinds.ts';
import { compactHeap } from '../compact-heap.ts';
import type { KindStatus, Source } from '../source.ts';
import type { ClusterStore } from '../store.ts';
import { KINDS, type Kind } from '../types.ts';
import type { BackoffOptions } from './backoff.ts';
import { KubeClient } from './client.ts';
import { Reflector } from './reflector.ts';
import { RESOURCES } from './resources.ts';

export interface KubeSourceOptions {
  kubeConfig: KubeConfig;
  logger?: Log;
  /** List page size (`limit`). Default 500, as client-go's pager. */
  pageSize?: number;
  /** A watch silent (no event, no bookmark) for longer than this is stale and restarted. Default 60 s. */
  staleAfterMs?: number;
  /** Backoff after errors: default 500 ms doubling to 30 s, 20 % jitter. */
  backoff?: BackoffOptions;
  /** Kinds to reflect; default all ten (tests narrow it). */
  kinds?: readonly Kind[];
  /** Server-side watch timeout (seconds) per watch request; default random 300–600 s. */
  watchTimeoutSeconds?: () => number;
  /** Deadline of each list page request. Default 60 s. */
  requestTimeoutMs?: number;
}

export class KubeSource implements Source {
  readonly description: string;
  readonly #options: KubeSourceOptions;
  readonly #client: KubeClient;
  readonly #logger: Log;
  #reflectors: Reflector[] = [];
  #serverVersion: string | undefined;

  constructor(options: KubeSourceOptions) {
    this.#options = options;
    this.#client = new KubeClient(options.kubeConfig, { timeoutMs: options.requestTimeoutMs ?? 60_000 });
    this.#logger = options.logger ?? pino({ level: 'silent' });
    this.description = `kube ${this.#client.server}`;
  }

  async start(store: ClusterStore): Promise<void> {
    if (this.#reflectors.length > 0) throw new Error('KubeSource already started');
    const o = this.#options;
    this.#reflectors = (o.kinds ?? KINDS).map(
      (kind) =>
        new Reflector({
          client: this.#client,
          resource: RESOURCES[kind],
          store,
          logger: this.#logger,
          pageSize: o.pageSize ?? 500,
          staleAfterMs: o.staleAfterMs ?? 60_000,
          backoff: o.backoff ?? {},
          watchTimeoutSeconds: o.watchTimeoutSeconds,
          analysisOnly: ANALYSIS_ONLY_KINDS.get(kind),
        }),
    );
    const started = performance.now();
    await Promise.all([...this.#reflectors.map((r) => r.start()), this.#readServerVersion()]);
    // The lists' pages are garbage now: give their memory back before ready, as the cluster-state source does.
    const compacted = compactHeap();
    const statuses = this.status();
    if (statuses.every((s) => s.synced || ANALYSIS_ONLY_KINDS.has(s.kind))) {
      const counts = Object.fromEntries(this.#reflectors.map((r) => [r.kind, store.count(r.kind)]));
      const unavailable = unavailableKinds(statuses).map((s) => s.kind);
      this.#logger.info(
        { server: this.#client.server, ms: Math.round(performance.now() - started), counts, unavailable, compacted },
        'cluster state synced',
      );
    }
  }

  serverVersion(): string | undefined {
    return this.#serverVersion;
  }

  /** `/version` (every authenticated client may read it): explain names the cluster's own kube-scheduler minor. */
  async #readServerVersion(): Promise<void> {
    try {
      this.#serverVersion = (await this.#client.request<{ gitVersion?: string }>('GET', '/version')).gitVersion;
    } catch (err) {
      this.#logger.warn({ err }, `cannot read the API server's version: explain names the newest supported minor`);
    }
  }

  status(): KindStatus[] {
    const now = Date.now();
    return this.#reflectors.map((r) => r.status(now));
  }

  async stop(): Promise<void> {
    await Promise.all(this.#reflectors.map((r) => r.stop()));
  }
}
