// A NodeInfo built by hand for plugin tests (the real one comes from the cache), and the small objects the
// neighbouring volume plugins' tables are written with.
import type { NodeInfo, PodInfo, Resource } from '../../src/cache/node-info.ts';
import { podClaimKeys } from '../../src/cache/pod-usage.ts';
import type { Node, Pod } from '../../src/cluster/types.ts';
import type { Status } from '../../src/framework/interfaces.ts';

const zero = (): Resource => ({ milliCPU: 0, memory: 0, ephemeralStorage: 0, pods: 0, scalar: {} });

export function nodeInfo(node: Node, pods: Pod[] = []): NodeInfo {
  const podMap = new Map<string, PodInfo>(pods.map((p) => [p.metadata.uid, { pod: p, assumed: false }]));
  const pvcRefCounts = new Map<string, number>();
  for (const p of pods) for (const key of podClaimKeys(p)) pvcRefCounts.set(key, (pvcRefCounts.get(key) ?? 0) + 1);
  return {
    name: node.metadata.name,
    node,
    pods: podMap,
    allocatable: zero(),
    requested: zero(),
    nonZeroRequested: zero(),
    usedPorts: new Map(),
    imageStates: new Map(),
    pvcRefCounts,
    csiVolumes: new Map(),
    generation: 0,
  };
}

export const claimVolume = (claimName: string, name = claimName) => ({ name, persistentVolumeClaim: { claimName } });
export const view = (s: Status) => [s.code, ...s.reasons];
