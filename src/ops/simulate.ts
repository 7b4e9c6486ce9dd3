// Simulate: place N replicas of a pod template one after another as kube-scheduler would (its default profile's
// filters on every node, then the highest weighted score), each placement assumed on a private copy of the state: its static PVs bound, its claims
// provisioned by the cluster-state mode's simulated provisioner, the pod added to its node. Nothing reaches the cluster or
// the verbs. Deterministic: among equal scores the first node in the cache's order wins (kube-scheduler picks one at
// random), and every node is judged (kube-scheduler stops at a share of a large cluster's nodes).

import type { NodeInfo } from '../cache/node-info.ts';
import { unavailableKindNotes } from '../cluster/analysis-kinds.ts';
import { bindClaim, bindVolume } from '../cluster/state-file/bind.ts';
import { type ProvisioningView, planProvisioning } from '../cluster/state-file/provision.ts';
import type { ClusterStore } from '../cluster/store.ts';
import {
  DEFAULT_NAMESPACE,
  type Kind,
  type KindMap,
  type LabelSelector,
  namespaceOf,
  objectKey,
  type PersistentVolumeClaim,
  type Pod,
  type StatefulSet,
} from '../cluster/types.ts';
import { ANN_SELECTED_NODE } from '../cluster/volume-annotations.ts';
import { BadRequestError, type ExtenderDeps } from '../extender/deps.ts';
import { podFromRequest } from '../extender/pod.ts';
import type { WirePod } from '../extender/wire.ts';
import { CycleState } from '../framework/cycle-state.ts';
import { isSuccess } from '../framework/interfaces.ts';
import { FrameworkError } from '../framework/runner.ts';
import { VOLUME_BINDING, type VolumeBindingPlugin, type VolumePluginsSettings } from '../plugins/index.ts';
import type { PodVolumes } from '../volumes/binder.ts';
import { hasClaims } from '../volumes/claims.ts';
import { type ExplainAnswer, explain, resolvePod } from './explain.ts';
import { defaultProfileFramework, selectHost } from './profile.ts';
import { copyOf } from './what-if.ts';

export const MAX_REPLICAS = 1000;

/** The part of a StatefulSet simulate reads. */
export interface StatefulSetTemplate {
  kind: 'StatefulSet';
  metadata: { name: string; namespace?: string; uid?: string };
  spec: {
    replicas?: number;
    /** Its replicas spread by it (PodTopologySpread's default constraints), as the controller's pods would. */
    selector?: LabelSelector;
    template: { metadata?: { labels?: Record<string, string> }; spec: Record<string, unknown> };
    volumeClaimTemplates?: { metadata: { name: string }; spec: Record<string, unknown> }[];
  };
}

export interface SimulateRequest {
  /** A StatefulSet: its pod template and volumeClaimTemplates, replicas named `<set>-<ordinal>`. */
  statefulSet?: StatefulSetTemplate;
  /** Or a pod (or `namespace`/`name` of a pod in the cache): replicas named `<pod>-<i>`, same volumes. */
  pod?: WirePod;
  namespace?: string;
  name?: string;
  /** How many to place (default: the StatefulSet's replicas, else 1). */
  replicas?: number;
  /** Nodes to consider (default: every node in the cache). */
  nodes?: string[];
  /** Default-profile plugins to leave out, by kube-scheduler's names. */
  disabledPlugins?: string[];
}

export interface Placement {
  pod: string;
  node: string;
  /** The extender's prioritize score on that node (0..10). */
  score: number;
  /**
   * The default profile's weighted score there plus the extender's at weight 1 (×10), as kube-scheduler sums them;
   * 0 when only one node fit (upstream does not score then).
   */
  totalScore: number;
  /** Claims bound to existing PVs. */
  boundVolumes: { claim: string; volume: string }[];
  /** Claims to provision, with the CSIStorageCapacity that admitted each (if one applied). */
  provisionedClaims: { claim: string; storageClass: string; capacity: string | null }[];
}

export interface SimulateAnswer {
  requested: number;
  placed: number;
  placements: Placement[];
  /** The first replica that does not fit, with explain's summary and nodes (listed up to 20). */
  unplaced: { pod: string; explanation: ExplainAnswer } | null;
  /** What the placements could not model: the analysis-only kinds the source cannot serve. */
  notes?: string[];
}

interface Replicas {
  pods: Pod[];
  claims: PersistentVolumeClaim[][];
  /** The StatefulSet the replicas belong to, which exists (in the private state) before its pods do. */
  owner?: StatefulSet;
}

