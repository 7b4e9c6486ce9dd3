// kube-controller-manager's PV controller and an external provisioner, as far as several racing schedulers need them
// (volume-controllers.ts is the one-scheduler version, driven by the server's events, without unbinding),
// over the fake API server (in process, so each step is atomic). The PV controller binds a claim that PVs prebound
// (to the latest written: its pick among several is arbitrary) and, as its syncVolume does, unbinds every other PV
// bound by a controller or scheduler (pv.kubernetes.io/bound-by-controller) to a claim bound elsewhere; a user's
// prebinding keeps its claimRef without the UID.
import { boundClaim, provisionClaim } from '../cluster/kube/helpers.ts';
import type { FakeApiServer, FakeObject, RecordedWrite } from './fake-apiserver.ts';

type Spec = { volumeName?: string; claimRef?: { name: string; namespace: string; uid?: string } };
export const specOf = (o: FakeObject) => o.spec as Spec;
export const annotationsOf = (o: FakeObject) => (o.metadata.annotations ?? {}) as Record<string, string>;

const CLAIM_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/persistentvolumeclaims\/([^/]+)$/;
const PV_PATH = /^\/api\/v1\/persistentvolumes\/([^/]+)$/;

export class FakeVolumeControllers {
  readonly #server: FakeApiServer;
  /** Claims the controllers leave alone until settle() (a slow PV controller: a bind stays in flight). */
  readonly paused = new Set<string>();

  /** Takes over server.onWrite; `pvWritten` sees each PV a client wrote with a claimRef UID, before the controller. */
  constructor(
    server: FakeApiServer,
    pvWritten?: (volume: FakeObject, claimUid: string) => void,
    pvCleared?: (name: string) => void,
  ) {
    this.#server = server;
    server.onWrite = (write: RecordedWrite) => {
      if (write.status >= 300) return;
      const claimPath = CLAIM_PATH.exec(write.path);
      if (claimPath) setTimeout(() => this.provision(claimPath[1], claimPath[2]), 5);
      const pvPath = PV_PATH.exec(write.path);
      if (!pvPath) return;
      const volume = server.get('PersistentVolume', pvPath[1]);
      const uid = volume && specOf(volume).claimRef?.uid;
      if (!volume || !uid) {
        pvCleared?.(pvPath[1]);
        return;
      }
      pvWritten?.(volume, uid);
      setTimeout(() => this.syncClaim(uid), 5);
    };
  }

  claimByUid(uid: string): FakeObject | undefined {
    return this.#server.list('PersistentVolumeClaim').find((c) => c.metadata.uid === uid);
  }

  /** external-provisioner, unless the claim is paused. */
  provision(namespace: string, name: string): void {
    if (!this.paused.has(name)) provisionClaim(this.#server, namespace, name);
  }

  /** syncUnboundClaim for a claim PVs prebound, then syncVolume for the PVs it did not take. */
  syncClaim(uid: string): void {
    const server = this.#server;
    const claim = this.claimByUid(uid);
    if (!claim || this.paused.has(claim.metadata.name)) return;
    const named = server.list('PersistentVolume').filter((v) => specOf(v).claimRef?.uid === uid);
    let volumeName = specOf(claim).volumeName;
    if (!volumeName) {
      const chosen = named.sort((a, b) => Number(b.metadata.resourceVersion) - Number(a.metadata.resourceVersion))[0];
      if (!chosen) return;
      volumeName = chosen.metadata.name;
      server.update(boundClaim(claim, volumeName, '10Gi'));
      server.update({ ...chosen, status: { phase: 'Bound' } });
    }
    for (const other of named) if (other.metadata.name !== volumeName) this.#unbindVolume(other);
  }

  /** unbindVolume. */
  #unbindVolume(volume: FakeObject): void {
    const annotations = { ...annotationsOf(volume) };
    const spec = { ...specOf(volume) } as Spec & Record<string, unknown>;
    if (annotations['pv.kubernetes.io/bound-by-controller']) {
      delete annotations['pv.kubernetes.io/bound-by-controller'];
      delete spec.claimRef;
    } else if (spec.claimRef) spec.claimRef = { ...spec.claimRef, uid: undefined };
    this.#server.update({
      ...volume,
      metadata: { ...volume.metadata, annotations },
      spec,
      status: { phase: 'Available' },
    });
  }

  /** The controllers' periodic resync, every claim released, until nothing changes. */
  settle(): void {
    this.paused.clear();
    const server = this.#server;
    for (let round = 0; round < 5; round++) {
      const before = server.resourceVersion;
      for (const v of server.list('PersistentVolume')) {
        const uid = specOf(v).claimRef?.uid;
        if (uid) this.syncClaim(uid);
      }
      for (const c of server.list('PersistentVolumeClaim')) this.provision(c.metadata.namespace!, c.metadata.name);
      if (server.resourceVersion === before) return;
    }
  }
}
