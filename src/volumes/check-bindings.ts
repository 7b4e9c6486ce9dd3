// The read-back checks (upstream's checkBindings, and ours beside it): whether the binder's writes have become the
// API's state, read from the watch (checkBindings, while waiting) or from the API itself (checkPodVolumesFromAPI
// before the Binding; claimsForNode after a claim was lost to another writer). They answer; they never write.
import {
  namespaceOf,
  objectKey,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
} from '../cluster/types.ts';
import { type ClusterWriter, WriteError } from '../cluster/writer.ts';
import type { BindingInfo } from './binder.ts';
import { heldForOtherVolume } from './claim-hold.ts';
import { isClaimFullyBound, podClaimRefs } from './claims.ts';
import { ANN_SELECTED_NODE } from './constants.ts';
import { pvForNode } from './csi-migration.ts';
import { NO_MATCHING_TERMS, pvNodeAffinityMatches } from './node-affinity.ts';
import type { DynamicProvision } from './provisioning.ts';
import { claimKey, isVolumeBoundToClaim } from './pv-matching.ts';
import type { BinderSources } from './sources.ts';

export function rvNumber(obj: { metadata: { resourceVersion: string } }): number {
  const n = Number(obj.metadata.resourceVersion);
  return Number.isFinite(n) ? n : 0;
}

/** The pod's claims against binding it to a node, read from the API (see BindingChecker.claimsForNode). */
export type ClaimsForNode =
  | { state: 'bound' }
  | { state: 'refused'; why: string }
  | { state: 'in-flight'; inFlight: PersistentVolumeClaim[] };

export class BindingChecker {
  readonly #sources: BinderSources;
  readonly #writer: ClusterWriter;
  readonly #now: () => number;

  constructor(sources: BinderSources, writer: ClusterWriter, now: () => number) {
    this.#sources = sources;
    this.#writer = writer;
    this.#now = now;
  }