function replicaPods(deps: ExtenderDeps, req: SimulateRequest): Replicas {
  const set = req.statefulSet;
  if (set) {
    if (set.kind !== 'StatefulSet') throw new BadRequestError('statefulSet.kind must be StatefulSet');
    const count = req.replicas ?? set.spec.replicas ?? 1;
    const namespace = set.metadata.namespace || DEFAULT_NAMESPACE;
    const owner: StatefulSet = {
      metadata: {
        name: set.metadata.name,
        namespace,
        uid: set.metadata.uid || `simulate:${namespace}/${set.metadata.name}`,
        resourceVersion: '',
      },
      spec: set.spec.selector ? { selector: set.spec.selector } : {},
    };
    const ownerReferences = [
      {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        name: set.metadata.name,
        uid: owner.metadata.uid,
        controller: true,
      },
    ];
    const pods: Pod[] = [];
    const claims: PersistentVolumeClaim[][] = [];
    for (let i = 0; i < count; i++) {
      const name = `${set.metadata.name}-${i}`;
      const templates = set.spec.volumeClaimTemplates ?? [];
      // The StatefulSet controller's claim for a template: <template>-<set>-<ordinal>, mounted as the template's name.
      const own = templates.map((t) => ({
        kind: 'PersistentVolumeClaim' as const,
        metadata: {
          name: `${t.metadata.name}-${name}`,
          namespace,
          uid: `simulate:${namespace}/${t.metadata.name}-${name}`,
          resourceVersion: '',
        },
        spec: t.spec as PersistentVolumeClaim['spec'],
        status: { phase: 'Pending' },
      }));
      const spec = set.spec.template.spec as Pod['spec'];
      const named = new Set(templates.map((t) => t.metadata.name));
      const volumes = [
        ...(spec.volumes ?? []).filter((v) => !named.has(v.name)),
        ...templates.map((t) => ({
          name: t.metadata.name,
          persistentVolumeClaim: { claimName: `${t.metadata.name}-${name}` },
        })),
      ];
      pods.push(
        podFromRequest({
          metadata: {
            name,
            namespace,
            uid: `simulate:${namespace}/${name}`,
            labels: set.spec.template.metadata?.labels,
            ownerReferences,
          },
          spec: { ...spec, volumes },
        } as unknown as WirePod),
      );
      claims.push(own);
    }
    return { pods, claims, owner };
  }
  if (!req.pod && !req.name) {
    throw new BadRequestError('one of statefulSet, pod (a full Pod object) or name (with namespace) must be set');
  }
  const template = resolvePod(deps, req);
  const count = req.replicas ?? 1;
  const pods = Array.from({ length: count }, (_, i) => {
    const name = `${template.metadata.name}-${i}`;
    const namespace = namespaceOf(template);
    return {
      ...template,
      metadata: { ...template.metadata, name, uid: `simulate:${namespace}/${name}` },
      spec: { ...template.spec, nodeName: undefined },
    } as Pod;
  });
  return { pods, claims: pods.map(() => []) };
}

/** Writes to the private store with resourceVersions above any real one (the assume caches compare them). */
class PrivateWriter {
  readonly #store: ClusterStore;
  // Above any etcd revision a copied object can carry, and still an exact integer.
  #version = 2 ** 52;

  constructor(store: ClusterStore) {
    this.#store = store;
  }

