// Which pending pods the report may explain once for all: pods alike in everything the verdicts read (namespace,
// labels, controller, spec) and whose claims, if any, are alike in content and anonymous, that is nothing in the
// cluster tells one from the other by name. A claim is anonymous when it is unbound, not being deleted, the same object
// in the store and in the binder's assume cache (no assumption pending), no PV's claimRef names it, no provision of it
// is in flight, and no pod other than this one names it. Such claims differ only in their names, which no verdict of
// the default profile and no reason string reads: replicas of a StatefulSet waiting for WaitForFirstConsumer claims
// of one template share one explanation (test/ops/pending-equivalence.test.ts checks this against each pod alone).
import type { ClusterStore } from '../cluster/store.ts';
import { namespaceOf, type PersistentVolumeClaim, type Pod } from '../cluster/types.ts';
import type { ExtenderDeps } from '../extender/deps.ts';
import type { VolumeBinder } from '../volumes/binder.ts';
import { podClaimRefs } from '../volumes/claims.ts';

// Held objects are never mutated (writers commit copies): what is computed from one stays true of it. The report
// computes keys for every pending pod at every refresh.
const CLAIM_CONTENT = new WeakMap<PersistentVolumeClaim, string>();
const POD_KEY = new WeakMap<Pod, string>();

/** How many pods (any phase, any scheduler, bound or not) name each claim `namespace/name`, fed by Pod events. */
export class ClaimReferences {
  readonly #counts = new Map<string, number>();

  add(pod: Pod): void {
    this.#change(pod, 1);
  }

  remove(pod: Pod): void {
    this.#change(pod, -1);
  }

  count(claimKey: string): number {
    return this.#counts.get(claimKey) ?? 0;
  }

  #change(pod: Pod, by: number): void {
    const volumes = pod.spec.volumes;
    if (!volumes) return;
    const ns = namespaceOf(pod);
    for (const ref of podClaimRefs(pod)) {
      const key = `${ns}/${ref.name}`;
      const n = (this.#counts.get(key) ?? 0) + by;
      if (n > 0) this.#counts.set(key, n);
      else this.#counts.delete(key);
    }
  }
}

/** The claims' side of equivalence: a claim's content when it is anonymous (above), else undefined. */
export class ClaimSituation {
  readonly #store: ClusterStore;
  readonly #binder: VolumeBinder | undefined;
  readonly references: ClaimReferences;

  constructor(deps: Pick<ExtenderDeps, 'store' | 'volumeBinder'>, references: ClaimReferences) {
    this.#store = deps.store;
    // Without VolumeBinding (disabled) nothing says whether a claim is in flight: such pods are explained alone.
    this.#binder = deps.volumeBinder;
    this.references = references;
  }

  /** The claim's content without its identity, when nothing but its content can matter to a verdict. */
  anonymousContent(namespace: string, name: string): string | undefined {
    const binder = this.#binder;
    if (!binder) return undefined;
    const key = `${namespace}/${name}`;
    const pvc = binder.claim(namespace, name);
    if (!pvc || pvc !== this.#store.get('PersistentVolumeClaim', key)) return undefined;
    if (pvc.spec.volumeName || pvc.metadata.deletionTimestamp || pvc.status?.phase === 'Lost') return undefined;
    if (binder.pvCache.referencesClaim(key) || binder.inFlight.has(key) || this.references.count(key) !== 1)
      return undefined;
    let content = CLAIM_CONTENT.get(pvc);
    if (content === undefined) {
      const { name: _n, uid: _u, resourceVersion: _r, creationTimestamp: _c, ...meta } = pvc.metadata;
      content = JSON.stringify({ ...pvc, metadata: meta });
      CLAIM_CONTENT.set(pvc, content);
    }
    return content;
  }
}

/**
 * Pods with the same key explain alike: same namespace, spec, labels and controller, claims of the same content and
 * anonymous (ClaimSituation), and nothing the verdicts read per pod (a nomination, which filter skips for the pod
 * itself; generic ephemeral claims, owned by their pod). undefined for a pod that must be explained on its own.
 */
export function equivalenceKey(pod: Pod, claims?: ClaimSituation): string | undefined {
  if (pod.status?.nominatedNodeName) return undefined;
  const refs = podClaimRefs(pod);
  let key = podKey(pod);
  if (refs.length > 0) {
    if (!claims) return undefined;
    const ns = namespaceOf(pod);
    for (const ref of refs) {
      const content = ref.ephemeral ? undefined : claims.anonymousContent(ns, ref.name);
      if (content === undefined) return undefined;
      key += `\n${content}`;
    }
  }
  return key;
}

/** The pod's part of its key: the claims' names go, their contents in volume order stand for them. */
function podKey(pod: Pod): string {
  let key = POD_KEY.get(pod);
  if (key !== undefined) return key;
  const spec = {
    ...pod.spec,
    volumes: pod.spec.volumes?.map((v) =>
      v.persistentVolumeClaim ? { ...v, persistentVolumeClaim: { ...v.persistentVolumeClaim, claimName: '' } } : v,
    ),
  };
  const controller = pod.metadata.ownerReferences?.find((r) => r.controller)?.uid ?? '';
  key = JSON.stringify([namespaceOf(pod), controller, pod.metadata.labels ?? {}, spec]);
  POD_KEY.set(pod, key);
  return key;
}
