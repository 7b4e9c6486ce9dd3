// helper.DefaultSelector (plugins/helper/spread.go): the selector PodTopologySpread's default constraints spread a
// pod by, from what manages it in its namespace. Every Service whose selector matches the pod's labels adds its
// labels; then the pod's controller reference, if it names a ReplicationController (its label map is merged in), a
// ReplicaSet or a StatefulSet (its selector's requirements are added) that exists. A controller is found by name, not
// by matching its selector, and one that is missing or of another kind adds nothing.
import type { ClusterStore } from '../cluster/store.ts';
import {
  type LabelSelector,
  type LabelSelectorRequirement,
  namespaceOf,
  type Pod,
  type ReplicaSet,
  type ReplicationController,
  type Service,
  type StatefulSet,
} from '../cluster/types.ts';

/** What DefaultSelector reads: upstream's Service, ReplicationController, ReplicaSet and StatefulSet listers. */
export interface SpreadSelectorLister {
  services(namespace: string): Iterable<Service>;
  replicationController(namespace: string, name: string): ReplicationController | undefined;
  replicaSet(namespace: string, name: string): ReplicaSet | undefined;
  statefulSet(namespace: string, name: string): StatefulSet | undefined;
}

/** The lister over the store's objects. */
export function storeSelectorLister(store: ClusterStore): SpreadSelectorLister {
  return {
    *services(namespace) {
      for (const s of store.list('Service')) if (namespaceOf(s) === namespace) yield s;
    },
    replicationController: (namespace, name) => store.get('ReplicationController', `${namespace}/${name}`),
    replicaSet: (namespace, name) => store.get('ReplicaSet', `${namespace}/${name}`),
    statefulSet: (namespace, name) => store.get('StatefulSet', `${namespace}/${name}`),
  };
}

function mapMatches(selector: Readonly<Record<string, string>>, labels: Readonly<Record<string, string>>): boolean {
  for (const key in selector) if (!Object.hasOwn(labels, key) || labels[key] !== selector[key]) return false;
  return true;
}

/**
 * metav1.LabelSelectorAsSelector's requirements: matchLabels as `In`, then matchExpressions; undefined when the
 * selector is absent (it selects nothing, so it has no requirements to add) or invalid.
 */
function requirementsOf(selector: LabelSelector | undefined): LabelSelectorRequirement[] | undefined {
  if (!selector) return undefined;
  const out: LabelSelectorRequirement[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    out.push({ key, operator: 'In', values: [value] });
  for (const r of selector.matchExpressions ?? []) {
    const n = r.values?.length ?? 0;
    if (r.operator === 'In' || r.operator === 'NotIn') {
      if (n === 0) return undefined;
    } else if (r.operator === 'Exists' || r.operator === 'DoesNotExist') {
      if (n > 0) return undefined;
    } else return undefined;
    out.push(r);
  }
  return out;
}

/** The pod's default spreading selector, or undefined when it has no requirements (no default constraints then). */
export function defaultSelector(pod: Pod, lister: SpreadSelectorLister): LabelSelector | undefined {
  const namespace = namespaceOf(pod);
  const labels = pod.metadata.labels ?? {};
  let labelSet: Record<string, string> = {};
  for (const service of lister.services(namespace)) {
    const selector = service.spec.selector;
    // A Service without a selector selects nothing, not everything.
    if (selector && mapMatches(selector, labels)) labelSet = { ...labelSet, ...selector };
  }
  const extra: LabelSelectorRequirement[] = [];
  const owner = pod.metadata.ownerReferences?.find((r) => r.controller === true);
  if (owner?.apiVersion === 'v1' && owner.kind === 'ReplicationController') {
    const rc = lister.replicationController(namespace, owner.name);
    if (rc) labelSet = { ...labelSet, ...rc.spec.selector };
  } else if (owner?.apiVersion === 'apps/v1' && (owner.kind === 'ReplicaSet' || owner.kind === 'StatefulSet')) {
    const controller =
      owner.kind === 'ReplicaSet'
        ? lister.replicaSet(namespace, owner.name)
        : lister.statefulSet(namespace, owner.name);
    extra.push(...(requirementsOf(controller?.spec.selector) ?? []));
  }
  if (Object.keys(labelSet).length === 0 && extra.length === 0) return undefined;
  const out: LabelSelector = {};
  if (Object.keys(labelSet).length > 0) out.matchLabels = labelSet;
  if (extra.length > 0) out.matchExpressions = extra;
  return out;
}
