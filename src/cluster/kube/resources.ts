// Where each stored kind lives in the API: group/version path, plural resource name, namespaced or not.
import { DEFAULT_NAMESPACE, type Kind } from '../types.ts';

export interface ResourceInfo {
  kind: Kind;
  apiVersion: string;
  /** Path prefix of the group version: `/api/v1` or `/apis/storage.k8s.io/v1`. */
  prefix: string;
  plural: string;
  namespaced: boolean;
}

function info(kind: Kind, apiVersion: string, plural: string, namespaced: boolean): ResourceInfo {
  const prefix = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return { kind, apiVersion, prefix, plural, namespaced };
}

export const RESOURCES: Readonly<Record<Kind, ResourceInfo>> = {
  Node: info('Node', 'v1', 'nodes', false),
  Pod: info('Pod', 'v1', 'pods', true),
  PersistentVolume: info('PersistentVolume', 'v1', 'persistentvolumes', false),
  PersistentVolumeClaim: info('PersistentVolumeClaim', 'v1', 'persistentvolumeclaims', true),
  StorageClass: info('StorageClass', 'storage.k8s.io/v1', 'storageclasses', false),
  CSINode: info('CSINode', 'storage.k8s.io/v1', 'csinodes', false),
  CSIDriver: info('CSIDriver', 'storage.k8s.io/v1', 'csidrivers', false),
  CSIStorageCapacity: info('CSIStorageCapacity', 'storage.k8s.io/v1', 'csistoragecapacities', true),
  PodDisruptionBudget: info('PodDisruptionBudget', 'policy/v1', 'poddisruptionbudgets', true),
  PriorityClass: info('PriorityClass', 'scheduling.k8s.io/v1', 'priorityclasses', false),
  Service: info('Service', 'v1', 'services', true),
  ReplicationController: info('ReplicationController', 'v1', 'replicationcontrollers', true),
  ReplicaSet: info('ReplicaSet', 'apps/v1', 'replicasets', true),
  StatefulSet: info('StatefulSet', 'apps/v1', 'statefulsets', true),
  Namespace: info('Namespace', 'v1', 'namespaces', false),
};

/** The collection path across all namespaces (what list and watch use). */
export function collectionPath(r: ResourceInfo): string {
  return `${r.prefix}/${r.plural}`;
}

/** The path of one object. */
export function objectPath(r: ResourceInfo, name: string, namespace?: string): string {
  const ns = r.namespaced ? `/namespaces/${encodeURIComponent(namespace || DEFAULT_NAMESPACE)}` : '';
  return `${r.prefix}${ns}/${r.plural}/${encodeURIComponent(name)}`;
}
