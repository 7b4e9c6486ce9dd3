// The writer of the embedded mode: the API server's write semantics (preconditions, status codes, messages) over the
// cluster-state file's state. Results reach the store on a later turn of the event loop, as a watch event follows an API response.

import { objectKey, type PersistentVolume, type PersistentVolumeClaim, type Pod } from '../types.ts';
import { type ClusterWriter, claimBoundToVolume, type PodPrecondition, unboundVolume, WriteError } from '../writer.ts';
import type { ClusterState } from './state.ts';

function conflict(resource: string, name: string, detail: string): WriteError {
  return new WriteError(409, 'Conflict', `Operation cannot be fulfilled on ${resource} "${name}": ${detail}`);
}

function notFound(resource: string, name: string): WriteError {
  return new WriteError(404, 'NotFound', `${resource} "${name}" not found`);
}

const MODIFIED = 'the object has been modified; please apply your changes to the latest version and try again';

export class ClusterStateWriter implements ClusterWriter {
  readonly #state: ClusterState;

  /** Pass the ClusterStateSource (or anything holding its state). */
  constructor(source: { state: ClusterState }) {
    this.#state = source.state;
  }

  async bindPod(pod: { namespace: string; name: string; uid: string }, nodeName: string): Promise<void> {
    const current = this.#state.get('Pod', `${pod.namespace}/${pod.name}`);
    if (!current) throw notFound('pods', pod.name);
    // The API answers a UID mismatch with a precondition Conflict; here it means the pod we scheduled is gone.
    if (current.metadata.uid !== pod.uid) {
      throw new WriteError(
        404,
        'NotFound',
        `pods "${pod.name}" not found (UID in precondition: ${pod.uid}, UID in object meta: ${current.metadata.uid})`,
      );
    }
    if (current.metadata.deletionTimestamp) {
      throw conflict('pods/binding', pod.name, `pod ${pod.name} is being deleted, cannot be assigned to a host`);
    }
    if (current.spec.nodeName) {
      throw conflict(
        'pods/binding',
        pod.name,
        `pod ${pod.name} is already assigned to node "${current.spec.nodeName}"`,
      );
    }
    this.#state.commit('Pod', { ...current, spec: { ...current.spec, nodeName } });
  }

  async nominatePod(pod: PodPrecondition, nodeName: string): Promise<void> {
    const current = this.#state.get('Pod', `${pod.namespace}/${pod.name}`);
    if (!current) throw notFound('pods', pod.name);
    if (current.metadata.uid !== pod.uid) {
      throw conflict(
        'pods',
        pod.name,
        `Precondition failed: UID in precondition: ${pod.uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    if (pod.resourceVersion && current.metadata.resourceVersion !== pod.resourceVersion)
      throw conflict(
        'pods',
        pod.name,
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    this.#state.commit('Pod', { ...current, status: { ...current.status, nominatedNodeName: nodeName } });
  }

  async updatePersistentVolume(pv: PersistentVolume): Promise<PersistentVolume> {
    const current = this.#state.get('PersistentVolume', pv.metadata.name);
    if (!current) throw notFound('persistentvolumes', pv.metadata.name);
    this.#checkPreconditions('persistentvolumes', pv, current);
    // status is a subresource: a plain update keeps the stored status, as the API does.
    const metadata = { ...pv.metadata, uid: current.metadata.uid };
    return structuredClone(this.#state.commit('PersistentVolume', { ...pv, metadata, status: current.status }));
  }

  async updatePersistentVolumeClaim(pvc: PersistentVolumeClaim): Promise<PersistentVolumeClaim> {
    const current = this.#state.get('PersistentVolumeClaim', objectKey('PersistentVolumeClaim', pvc));
    if (!current) throw notFound('persistentvolumeclaims', pvc.metadata.name);
    this.#checkPreconditions('persistentvolumeclaims', pvc, current);
    const metadata = { ...pvc.metadata, namespace: current.metadata.namespace, uid: current.metadata.uid };
    return structuredClone(this.#state.commit('PersistentVolumeClaim', { ...pvc, metadata, status: current.status }));
  }

  unbindPersistentVolume(pv: PersistentVolume): Promise<PersistentVolume> {
    return this.updatePersistentVolume(unboundVolume(pv));
  }

  bindClaimToVolume(
    pvc: PersistentVolumeClaim,
    volumeName: string,
    annotations: Record<string, string | null>,
  ): Promise<PersistentVolumeClaim> {
    return this.updatePersistentVolumeClaim(claimBoundToVolume(pvc, volumeName, annotations));
  }

  async getPod(namespace: string, name: string): Promise<Pod | undefined> {
    const pod = this.#state.get('Pod', `${namespace}/${name}`);
    return pod && structuredClone(pod);
  }

  async getPersistentVolume(name: string): Promise<PersistentVolume | undefined> {
    const pv = this.#state.get('PersistentVolume', name);
    return pv && structuredClone(pv);
  }

  async getPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined> {
    const pvc = this.#state.get('PersistentVolumeClaim', `${namespace}/${name}`);
    return pvc && structuredClone(pvc);
  }

  #checkPreconditions(
    resource: string,
    update: PersistentVolume | PersistentVolumeClaim,
    current: PersistentVolume | PersistentVolumeClaim,
  ): void {
    const { name, uid, resourceVersion } = update.metadata;
    if (uid && uid !== current.metadata.uid) {
      throw conflict(
        resource,
        name,
        `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    // An update without a resourceVersion is unconditional, as with the API.
    if (resourceVersion && resourceVersion !== current.metadata.resourceVersion)
      throw conflict(resource, name, MODIFIED);
  }
}
