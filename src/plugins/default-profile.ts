// kube-scheduler's default profile (pkg/scheduler/apis/config/v1/default_plugins.go, v1.35) for explain and
// simulate: its filter plugins in its order, the volume plugins the verbs run among them, and its score weights.
// The verbs keep running only the volume plugins (kube-scheduler runs the rest itself).
import type { NodeInfo } from '../cache/node-info.ts';
import type { AnyPlugin } from '../framework/interfaces.ts';
import type { SpreadSelectorLister } from './default-selector.ts';
import type { NodeInfoLister } from './helper.ts';
import { IMAGE_LOCALITY, ImageLocalityPlugin } from './image-locality.ts';
import {
  HARD_POD_AFFINITY_WEIGHT,
  INTER_POD_AFFINITY,
  InterPodAffinityPlugin,
  type NamespaceLabels,
} from './inter-pod-affinity.ts';
import { NODE_AFFINITY, NodeAffinityPlugin } from './node-affinity.ts';
import { NODE_NAME, NodeNamePlugin } from './node-name.ts';
import { NODE_PORTS, NodePortsPlugin } from './node-ports.ts';
import {
  NODE_RESOURCES_BALANCED_ALLOCATION,
  NodeResourcesBalancedAllocationPlugin,
} from './node-resources-balanced-allocation.ts';
import { NODE_RESOURCES_FIT, NodeResourcesFitPlugin } from './node-resources-fit.ts';
import { NODE_UNSCHEDULABLE, NodeUnschedulablePlugin } from './node-unschedulable.ts';
import { POD_TOPOLOGY_SPREAD, PodTopologySpreadPlugin } from './pod-topology-spread.ts';
import { TAINT_TOLERATION, TaintTolerationPlugin } from './taint-toleration.ts';

/** Upstream's default score weights. VolumeBinding's (1) scores only with the StorageCapacityScoring gate, off. */
export const DEFAULT_WEIGHTS: Readonly<Record<string, number>> = Object.freeze({
  [TAINT_TOLERATION]: 3,
  [NODE_AFFINITY]: 2,
  [NODE_RESOURCES_FIT]: 1,
  [POD_TOPOLOGY_SPREAD]: 2,
  [INTER_POD_AFFINITY]: 2,
  [NODE_RESOURCES_BALANCED_ALLOCATION]: 1,
  [IMAGE_LOCALITY]: 1,
});

/** The default profile's plugins other than the volume ones, in its order; the volume plugins go after NodeResourcesFit. */
export const DEFAULT_PROFILE_PLUGINS = [
  NODE_UNSCHEDULABLE,
  NODE_NAME,
  TAINT_TOLERATION,
  NODE_AFFINITY,
  NODE_PORTS,
  NODE_RESOURCES_FIT,
  POD_TOPOLOGY_SPREAD,
  INTER_POD_AFFINITY,
  NODE_RESOURCES_BALANCED_ALLOCATION,
  IMAGE_LOCALITY,
] as const;

/** The cache's nodes (not ghosts), as upstream's snapshot lists them to PodTopologySpread, InterPodAffinity, ImageLocality. */
export function cacheLister(cache: {
  nodeNames(): string[];
  nodeInfo(name: string): NodeInfo | undefined;
}): NodeInfoLister {
  return {
    list: () =>
      cache.nodeNames().flatMap((n) => {
        const info = cache.nodeInfo(n);
        return info?.node ? [info] : [];
      }),
  };
}

/** What the default profile's plugins read beyond the pod and the node they judge. */
export interface ProfileListers {
  /** The snapshot's nodes (PodTopologySpread, InterPodAffinity, ImageLocality). */
  nodes: NodeInfoLister;
  /** PodTopologySpread's system default constraints' selectors. */
  selectors: SpreadSelectorLister;
  /** InterPodAffinity's namespaceSelector. */
  namespaceLabels: NamespaceLabels;
}

/** The default profile around `volumePlugins` (already built, shared with the verbs), without `disabled`. */
export function buildDefaultProfile(
  volumePlugins: readonly AnyPlugin[],
  { nodes, selectors, namespaceLabels }: ProfileListers,
  disabled: readonly string[] = [],
): AnyPlugin[] {
  const before: AnyPlugin[] = [
    new NodeUnschedulablePlugin(),
    new NodeNamePlugin(),
    new TaintTolerationPlugin(),
    new NodeAffinityPlugin(),
    new NodePortsPlugin(),
    new NodeResourcesFitPlugin(),
  ];
  const after: AnyPlugin[] = [
    new PodTopologySpreadPlugin(nodes, selectors),
    new InterPodAffinityPlugin(nodes, HARD_POD_AFFINITY_WEIGHT, namespaceLabels),
    new NodeResourcesBalancedAllocationPlugin(),
    new ImageLocalityPlugin(nodes),
  ];
  return [...before, ...volumePlugins, ...after].filter((p) => !disabled.includes(p.name));
}
