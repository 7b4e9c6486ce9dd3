// NodeInfo: everything the scheduler knows about one node, aggregated from the pods on it
// (upstream pkg/scheduler/framework/types.go). The read-only view below is what plugins see.
import type { Node, Pod } from '../cluster/types.ts';

/** Resource amounts in base units: milli-CPU, bytes, counts; extended resources by name. */
export interface Resource {
  milliCPU: number;
  memory: number;
  ephemeralStorage: number;
  pods: number;
  scalar: Record<string, number>;
}

export interface PodInfo {
  readonly pod: Pod;
  /** Assumed by our bind, not yet confirmed by the watch. */
  readonly assumed: boolean;
}

export interface NodeInfo {
  readonly name: string;
  /** The Node object; undefined for a ghost (node deleted while pods still reference it). */
  readonly node: Node | undefined;
  /** Pods on the node, keyed by UID. */
  readonly pods: ReadonlyMap<string, PodInfo>;
  readonly allocatable: Readonly<Resource>;
  readonly requested: Readonly<Resource>;
  /** Requested with upstream's defaults (100m CPU, 200 MB memory) for containers that request nothing. */
  readonly nonZeroRequested: Readonly<Resource>;
  /** "protocol/hostIP/port" → count. */
  readonly usedPorts: ReadonlyMap<string, number>;
  /** Image name → size in bytes, from node status. */
  readonly imageStates: ReadonlyMap<string, number>;
  /** "namespace/claimName" → number of pods on this node that use the claim. */
  readonly pvcRefCounts: ReadonlyMap<string, number>;
  /** CSI driver name → inline CSI volumes (by handle) of pods on this node. */
  readonly csiVolumes: ReadonlyMap<string, ReadonlySet<string>>;
  /** Value of the global generation counter at this node's last change. */
  readonly generation: number;
}
