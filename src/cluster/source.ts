// A Source fills the store: the cluster-state file in the embedded mode, the API server's informers in a live cluster.
// Both deliver the same store events, so everything above the store cannot tell them apart.
import type { ClusterStore } from './store.ts';
import type { Kind } from './types.ts';

export interface KindStatus {
  kind: Kind;
  /** Listed at least once. */
  synced: boolean;
  /** Milliseconds since the watch last delivered anything (event or bookmark); undefined before the first list. */
  silentForMs?: number;
  /** Its list or watch failed again and again (a quiet watch is not stale). */
  stale: boolean;
  relists: number;
  /** Why the last list failed (`403 Forbidden`, a network error), until a list succeeds. */
  error?: string;
  watchRestarts: number;
  /** Watch events applied (ADDED, MODIFIED, DELETED) and their size in characters of JSON: what decoding costs. */
  watchEvents?: number;
  watchEventChars?: number;
}

export interface Source {
  /** Human-readable name for logs and /readyz ("cluster-state examples/cluster.yaml", "kube https://..."). */
  readonly description: string;
  /** Starts filling the store; resolves after the initial list (or load) of every kind the verbs read. */
  start(store: ClusterStore): Promise<void>;
  /** Per-kind health, read by /readyz and /metrics. */
  status(): KindStatus[];
  /** The cluster-state file it serves; undefined for a live cluster. */
  readonly file?: string;
  /** The API server's release (`/version`'s gitVersion, e.g. v1.37.2) once read; a cluster-state file has none. */
  serverVersion?(): string | undefined;
  stop(): Promise<void>;
}
