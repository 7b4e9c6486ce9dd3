// AssumePodVolumes and RevertAssumedPodVolumes (upstream volumebinding/binder.go): the decision for the chosen node
// written into the assume caches only (PVs prebound to their claims, provisioning claims annotated with the node), so
// that the next pod's decisions see it before the API does; reverted to the API's objects on failure.
import type { PersistentVolumeClaim, Pod, StorageClass } from '../cluster/types.ts';
import { claimClass } from '../cluster/volume-annotations.ts';
import { BinderError, type PodVolumes } from './binder.ts';
import { isClaimFullyBound, podClaimRefs } from './claims.ts';
import { ANN_BETA_STORAGE_PROVISIONER, ANN_SELECTED_NODE, ANN_STORAGE_PROVISIONER } from './constants.ts';
import { bindVolumeToClaim, claimKey, isVolumeBoundToClaim } from './pv-matching.ts';
import type { BinderSources } from './sources.ts';

/**
 * The PV controller's setClaimProvisioner, written with selected-node: an external provisioner starts on a claim only
 * once it names it, and the controller, behind its queue and client limit, would add it in a write of its own first.
 * An in-tree provisioner (`kubernetes.io/...`) is left to the controller, which may name a CSI driver for it instead.
 */
function externalProvisioner(pvc: PersistentVolumeClaim, sc: StorageClass | undefined): Record<string, string> {
  const name = sc?.provisioner;
  if (!name || name.startsWith('kubernetes.io/') || pvc.metadata.annotations?.[ANN_STORAGE_PROVISIONER] === name) {
    return {};
  }
  return { [ANN_BETA_STORAGE_PROVISIONER]: name, [ANN_STORAGE_PROVISIONER]: name };
}

/** arePodVolumesBound, through the PVC assume cache. */
export function arePodVolumesBound(sources: BinderSources, pod: Pod): boolean {
  for (const ref of podClaimRefs(pod)) {
    const pvc = sources.claim(pod.metadata.namespace, ref.name);
    if (!pvc || !isClaimFullyBound(pvc)) return false;
  }
  return true;
}

/**
 * AssumePodVolumes: PVs prebound to their claims and provisioning claims annotated with the node, in the caches only.
 * Returns the assumed objects (what bind writes and revert restores), or allBound when there is nothing to do.
 * Refuses a PV that is (assumed) bound to another claim: two pods never book the same PV. Throws; reverts first.
 */
export function assumePodVolumes(
  sources: BinderSources,
  pod: Pod,
  nodeName: string,
  podVolumes: PodVolumes,
): { allBound: boolean; assumed: PodVolumes } {
  if (arePodVolumesBound(sources, pod)) {
    return { allBound: true, assumed: { staticBindings: [], dynamicProvisions: [] } };
  }
  const assumed: PodVolumes = { staticBindings: [], dynamicProvisions: [] };
  try {
    for (const binding of podVolumes.staticBindings) {
      const latest = sources.pvCache.get(binding.pv.metadata.name);
      if (latest?.spec.claimRef && !isVolumeBoundToClaim(latest, binding.pvc)) {
        const ref = latest.spec.claimRef;
        throw new BinderError(
          `persistentvolume "${binding.pv.metadata.name}" is already bound to claim "${ref.namespace}/${ref.name}"`,
        );
      }
      const { pv, dirty } = bindVolumeToClaim(binding.pv, binding.pvc);
      if (dirty) sources.pvCache.assume(pv);
      assumed.staticBindings.push({ pv, pvc: binding.pvc });
    }
    for (const provision of podVolumes.dynamicProvisions) {
      const annotations = provision.pvc.metadata.annotations;
      const pvc: PersistentVolumeClaim = {
        ...provision.pvc,
        metadata: {
          ...provision.pvc.metadata,
          annotations: {
            ...annotations,
            [ANN_SELECTED_NODE]: nodeName,
            ...externalProvisioner(provision.pvc, sources.storageClass(claimClass(provision.pvc))),
          },
        },
      };
      sources.pvcCache.assume(pvc);
      assumed.dynamicProvisions.push({ ...provision, pvc });
    }
  } catch (err) {
    revertAssumedPodVolumes(sources, assumed);
    throw err;
  }
  return { allBound: false, assumed };
}

/** RevertAssumedPodVolumes: back to the API objects; idempotent. */
export function revertAssumedPodVolumes(sources: BinderSources, podVolumes: PodVolumes): void {
  for (const b of podVolumes.staticBindings) sources.pvCache.restore(b.pv.metadata.name);
  for (const p of podVolumes.dynamicProvisions) sources.pvcCache.restore(claimKey(p.pvc));
}
