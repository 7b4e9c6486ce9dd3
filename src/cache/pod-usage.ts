// Everything a pod occupies on its node, computed once when the pod enters the cache so that removing it later
// subtracts exactly what was added, whatever the object the removal event carries.
import { namespacedKey, namespaceOf, objectKey, type Pod } from '../cluster/types.ts';
import type { PodResource } from './resources.ts';

export interface PodUsage {
  readonly resource: PodResource;
  /** "protocol/hostIP/port" keys (upstream HostPortInfo, with its defaults TCP and 0.0.0.0). */
  readonly hostPorts: readonly string[];
  /** "namespace/claimName" of every claim the pod mounts through a persistentVolumeClaim source (upstream PVCRefCounts). */
  readonly claims: readonly string[];
  /** Inline CSI volumes as [driver, handle]. */
  readonly csiVolumes: readonly (readonly [string, string])[];
}

/** Upstream ephemeral.VolumeClaimName: the claim a generic ephemeral volume creates is named `<pod>-<volume>`. */
export function ephemeralClaimName(pod: Pod, volumeName: string): string {
  return `${pod.metadata.name}-${volumeName}`;
}

export function hostPortKey(protocol: string | undefined, hostIP: string | undefined, port: number): string {
  return `${protocol || 'TCP'}/${hostIP || '0.0.0.0'}/${port}`;
}

/** Upstream schedutil.GetHostPorts: regular containers and sidecars; classic init containers have exited by then. */
export function podHostPorts(pod: Pod): string[] {
  const out: string[] = [];
  const sidecars = (pod.spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always');
  const containers = [...sidecars, ...(pod.spec.containers ?? [])];
  for (const c of containers) {
    for (const p of c.ports ?? []) {
      if (p.hostPort && p.hostPort > 0) out.push(hostPortKey(p.protocol, p.hostIP, p.hostPort));
    }
  }
  return out;
}

/**
 * NodeInfo.updatePVCRefCounts: only `persistentVolumeClaim` sources count, as upstream counts them (a generic
 * ephemeral volume's claim belongs to its one pod, and upstream's ReadWriteOncePod check reads only PVC sources too).
 */
export function podClaimKeys(pod: Pod): string[] {
  const ns = namespaceOf(pod);
  const out: string[] = [];
  for (const v of pod.spec.volumes ?? [])
    if (v.persistentVolumeClaim) out.push(namespacedKey(ns, v.persistentVolumeClaim.claimName));
  return out;
}

/** Inline CSI volumes; without a handle a volume is unique to its pod. */
export function podInlineCSIVolumes(pod: Pod): [string, string][] {
  const out: [string, string][] = [];
  for (const v of pod.spec.volumes ?? []) {
    if (v.csi) out.push([v.csi.driver, v.csi.volumeHandle ?? `${objectKey('Pod', pod)}/${v.name}`]);
  }
  return out;
}

/** Most pods use no host ports, claims or inline CSI volumes: one shared empty list saves memory at 150,000 pods. */
const NONE: readonly never[] = Object.freeze([]);

export function orNone<T>(list: T[]): readonly T[] {
  return list.length === 0 ? NONE : list;
}
