import type { SchedulerCache } from '../cache/interface.ts';
import type { NodeInfo } from '../cache/node-info.ts';
import type { Nominator } from '../cache/nominator.ts';
import type { KindStatus } from '../cluster/source.ts';
import type { ClusterStore } from '../cluster/store.ts';
import type { Node } from '../cluster/types.ts';
import type { ClusterWriter } from '../cluster/writer.ts';
import type { Framework } from '../framework/runner.ts';
import type { Log } from '../log.ts';
import type { VolumeBinder } from '../volumes/binder.ts';

/** What the verbs need; the HTTP layer and tests build it once. */
export interface ExtenderDeps {
  framework: Framework;
  cache: SchedulerCache;
  /** Pods waiting for a node after preempting (status.nominatedNodeName). */
  nominator: Nominator;
  store: ClusterStore;
  writer: ClusterWriter;
  logger: Log;
  /** NodeInfo for a node the cache does not know (non-cache mode): the node as sent, with no pods. */
  nodeInfoForUnknownNode: (node: Node) => NodeInfo;
  /** VolumeBinding's binder; undefined when VolumeBinding is disabled (then nothing assumes or binds volumes). */
  volumeBinder?: VolumeBinder;
  /** The source's per-kind health: explain and simulate note the analysis-only kinds it cannot serve. */
  sourceStatus?: () => readonly KindStatus[];
  /** The API server's release (e.g. v1.37.2), once known: explain names the cluster's kube-scheduler minor. */
  clusterVersion?: () => string | undefined;
  /**
   * kube-scheduler delegates every volume decision to this extender (its volume plugins off): explain's line is then
   * what that kube-scheduler writes, counting the extender's verdicts per node after its own filters.
   */
  delegatedVolumeBinding?: boolean;
  /** The cluster-state file the store holds (cluster-state mode): what is not in the store is not in that file. */
  clusterStateFile?: string;
}

/** Input that kube-scheduler would never send; the HTTP layer answers it with 400 naming the problem. */
export class BadRequestError extends Error {
  readonly statusCode = 400;
  constructor(message: string) {
    super(message);
    this.name = 'BadRequestError';
  }
}
