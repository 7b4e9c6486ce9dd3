// VolumeRestrictions (upstream plugins/volumerestrictions): inline disks that cannot be mounted twice on a node, and
// ReadWriteOncePod claims already used by a scheduled pod. Both are Unschedulable: evicting the user can fix them.
import type { NodeInfo } from '../cache/node-info.ts';
import { podClaimKeys } from '../cache/pod-usage.ts';
import type { ClusterStore } from '../cluster/store.ts';
import { namespaceOf, objectKey, type Pod, type Volume } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import {
  type ExplainPlugin,
  type FilterPlugin,
  type PreFilterExtensions,
  type PreFilterPlugin,
  SKIP,
  type Status,
  SUCCESS,
  status,
} from '../framework/interfaces.ts';
import type { ClaimUsage } from '../volumes/claim-usage.ts';
import { READ_WRITE_ONCE_POD } from '../volumes/constants.ts';

/** Reasons as upstream's plugin spells them. */
export const ERR_REASON_DISK_CONFLICT = 'node(s) had no available disk';
export const ERR_REASON_RWOP_CONFLICT =
  'node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode';

export const VOLUME_RESTRICTIONS = 'VolumeRestrictions';
const STATE_KEY = 'PreFilter/VolumeRestrictions';

interface StateData {
  /** `namespace/name` of the pod's ReadWriteOncePod claims → UIDs of the other scheduled pods using it. */
  rwopUsers: ReadonlyMap<string, ReadonlySet<string>>;
  /** How many of those claims some other pod uses (upstream conflictingPVCRefCount). */
  conflictingPVCRefCount: number;
}

/**
 * Upstream updateWithPod, per user rather than per reference so that removing one of two users keeps the claim
 * taken. Returns a new state: the cycle state may be a clone sharing the old one.
 */
function withPod(data: StateData, other: Pod, add: boolean): StateData {
  const namespace = namespaceOf(other);
  let rwopUsers: Map<string, ReadonlySet<string>> | undefined;
  for (const v of other.spec.volumes ?? []) {
    const key = v.persistentVolumeClaim && `${namespace}/${v.persistentVolumeClaim.claimName}`;
    const users = key === undefined ? undefined : (rwopUsers ?? data.rwopUsers).get(key);
    if (!key || !users || users.has(other.metadata.uid) === add) continue;
    const next = new Set(users);
    if (add) next.add(other.metadata.uid);
    else next.delete(other.metadata.uid);
    rwopUsers ??= new Map(data.rwopUsers);
    rwopUsers.set(key, next);
  }
  if (!rwopUsers) return data;
  let conflictingPVCRefCount = 0;
  for (const users of rwopUsers.values()) if (users.size > 0) conflictingPVCRefCount++;
  return { rwopUsers, conflictingPVCRefCount };
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

export class VolumeRestrictionsPlugin implements PreFilterPlugin, PreFilterExtensions, FilterPlugin, ExplainPlugin {
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
    const namespace = namespaceOf(pod);
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
    const rwopUsers = new Map<string, ReadonlySet<string>>();
    let conflictingPVCRefCount = 0;
    for (const key of rwopClaims) {
      const users = new Set(this.#usage.users(key));
      users.delete(pod.metadata.uid);
      rwopUsers.set(key, users);
      if (users.size > 0) conflictingPVCRefCount++;
    }
    // Unlike upstream we keep filtering for RWOP claims without a known user: the node's own (possibly assumed)
    // pods are checked there too.
    if (!needsCheck && rwopClaims.length === 0) return SKIP;
    state.write(STATE_KEY, { rwopUsers, conflictingPVCRefCount } satisfies StateData);
    return SUCCESS;
  }

  addPod(state: CycleState, _pod: Pod, podToAdd: Pod, _nodeInfo: NodeInfo): Status {
    return this.#update(state, podToAdd, true);
  }

  removePod(state: CycleState, _pod: Pod, podToRemove: Pod, _nodeInfo: NodeInfo): Status {
    return this.#update(state, podToRemove, false);
  }

  #update(state: CycleState, other: Pod, add: boolean): Status {
    const data = state.read<StateData>(STATE_KEY);
    if (!data) return status('Error', `cannot read "${STATE_KEY}" from cycleState`);
    state.write(STATE_KEY, withPod(data, other, add));
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
    for (const key of data.rwopUsers.keys()) {
      if ((nodeInfo.pvcRefCounts.get(key) ?? 0) > 0) return status('Unschedulable', ERR_REASON_RWOP_CONFLICT);
    }
    return SUCCESS;
  }

  /** Per ReadWriteOncePod claim of the pod: the other pods holding it (`namespace/name`), cluster-wide or on this node. */
  explain(state: CycleState, pod: Pod, nodeInfo: NodeInfo): object | undefined {
    const data = state.read<StateData>(STATE_KEY);
    if (!data || data.rwopUsers.size === 0) return undefined;
    const readWriteOncePod = [...data.rwopUsers].map(([claim, users]) => {
      const holders = new Map<string, string>();
      for (const uid of users) holders.set(uid, this.#usage.podName(uid) ?? uid);
      for (const { pod: other } of nodeInfo.pods.values()) {
        if (podClaimKeys(other).includes(claim)) holders.set(other.metadata.uid, objectKey('Pod', other));
      }
      holders.delete(pod.metadata.uid);
      return { claim, heldBy: [...holders.values()].sort() };
    });
    return { readWriteOncePod };
  }
}
