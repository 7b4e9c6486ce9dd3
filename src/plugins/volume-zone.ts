// VolumeZone (upstream plugins/volumezone): a bound PV's zone/region labels must name the node's zone/region.
import type { NodeInfo } from '../cache/node-info.ts';
import type { ClusterStore } from '../cluster/store.ts';
import { namespaceOf, type PersistentVolume, type Pod } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import {
  type FilterPlugin,
  type PreFilterPlugin,
  SKIP,
  type Status,
  SUCCESS,
  status,
} from '../framework/interfaces.ts';
import {
  LABEL_BETA_REGION,
  LABEL_BETA_ZONE,
  LABEL_MULTI_ZONE_DELIMITER,
  LABEL_TOPOLOGY_REGION,
  LABEL_TOPOLOGY_ZONE,
  VOLUME_BINDING_WAIT,
} from '../volumes/constants.ts';
import { claimClass } from '../volumes/pv-matching.ts';

/** Reasons as upstream's plugin spells them. */
export const ERR_REASON_VOLUME_ZONE_CONFLICT = 'node(s) had no available volume zone';

export const VOLUME_ZONE = 'VolumeZone';
const STATE_KEY = 'PreFilter/VolumeZone';

/** Upstream's order: beta zone, beta region, GA zone, GA region. */
const TOPOLOGY_LABELS = [LABEL_BETA_ZONE, LABEL_BETA_REGION, LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION];
const TO_GA: Record<string, string> = {
  [LABEL_BETA_ZONE]: LABEL_TOPOLOGY_ZONE,
  [LABEL_BETA_REGION]: LABEL_TOPOLOGY_REGION,
};

interface PVTopology {
  pvName: string;
  key: string;
  values: ReadonlySet<string>;
}

/** volumehelpers.LabelZonesToSet: `a__b` → {a, b}; an empty member makes the label unusable. */
function labelZonesToSet(value: string): Set<string> | undefined {
  const zones = value.split(LABEL_MULTI_ZONE_DELIMITER).map((z) => z.trim());
  if (zones.some((z) => z === '')) return undefined;
  return new Set(zones);
}

function pvTopologies(pv: PersistentVolume): PVTopology[] {
  const out: PVTopology[] = [];
  const labels = pv.metadata.labels ?? {};
  for (const key of TOPOLOGY_LABELS) {
    if (!Object.hasOwn(labels, key)) continue;
    const values = labelZonesToSet(labels[key]);
    if (values) out.push({ pvName: pv.metadata.name, key, values });
  }
  return out;
}

export class VolumeZonePlugin implements PreFilterPlugin, FilterPlugin {
  readonly name = VOLUME_ZONE;
  readonly #store: ClusterStore;

  constructor(store: ClusterStore) {
    this.#store = store;
  }

  preFilter(state: CycleState, pod: Pod): Status {
    const topologies: PVTopology[] = [];
    const namespace = namespaceOf(pod);
    // getPersistentVolumeClaimNameFromPod: persistentVolumeClaim sources only. A generic ephemeral claim is
    // VolumeBinding's to wait for (and its PV's zone is the one VolumeBinding provisioned in).
    for (const v of pod.spec.volumes ?? []) {
      if (!v.persistentVolumeClaim) continue;
      const name = v.persistentVolumeClaim.claimName;
      if (name === '') return status('UnschedulableAndUnresolvable', 'PersistentVolumeClaim had no name');
      const pvc = this.#store.get('PersistentVolumeClaim', `${namespace}/${name}`);
      if (!pvc) return status('UnschedulableAndUnresolvable', `persistentvolumeclaim "${name}" not found`);
      const pvName = pvc.spec.volumeName ?? '';
      if (pvName === '') {
        const scName = claimClass(pvc);
        if (scName === '') {
          return status('UnschedulableAndUnresolvable', 'PersistentVolumeClaim had no pv name and storageClass name');
        }
        const sc = this.#store.get('StorageClass', scName);
        if (!sc) return status('UnschedulableAndUnresolvable', `storageclass.storage.k8s.io "${scName}" not found`);
        if (!sc.volumeBindingMode) {
          return status('UnschedulableAndUnresolvable', `VolumeBindingMode not set for StorageClass "${scName}"`);
        }
        if (sc.volumeBindingMode === VOLUME_BINDING_WAIT) continue; // unbound volumes are VolumeBinding's job
        return status('UnschedulableAndUnresolvable', 'PersistentVolume had no name');
      }
      const pv = this.#store.get('PersistentVolume', pvName);
      if (!pv) return status('UnschedulableAndUnresolvable', `persistentvolume "${pvName}" not found`);
      topologies.push(...pvTopologies(pv));
    }
    if (topologies.length === 0) return SKIP;
    state.write(STATE_KEY, topologies);
    return SUCCESS;
  }

  filter(state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status {
    if ((pod.spec.volumes ?? []).length === 0) return SUCCESS;
    const topologies = state.read<PVTopology[]>(STATE_KEY) ?? [];
    const labels = nodeInfo.node?.metadata.labels ?? {};
    // A node without any zone/region label has no constraint to violate.
    if (!TOPOLOGY_LABELS.some((k) => Object.hasOwn(labels, k))) return SUCCESS;
    for (const t of topologies) {
      let value: string | undefined = Object.hasOwn(labels, t.key) ? labels[t.key] : undefined;
      if (value === undefined && TO_GA[t.key] && Object.hasOwn(labels, TO_GA[t.key])) value = labels[TO_GA[t.key]];
      if (value === undefined || !t.values.has(value)) {
        return status('UnschedulableAndUnresolvable', ERR_REASON_VOLUME_ZONE_CONFLICT);
      }
    }
    return SUCCESS;
  }
}
