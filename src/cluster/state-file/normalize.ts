// Fills what `kubectl get -o yaml` always prints but a hand-written cluster-state file may omit, deterministically,
// so that reloading the same file yields the same identities.
import { createHash } from 'node:crypto';
import { DEFAULT_NAMESPACE, type Kind, type KindMap, NAMESPACED } from '../types.ts';
import type { Json } from './validate.ts';

/** A UUID-shaped (RFC 4122 version 5 layout) hash of the object's identity: stable across reloads and restarts. */
export function synthesizeUid(kind: Kind, namespace: string | undefined, name: string): string {
  const h = createHash('sha256')
    .update(`${kind}/${namespace ?? ''}/${name}`)
    .digest('hex');
  const variant = ((Number.parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * Returns a copy with namespace, uid and spec filled in. `metadata.resourceVersion` stays `""` when the file gives
 * none (or a non-integer one): the cluster state (state.ts) assigns it, since only it knows what was stored before.
 */
export function normalizeObject<K extends Kind>(kind: K, raw: Json): KindMap[K] {
  const meta = { ...(raw.metadata as Json) };
  if (NAMESPACED.has(kind)) meta.namespace = (meta.namespace as string | undefined) || DEFAULT_NAMESPACE;
  else delete meta.namespace;
  if (!meta.uid) meta.uid = synthesizeUid(kind, meta.namespace as string | undefined, meta.name as string);
  const rv = meta.resourceVersion === undefined || meta.resourceVersion === null ? '' : String(meta.resourceVersion);
  meta.resourceVersion = /^\d+$/.test(rv) ? rv : '';
  const out: Json = { ...raw, metadata: meta };
  const specKinds: Kind[] = [
    'PersistentVolume',
    'PersistentVolumeClaim',
    'CSINode',
    'CSIDriver',
    'PodDisruptionBudget',
  ];
  if (specKinds.includes(kind) && !out.spec) out.spec = {};
  return out as unknown as KindMap[K];
}
