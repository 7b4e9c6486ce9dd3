// VolumeRestrictions (upstream plugins/volumerestrictions): inline disks that cannot be mounted twice on a node, and
// ReadWriteOncePod claims already used by a scheduled pod. Both are Unschedulable: evicting the user can fix them.
import type { NodeInfo } from '../cache/node-info.ts';
import type { ClusterStore } from '../cluster/store.ts';
import type { Pod, Volume } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import {
  type FilterPlugin,
  type PreFilterPlugin,
  SKIP,
  type Status,
  SUCCESS,
  status,
} from '../framework/interfaces.ts';
import type { ClaimUsage } from '../volumes/claim-usage.ts';
import { ERR_REASON_DISK_CONFLICT, ERR_REASON_RWOP_CONFLICT, READ_WRITE_ONCE_POD } from '../volumes/constants.ts';

export const VOLUME_RESTRICTIONS = 'VolumeRestrictions';
const STATE_KEY = 'PreFilter/VolumeRestrictions';

interface StateData {
  /** `namespace/name` of the pod's ReadWriteOncePod claims. */
  rwopClaims: string[];
  conflictingPVCRefCount: number;
}

type Source = Record<string, unknown>;

function source(v: Volume, field: string): Source | undefined {
  const s = v[field];
  return s && typeof s === 'object' ? (s as Source) : undefined;
}

const RESTRICTED = ['gcePersistentDisk', 'awsElasticBlockStore', 'rbd', 'iscsi'];

function needsRestrictionsCheck(v: Volume): boolean {
  return RESTRICTED.some((f) => source(v, f) !== undefined);
}

/** isVolumeConflict: the same disk mounted twice, unless every mount is read-only (EBS: never twice). */
function isVolumeConflict(v: Volume, other: Pod): boolean {
  for (const e of other.spec.volumes ?? []) {
    const [gce, egce] = [source(v, 'gcePersistentDisk'), source(e, 'gcePersistentDisk')];
    if (gce && egce && gce.pdName === egce.pdName && !(gce.readOnly && egce.readOnly)) return true;
    const [ebs, eebs] = [source(v, 'awsElasticBlockStore'), source(e, 'awsElasticBlockStore')];
    if (ebs && eebs && ebs.volumeID === eebs.volumeID) return true;
    const [iscsi, eiscsi] = [source(v, 'iscsi'), source(e, 'iscsi')];
    if (iscsi && eiscsi && iscsi.iqn === eiscsi.iqn && !(iscsi.readOnly && eiscsi.readOnly)) return true;
    const [rbd, erbd] = [source(v, 'rbd'), source(e, 'rbd')];
    if (rbd && erbd) {
      const mons = (rbd.monitors as string[] | undefined) ?? [];
      const emons = new Set((erbd.monitors as string[] | undefined) ?? []);
      const overlap = mons.some((m) => emons.has(m));
      const pool = rbd.pool ?? 'rbd';
      const epool = erbd.pool ?? 'rbd';
      if (overlap && pool === epool && rbd.image === erbd.image && !(rbd.readOnly && erbd.readOnly)) return true;
    }
  }
  return false;
}

export class VolumeRestrictionsPlugin implements PreFilterPlugin, FilterPlugin {
  readonly name = VOLUME_RESTRICTIONS;
  readonly #store: ClusterStore;
  readonly #usage: ClaimUsage;

  constructor(store: ClusterStore, usage: ClaimUsage) {
    this.#store = store;
    this.#usage = usage;
  }

  preFilter(state: CycleState, pod: Pod): Status {
    const volumes = pod.spec.volumes ?? [];
    const needsCheck = volumes.some(needsRestrictionsCheck);
    const namespace = pod.metadata.namespace ?? 'default';
    const rwopClaims: string[] = [];
    for (const v of volumes) {
      if (!v.persistentVolumeClaim) continue;
      const key = `${namespace}/${v.persistentVolumeClaim.claimName}`;
      const pvc = this.#store.get('PersistentVolumeClaim', key);
      if (!pvc) {
        return status(
          'UnschedulableAndUnresolvable',
          `persistentvolumeclaim "${v.persistentVolumeClaim.claimName}" not found`,
        );
      }
      if ((pvc.spec.accessModes ?? []).includes(READ_WRITE_ONCE_POD) && !rwopClaims.includes(key)) rwopClaims.push(key);
    }
    let conflictingPVCRefCount = 0;
    for (const key of rwopClaims) {
      const users = this.#usage.users(key);
      if (users.size > (users.has(pod.metadata.uid) ? 1 : 0)) conflictingPVCRefCount++;
    }
    // Unlike upstream we keep filtering for RWOP claims without a known user: the node's own (possibly assumed)
    // pods are checked there too.
    if (!needsCheck && rwopClaims.length === 0) return SKIP;
    state.write(STATE_KEY, { rwopClaims, conflictingPVCRefCount } satisfies StateData);
    return SUCCESS;
  }

  filter(state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status {
    for (const v of pod.spec.volumes ?? []) {
      if (!needsRestrictionsCheck(v)) continue;
      for (const { pod: other } of nodeInfo.pods.values()) {
        if (other.metadata.uid !== pod.metadata.uid && isVolumeConflict(v, other)) {
          return status('Unschedulable', ERR_REASON_DISK_CONFLICT);
        }
      }
    }
    const data = state.read<StateData>(STATE_KEY);
    if (!data) return SUCCESS;
    if (data.conflictingPVCRefCount > 0) return status('Unschedulable', ERR_REASON_RWOP_CONFLICT);
    for (const key of data.rwopClaims) {
      if ((nodeInfo.pvcRefCounts.get(key) ?? 0) > 0) return status('Unschedulable', ERR_REASON_RWOP_CONFLICT);
    }
    return SUCCESS;
  }
}
