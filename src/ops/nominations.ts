// The operator view of nominations: per node, the pods waiting for it after preempting, their priority, and the PVs
// and provisioned storage they hold back there from pods of lower or equal priority (as filter counts them).
import type { Nominator } from '../cache/nominator.ts';
import type { ClusterStore } from '../cluster/store.ts';
import { DEFAULT_NAMESPACE, objectKey } from '../cluster/types.ts';
import type { AnyPlugin } from '../framework/interfaces.ts';
import { VolumeBindingPlugin } from '../plugins/volume-binding.ts';
import type { HeldVolumes } from '../volumes/binder.ts';

export interface NominationView {
  node: string;
  pods: {
    namespace: string;
    name: string;
    uid: string;
    priority: number;
    persistentVolumes: string[];
    /** bytes per CSIStorageCapacity (`namespace/name`) its claims would provision */
    storage: Record<string, number>;
  }[];
}

export function nominationsView(deps: {
  nominator: Nominator;
  store: ClusterStore;
  plugins: readonly AnyPlugin[];
}): NominationView[] {
  const binding = deps.plugins.find((p) => p instanceof VolumeBindingPlugin);
  return deps.nominator.entries().map(([nodeName, nominated]) => {
    const node = deps.store.get('Node', nodeName);
    // In nomination order, each one's share on top of the earlier ones', as filter adds them.
    let held: HeldVolumes | undefined;
    const pods = nominated.map(({ pod, priority }) => {
      const before = held;
      if (binding && node) held = binding.heldBy(pod, node, held);
      const persistentVolumes = [...(held?.pvs ?? [])].filter((pv) => !before?.pvs.has(pv));
      const storage: Record<string, number> = {};
      for (const [c, bytes] of held?.capacity ?? []) {
        const own = bytes - (before?.capacity.get(c) ?? 0);
        if (own > 0) storage[objectKey('CSIStorageCapacity', c)] = own;
      }
      const { namespace = DEFAULT_NAMESPACE, name, uid } = pod.metadata;
      return { namespace, name, uid, priority, persistentVolumes, storage };
    });
    return { node: nodeName, pods };
  });
}
