// Annotation keys and reason texts shared by the volume decisions, spelled as upstream spells them
// (component-helpers storage/volume, volumebinding/binder.go, the neighbouring volume plugins).

export {
  ANN_BETA_STORAGE_CLASS,
  ANN_BIND_COMPLETED,
  ANN_BOUND_BY_CONTROLLER,
  ANN_SELECTED_NODE,
} from '../cluster/volume-annotations.ts';
export const ANN_MIGRATED_PLUGINS = 'storage.alpha.kubernetes.io/migrated-plugins';
export const NOT_SUPPORTED_PROVISIONER = 'kubernetes.io/no-provisioner';

export {
  LABEL_FAILURE_DOMAIN_BETA_REGION as LABEL_BETA_REGION,
  LABEL_FAILURE_DOMAIN_BETA_ZONE as LABEL_BETA_ZONE,
  LABEL_TOPOLOGY_REGION,
  LABEL_TOPOLOGY_ZONE,
} from '../cache/node-tree.ts';
/** Zone label values may list several zones joined by this delimiter (regional disks). */
export const LABEL_MULTI_ZONE_DELIMITER = '__';

/** FindPodVolumes conflict reasons, in the order they are reported. */
export const ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity";
export const ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind";
export const ERR_REASON_NOT_ENOUGH_SPACE = 'node(s) did not have enough free storage';
export const ERR_REASON_PV_NOT_EXIST = 'node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)';

export const ERR_REASON_UNBOUND_IMMEDIATE = 'pod has unbound immediate PersistentVolumeClaims';
export const ERR_REASON_VOLUME_ZONE_CONFLICT = 'node(s) had no available volume zone';
export const ERR_REASON_DISK_CONFLICT = 'node(s) had no available disk';
export const ERR_REASON_RWOP_CONFLICT =
  'node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode';
export const ERR_REASON_MAX_VOLUME_COUNT = 'node(s) exceed max volume count';

export const READ_WRITE_ONCE_POD = 'ReadWriteOncePod';