  write<K extends Kind>(kind: K, obj: KindMap[K]): KindMap[K] {
    const stored = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(++this.#version) } } as KindMap[K];
    this.#store.upsert(kind, stored);
    return this.#store.get(kind, objectKey(kind, stored)) ?? stored;
  }
}

function view(store: ClusterStore): ProvisioningView {
  return {
    get: (kind, key) => store.get(kind, key),
    list: (kind) => [...store.list(kind)],
  } as ProvisioningView;
}

/** Carries out a placement on the private state: what the PV controller, provisioner and kubelet would do. */
function assume(store: ClusterStore, writer: PrivateWriter, pod: Pod, node: string, volumes: PodVolumes): Placement {
  const placement: Placement = {
    pod: objectKey('Pod', pod),
    node,
    score: 0,
    totalScore: 0,
    boundVolumes: [],
    provisionedClaims: [],
  };
  for (const { pv, pvc } of volumes.staticBindings) {
    const claim = store.get('PersistentVolumeClaim', objectKey('PersistentVolumeClaim', pvc)) ?? pvc;
    const bound = writer.write('PersistentVolume', bindVolume(pv, claim) ?? pv);
    const boundClaim = bindClaim(claim, bound);
    if (boundClaim) writer.write('PersistentVolumeClaim', boundClaim);
    placement.boundVolumes.push({
      claim: objectKey('PersistentVolumeClaim', claim),
      volume: pv.metadata.name,
    });
  }
  for (const { pvc, nodeCapacity } of volumes.dynamicProvisions) {
    const key = objectKey('PersistentVolumeClaim', pvc);
    const current = store.get('PersistentVolumeClaim', key) ?? pvc;
    const annotated = writer.write('PersistentVolumeClaim', {
      ...current,
      metadata: { ...current.metadata, annotations: { ...current.metadata.annotations, [ANN_SELECTED_NODE]: node } },
    });
    const plan = planProvisioning(view(store), annotated);
    if (plan.action === 'create') {
      const pv = writer.write('PersistentVolume', plan.pv);
      if (plan.capacity) writer.write('CSIStorageCapacity', plan.capacity);
      const boundClaim = bindClaim(annotated, pv);
      if (boundClaim) writer.write('PersistentVolumeClaim', boundClaim);
    }
    placement.provisionedClaims.push({
      claim: key,
      storageClass: pvc.spec.storageClassName ?? '',
      capacity: nodeCapacity ? `${nodeCapacity.metadata.namespace ?? ''}/${nodeCapacity.metadata.name}` : null,
    });
  }
  writer.write('Pod', { ...pod, spec: { ...pod.spec, nodeName: node }, status: { phase: 'Running' } });
  return placement;
}

/** The volumes the filter decided for the pod on the node (remembered by VolumeBinding), else found again. */
function decision(binding: VolumeBindingPlugin | undefined, pod: Pod, node: string): PodVolumes {
  const none: PodVolumes = { staticBindings: [], dynamicProvisions: [] };
  if (!binding) return none;
  const { binder } = binding;
  const remembered = binding.decisions.get(pod.metadata.uid, node, binder.generation());
  if (remembered) return remembered;
  const nodeObj = binder.node(node);
  if (!nodeObj || !hasClaims(pod) || binder.podClaimsError(pod)) return none;
  return binder.findPodVolumes(pod, binder.getPodVolumeClaims(pod), nodeObj).podVolumes;
}

export function simulate(deps: ExtenderDeps, settings: VolumePluginsSettings, req: SimulateRequest): SimulateAnswer {
  const { pods, claims, owner } = replicaPods(deps, req);
  if (pods.length > MAX_REPLICAS) throw new BadRequestError(`replicas must be at most ${MAX_REPLICAS}`);
  const copy = copyOf(deps.store, settings);
  const { store, deps: own } = copy;
  const writer = new PrivateWriter(store);
  if (owner) writer.write('StatefulSet', owner);
  const binding = own.framework.plugins.find((p) => p.name === VOLUME_BINDING) as VolumeBindingPlugin | undefined;
  const framework = defaultProfileFramework(own, req.disabledPlugins);
  const lookup = (name: string) => {
    const info = own.cache.nodeInfo(name);
    return info?.node ? info : undefined;
  };
  const answer: SimulateAnswer = { requested: pods.length, placed: 0, placements: [], unplaced: null };
  const notes = unavailableKindNotes(deps.sourceStatus?.() ?? []);
  if (notes.length > 0) answer.notes = notes;
  for (const [i, pod] of pods.entries()) {
    // A claim the StatefulSet controller would find already there is reused, as the controller does.
    for (const c of claims[i]) {
      if (!store.get('PersistentVolumeClaim', objectKey('PersistentVolumeClaim', c)))
        writer.write('PersistentVolumeClaim', c);
    }
    writer.write('Pod', pod);
    const names = req.nodes ?? own.cache.nodeNames();
    const state = new CycleState();
    const pre = framework.runPreFilter(state, pod);
    if (pre.code === 'Error') throw new FrameworkError(pre.plugin ?? 'preFilter', pre.reasons);
    const narrowed = isSuccess(pre) ? framework.preFilterResult(state) : undefined;
    const feasible: NodeInfo[] = [];
    if (isSuccess(pre)) {
      for (const name of names) {
        const info = lookup(name);
        if (!info || (narrowed && !narrowed.nodeNames.has(name))) continue;
        const s = framework.runFilterWithNominatedPods(state, pod, info);
        if (s.code === 'Error') throw new FrameworkError(s.plugin ?? 'filter', s.reasons);
        if (isSuccess(s)) feasible.push(info);
      }
    }
    if (feasible.length === 0) {
      answer.unplaced = {
        pod: objectKey('Pod', pod),
        explanation: explain(own, {
          pod: pod as unknown as WirePod,
          nodes: names,
          limit: 20,
          disabledPlugins: req.disabledPlugins,
        }),
      };
      break;
    }
    const best = selectHost(framework, own.framework, state, pod, feasible, lookup);
    const volumes = decision(binding, pod, best.name);
    const placement = assume(store, writer, pod, best.name, volumes);
    placement.score = best.extender;
    placement.totalScore = best.total;
    answer.placements.push(placement);
    answer.placed++;
  }
  return answer;
}