  /**
   * The last check before the pod's Binding, on the API's objects read now rather than on this process's decisions
   * or watch: every claim of the pod is bound to a PV that is bound back to it and whose node affinity the node
   * satisfies, or is being provisioned for this node. Returns why not, or undefined.
   * `written`: the claims (by name) whose binding this bind wrote, both halves, with the API's answers to those
   * writes: already read from the API, and for good (a claim's volumeName never changes once set), so not read again.
   * Nor is a claim the watch shows settled (see #settledInWatch): upstream reads nothing before a bound claim's pod's
   * Binding, and a recreated StatefulSet pod should not wait two API round trips for facts that cannot change.
   */
  async checkPodVolumesFromAPI(
    pod: Pod,
    nodeName: string,
    written: ReadonlyMap<string, BindingInfo> = new Map(),
  ): Promise<string | undefined> {
    const node = this.#sources.store.get('Node', nodeName);
    if (!node) return `node "${nodeName}" not found`;
    const csiNode = this.#sources.csiNode(nodeName);
    const namespace = namespaceOf(pod);
    const problems = await Promise.all(
      podClaimRefs(pod).map(async ({ name }) => {
        const known = written.get(name) ?? this.#settledInWatch(namespace, name);
        const pvc = known?.pvc ?? (await this.#writer.getPersistentVolumeClaim(namespace, name));
        if (!pvc) return `persistentvolumeclaim "${namespace}/${name}" not found`;
        const volumeName = pvc.spec.volumeName;
        if (!volumeName) {
          if (pvc.metadata.annotations?.[ANN_SELECTED_NODE] === nodeName) return undefined;
          return `claim "${namespace}/${name}" is not bound`;
        }
        const pv = known?.pv ?? (await this.#writer.getPersistentVolume(volumeName));
        if (!pv) return `claim "${namespace}/${name}" is bound to a missing volume "${volumeName}"`;
        // Its claimRef names this claim (a UID, when set, must be the claim's: a PV the PV controller bound has one).
        if (!isVolumeBoundToClaim(pv, pvc)) {
          return `volume "${volumeName}" is not bound to claim "${namespace}/${name}"`;
        }
        if (!pvNodeAffinityMatches(pvForNode(pv, csiNode), node.metadata.labels)) {
          return `pv "${volumeName}" node affinity doesn't match node "${nodeName}": ${NO_MATCHING_TERMS}`;
        }
        return undefined;
      }),
    );
    return problems.find((p) => p !== undefined);
  }

  /**
   * The claim and its PV as the watch has them (never assumed objects), when that is final: the claim fully bound
   * (its bind-completed annotation) and not being deleted, its PV bound back to it by UID. A claim's volumeName never
   * changes once set, and neither object can go while a pod uses the claim (the pvc- and pv-protection finalizers),
   * so a later read could only say the same.
   */
  #settledInWatch(namespace: string, name: string): BindingInfo | undefined {
    const { store } = this.#sources;
    const pvc = store.get('PersistentVolumeClaim', `${namespace}/${name}`);
    if (!pvc || pvc.metadata.deletionTimestamp || !isClaimFullyBound(pvc)) return undefined;
    const pv = store.get('PersistentVolume', pvc.spec.volumeName!);
    if (!pv?.spec.claimRef?.uid || !isVolumeBoundToClaim(pv, pvc)) return undefined;
    return { pvc, pv };
  }

  /**
   * checkBindings, on API objects: true when all bound, false to keep waiting; throws when binding must be retried.
   * `untilProvisioned`: a claim to provision counts once a PV names it, before the PV controller binds it.
   */
  checkBindings(
    pod: Pod,
    nodeName: string,
    bindings: readonly BindingInfo[],
    provisions: readonly DynamicProvision[],
    untilProvisioned = false,
  ): boolean {
    const node = this.#sources.store.get('Node', nodeName);
    if (!node) throw new Error(`failed to get node "${nodeName}": node "${nodeName}" not found`);
    const csiNode = this.#sources.csiNode(nodeName);
    const podKey = objectKey('Pod', pod);
    if (!this.#sources.store.get('Pod', podKey)) {
      throw new Error(`pod does not exist any more: pods "${pod.metadata.name}" not found`);
    }
    const labels = node.metadata.labels;
    for (const b of bindings) {
      const name = b.pv.metadata.name;
      const watchedPV = this.#sources.pvCache.getAPI(name);
      if (!watchedPV) throw new Error(`failed to check binding: could not find v1.PersistentVolume "${name}"`);
      const watchedPVC = this.#sources.pvcCache.getAPI(claimKey(b.pvc));
      if (!watchedPVC)
        throw new Error(`failed to check binding: could not find v1.PersistentVolumeClaim "${claimKey(b.pvc)}"`);
      // When this bind wrote both halves (bind-writes.ts #bindClaim), the API's answers to its writes are as good as
      // their watch events, which a burst delays by seconds; otherwise wait for the watch to deliver our PV write.
      const claimWritten = b.pvc.spec.volumeName === name;
      const pv = claimWritten && rvNumber(b.pv) > rvNumber(watchedPV) ? b.pv : watchedPV;
      const pvc = claimWritten && rvNumber(b.pvc) > rvNumber(watchedPVC) ? b.pvc : watchedPVC;
      if (rvNumber(b.pv) > rvNumber(pv)) return false;
      // Another writer's PV won the claim (not upstream's check: upstream assumes it is the only writer).
      if (pvc.spec.volumeName && pvc.spec.volumeName !== name) {
        const why = `claim "${claimKey(pvc)}" was bound to volume "${pvc.spec.volumeName}", not "${name}"`;
        throw new WriteError(409, 'Conflict', why);
      }
      if (!pvNodeAffinityMatches(pvForNode(pv, csiNode), labels)) {
        throw new Error(`pv "${name}" node affinity doesn't match node "${nodeName}": ${NO_MATCHING_TERMS}`);
      }
      if (!pv.spec.claimRef?.uid) throw new Error(`ClaimRef got reset for pv "${name}"`);
      if (!isVolumeBoundToClaim(pv, pvc)) throw new Error(`pv "${name}" was bound to another claim`);
      // When this bind wrote the claim's half (bind-writes.ts #bindClaim), the claim's volumeName can never change
      // again: only the controller's Bound phases remain. Otherwise upstream's rule: wait for the controller's
      // bind-completed.
      if (rvNumber(b.pvc) > rvNumber(pvc)) return false;
      if (claimWritten ? pvc.spec.volumeName !== name : !isClaimFullyBound(pvc)) return false;
    }
    for (const { pvc: claim } of provisions) {
      const key = claimKey(claim);
      const pvc = this.#sources.pvcCache.getAPI(key);
      if (!pvc) throw new Error(`failed to check provisioning pvc: could not find v1.PersistentVolumeClaim "${key}"`);
      if (rvNumber(claim) > rvNumber(pvc)) return false;
      const ann = pvc.metadata.annotations;
      if (!ann) throw new Error(`selectedNode annotation reset for PVC "${pvc.metadata.name}"`);
      if ((ann[ANN_SELECTED_NODE] ?? '') !== nodeName) {
        // The provisioner removes the annotation to ask the scheduler to retry.
        throw new Error(`provisioning failed for PVC "${pvc.metadata.name}"`);
      }
      // The external-provisioner's PV names the claim (by uid) before the PV controller binds it.
      const volumeName =
        pvc.spec.volumeName ||
        (untilProvisioned ? this.#sources.pvCache.apiVolumeClaimedBy(key, pvc.metadata.uid)?.metadata.name : '');
      if (volumeName) {
        const pv = this.#sources.pvCache.getAPI(volumeName);
        if (!pv) return false; // not delivered yet
        if (!pvNodeAffinityMatches(pvForNode(pv, csiNode), labels)) {
          throw new Error(
            `pv "${pv.metadata.name}" node affinity doesn't match node "${nodeName}": ${NO_MATCHING_TERMS}`,
          );
        }
        if (untilProvisioned) continue;
      }
      // As for a static binding: a claim half this bind wrote is the binding done; else upstream's bind-completed.
      const halfWritten = claim.spec.volumeName;
      if (halfWritten ? pvc.spec.volumeName !== halfWritten : !isClaimFullyBound(pvc)) return false;
    }
    return true;
  }

  /**
   * The pod's claims, read from the API now, against binding the pod to `nodeName` (after a claim was lost to another
   * writer): all bound to PVs that fit it; one that keeps the pod off it (why); or those another bind may still bind
   * for it.
   */
  async claimsForNode(pod: Pod, nodeName: string): Promise<ClaimsForNode> {
    const node = this.#sources.store.get('Node', nodeName);
    if (!node) return { state: 'refused', why: `node "${nodeName}" not found` };
    const csiNode = this.#sources.csiNode(nodeName);
    const fits = (pv: PersistentVolume | undefined) =>
      !!pv && pvNodeAffinityMatches(pvForNode(pv, csiNode), node.metadata.labels);
    const namespace = namespaceOf(pod);
    const now = this.#now();
    const inFlight: PersistentVolumeClaim[] = [];
    for (const { name } of podClaimRefs(pod)) {
      const key = `${namespace}/${name}`;
      const pvc = await this.#writer.getPersistentVolumeClaim(namespace, name);
      if (!pvc) return { state: 'refused', why: `persistentvolumeclaim "${key}" not found` };
      const refused = (how: string, volume: string) => ({
        state: 'refused' as const,
        why: `claim "${key}" is ${how} volume "${volume}", which does not fit node "${nodeName}"`,
      });
      const volumeName = pvc.spec.volumeName;
      if (volumeName) {
        const pv = await this.#writer.getPersistentVolume(volumeName);
        if (!pv || !isVolumeBoundToClaim(pv, pvc) || !fits(pv)) return refused('bound to', volumeName);
        continue;
      }
      const held = heldForOtherVolume(pvc, '', now, (n) => this.#sources.pvCache.getAPI(n));
      const prebound = this.#sources.pvCache.apiVolumeClaimedBy(key, pvc.metadata.uid);
      if (held) {
        if (!fits(this.#sources.pvCache.getAPI(held))) return refused('held for', held);
      } else if (prebound) {
        if (!fits(prebound)) return refused('prebound to', prebound.metadata.name);
      } else if (!pvc.metadata.annotations?.[ANN_SELECTED_NODE]) {
        return { state: 'refused', why: `claim "${key}" is not bound, and no other bind holds it` };
      }
      inFlight.push(pvc);
    }
    return inFlight.length > 0 ? { state: 'in-flight', inFlight } : { state: 'bound' };
  }
}
