// Annotation keys, labels and names shared by the volume decisions, spelled as upstream spells them (component-helpers
// storage/volume). Each plugin's reason strings live in its own file, as upstream keeps them.

export {
  ANN_BETA_STORAGE_CLASS,
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_BIND_COMPLETED,
  ANN_BOUND_BY_CONTROLLER,
  ANN_SELECTED_NODE,
  ANN_STORAGE_PROVISIONER,
} from '../cluster/volume-annotations.ts';
export const ANN_MIGRATED_PLUGINS = 'storage.alpha.kubernetes.io/migrated-plugins';

export {
  LABEL_FAILURE_DOMAIN_BETA_REGION as LABEL_BETA_REGION,
  LABEL_FAILURE_DOMAIN_BETA_ZONE as LABEL_BETA_ZONE,
  LABEL_TOPOLOGY_REGION,
  LABEL_TOPOLOGY_ZONE,
} from '../cluster/well-known-labels.ts';
/** Zone label values may list several zones joined by this delimiter (regional disks). */
export const LABEL_MULTI_ZONE_DELIMITER = '__';

export const READ_WRITE_ONCE_POD = 'ReadWriteOncePod';
/** storage.VolumeBindingWaitForFirstConsumer: binding and provisioning wait for the pod's node. */
export const VOLUME_BINDING_WAIT = 'WaitForFirstConsumer';
