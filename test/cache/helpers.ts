// The cache tests' one helper beyond the shared builders: the next watch event's version of a pod.
import type { Pod } from '../../src/cluster/types.ts';
import { makePod } from '../helpers/objects.ts';

/** The same pod (same UID) with changes and the next resourceVersion, as the next watch event would carry it. */
export function withChanges(pod: Pod, o: Parameters<typeof makePod>[1]): Pod {
  return makePod(pod.metadata.name, {
    uid: pod.metadata.uid,
    namespace: pod.metadata.namespace,
    resourceVersion: String(Number(pod.metadata.resourceVersion) + 1),
    nodeName: pod.spec.nodeName,
    containers: pod.spec.containers,
    volumes: pod.spec.volumes,
    ...o,
  });
}
