import { trimObject } from '../cluster/trim.ts';
import { DEFAULT_NAMESPACE, type Pod } from '../cluster/types.ts';
import type { WirePod } from './wire.ts';

/** The request's pod as the trimmed object the plugins read (namespace defaulted, timestamps normalised). */
export function podFromRequest(pod: WirePod): Pod {
  const raw = pod as unknown as Pod;
  const trimmed = trimObject('Pod', {
    ...raw,
    metadata: { ...raw.metadata, namespace: raw.metadata.namespace || DEFAULT_NAMESPACE },
    spec: raw.spec ?? { containers: [] },
  });
  return trimmed;
}
