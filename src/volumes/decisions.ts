// What filter decided per (pod UID, node), kept for the prioritize and bind that follow: the storage score, and the
// volumes themselves only where they cannot be found again (a choice that avoided nominated pods' volumes); reserve
// finds the others again for its one node. A decision's volumes are valid only while the binder's generation is
// unchanged: any PV/PVC/class/capacity/CSINode/label change (an assumption included) makes reserve recompute from
// current state; its score stands for the prioritize of the same scheduling cycle (latestForPod), as upstream's Score
// reads its Filter's state. Only one generation is kept per pod, and only the most recent pods, so the cache stays small however long
// pods stay pending: a score per node, where ~500 nodes' volumes per filter were most of what outlived young-generation
// GCs (and, at 2,000 pods, could hold hundreds of MiB).
import type { PodVolumes } from './binder.ts';

/**
 * What filter decided for the pod on a node: the storage score (everything it reads is fixed for the decision's
 * generation, so prioritizes of the pod at that generation reuse it), and the volumes when they must be kept.
 */
export interface Decision {
  readonly podVolumes: PodVolumes | undefined;
  score: number | undefined;
}

interface PodDecisions {
  generation: number;
  byNode: Map<string, Decision>;
}

export class DecisionCache {
  readonly #byPod = new Map<string, PodDecisions>();
  readonly #maxPods: number;

  constructor(maxPods = 2_000) {
    this.#maxPods = maxPods;
  }

  remember(podUID: string, nodeName: string, generation: number, decision: Decision): void {
    let pod = this.#byPod.get(podUID);
    if (!pod || pod.generation !== generation) {
      // Re-inserting moves the pod to the young end; the oldest pod goes when the cache is full.
      this.#byPod.delete(podUID);
      if (this.#byPod.size >= this.#maxPods) {
        const oldest = this.#byPod.keys().next().value;
        if (oldest !== undefined) this.#byPod.delete(oldest);
      }
      pod = { generation, byNode: new Map() };
      this.#byPod.set(podUID, pod);
    }
    pod.byNode.set(nodeName, decision);
  }

  /** The volumes decided for (pod, node) at this generation, if they were kept. */
  get(podUID: string, nodeName: string, generation: number): PodVolumes | undefined {
    return this.decision(podUID, nodeName, generation)?.podVolumes;
  }

  /** The decision for (pod, node) if it was made at this generation. */
  decision(podUID: string, nodeName: string, generation: number): Decision | undefined {
    return this.forPod(podUID, generation)?.get(nodeName);
  }

  /** Every decision of the pod at this generation, by node: what a prioritize of ~500 nodes reads. */
  forPod(podUID: string, generation: number): ReadonlyMap<string, Decision> | undefined {
    const pod = this.#byPod.get(podUID);
    return pod && pod.generation === generation ? pod.byNode : undefined;
  }

  /**
   * The decisions of the pod's latest filter, at whatever generation it ran: what the Score of the same scheduling
   * cycle reads (upstream's Score reads its Filter's podVolumesByNode from the cycle state, not the cluster as it is).
   */
  latestForPod(podUID: string): ReadonlyMap<string, Decision> | undefined {
    return this.#byPod.get(podUID)?.byNode;
  }

  forgetPod(podUID: string): void {
    this.#byPod.delete(podUID);
  }

  get podCount(): number {
    return this.#byPod.size;
  }
}
