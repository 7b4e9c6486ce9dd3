// kube-scheduler's cache comparer (pkg/scheduler/backend/cache/debugger/comparer.go), as an API answer: compares the
// scheduler cache and the cluster store with a fresh list from the API server and reports what differs.
// Upstream compares node names (missed/redundant) and pod UIDs (missed/redundant); we also report pods the cache has
// on another node than the API, and list pods assumed by our bind separately (they are expected to differ until the
// watch confirms them). Differences that last are bugs or lost events; a single diff can be watch lag.
import { isAssignedNonTerminal } from '../cache/cache.ts';
import type { SchedulerCache } from '../cache/interface.ts';
import type { ClusterStore } from '../cluster/store.ts';
import { type Node, namespaceOf, type Pod } from '../cluster/types.ts';

export interface PodRef {
  uid: string;
  namespace: string;
  name: string;
  nodeName?: string;
}

export interface AssumedPodDiff extends PodRef {
  nodeName: string;
  bindingFinished: boolean;
  /** What the API says about the pod: bound to the assumed node, to another node, not bound yet, or gone. */
  api: 'bound-here' | 'bound-elsewhere' | 'unbound' | 'missing';
  apiNodeName?: string;
}

export interface CacheDiff {
  /** True when the cache and the store agree with the API (assumed pods aside). */
  consistent: boolean;
  comparedAt: string;
  counts: { apiNodes: number; apiPods: number; apiAssignedPods: number; cacheNodes: number; cachePods: number };
  cache: {
    nodes: { missing: string[]; redundant: string[]; ghosts: string[] };
    pods: {
      /** Assigned, non-terminal pods of the API that the cache does not hold. */
      missing: PodRef[];
      /** Pods the cache holds (not assumed) that the API does not have assigned and running. */
      redundant: PodRef[];
      /** Pods the cache places on another node than the API. */
      wrongNode: (PodRef & { cacheNodeName: string })[];
      /** Pods the cache holds that no node listed here could show (on ghost nodes outside the API's pods). */
      unaccounted: number;
    };
    assumed: AssumedPodDiff[];
  };
  store: {
    nodes: { missing: string[]; redundant: string[] };
    pods: { missing: PodRef[]; redundant: PodRef[]; wrongNode: (PodRef & { storeNodeName?: string })[] };
  };
}

export interface CompareCacheArgs {
  cache: SchedulerCache;
  store: ClusterStore;
  listPods: () => Promise<Pod[]>;
  listNodes: () => Promise<Node[]>;
}

const ref = (pod: Pod): PodRef => ({
  uid: pod.metadata.uid,
  namespace: namespaceOf(pod),
  name: pod.metadata.name,
  ...(pod.spec.nodeName ? { nodeName: pod.spec.nodeName } : {}),
});

const byName = (a: PodRef, b: PodRef) =>
  a.namespace === b.namespace ? (a.name < b.name ? -1 : 1) : a.namespace < b.namespace ? -1 : 1;

export async function compareCache(args: CompareCacheArgs): Promise<CacheDiff> {
  const { cache, store } = args;
  const [apiPods, apiNodes] = await Promise.all([args.listPods(), args.listNodes()]);
  // Read the in-memory side right after the lists arrive, in one synchronous step.
  const apiNodeNames = new Set(apiNodes.map((n) => n.metadata.name));
  const apiByUid = new Map(apiPods.map((p) => [p.metadata.uid, p]));
  const apiAssigned = apiPods.filter(isAssignedNonTerminal);

  // --- cache vs API ---
  const cacheNodeNames = new Set(cache.nodeNames());
  const candidates = new Set<string>([
    ...cacheNodeNames,
    ...apiNodeNames,
    ...apiPods.map((p) => p.spec.nodeName ?? ''),
    ...[...store.list('Node')].map((n) => n.metadata.name),
    ...[...store.list('Pod')].map((p) => p.spec.nodeName ?? ''),
    ...cache.assumedPods().map((a) => a.nodeName),
  ]);
  candidates.delete('');
  const cachePods = new Map<string, { pod: Pod; nodeName: string; assumed: boolean }>();
  const ghosts: string[] = [];
  for (const name of candidates) {
    const info = cache.nodeInfo(name);
    if (!info) continue;
    if (!info.node) ghosts.push(name);
    for (const [uid, pi] of info.pods) cachePods.set(uid, { pod: pi.pod, nodeName: name, assumed: pi.assumed });
  }

  const missingNodes = [...apiNodeNames].filter((n) => !cacheNodeNames.has(n)).sort();
  const redundantNodes = [...cacheNodeNames].filter((n) => !apiNodeNames.has(n)).sort();

  const missingPods: PodRef[] = [];
  const wrongNode: (PodRef & { cacheNodeName: string })[] = [];
  for (const pod of apiAssigned) {
    const cached = cachePods.get(pod.metadata.uid);
    if (!cached) missingPods.push(ref(pod));
    else if (!cached.assumed && cached.nodeName !== pod.spec.nodeName) {
      wrongNode.push({ ...ref(pod), cacheNodeName: cached.nodeName });
    }
  }
  const apiAssignedUids = new Set(apiAssigned.map((p) => p.metadata.uid));
  const redundantPods: PodRef[] = [];
  const assumed: AssumedPodDiff[] = [];
  const assumedInfo = new Map(cache.assumedPods().map((a) => [a.uid, a]));
  for (const [uid, cached] of cachePods) {
    if (cached.assumed) continue;
    if (!apiAssignedUids.has(uid)) redundantPods.push({ ...ref(cached.pod), nodeName: cached.nodeName });
  }
  for (const a of assumedInfo.values()) {
    const live = apiByUid.get(a.uid);
    const apiNode = live?.spec.nodeName;
    assumed.push({
      uid: a.uid,
      namespace: a.namespace,
      name: a.name,
      nodeName: a.nodeName,
      bindingFinished: a.bindingFinished,
      api: !live ? 'missing' : !apiNode ? 'unbound' : apiNode === a.nodeName ? 'bound-here' : 'bound-elsewhere',
      ...(apiNode ? { apiNodeName: apiNode } : {}),
    });
  }

  // --- store vs API ---
  const storeNodeNames = new Set([...store.list('Node')].map((n) => n.metadata.name));
  const storePods = new Map([...store.list('Pod')].map((p) => [p.metadata.uid, p]));
  const storeMissingPods: PodRef[] = [];
  const storeWrongNode: (PodRef & { storeNodeName?: string })[] = [];
  for (const pod of apiPods) {
    const stored = storePods.get(pod.metadata.uid);
    if (!stored) storeMissingPods.push(ref(pod));
    else if ((stored.spec.nodeName ?? '') !== (pod.spec.nodeName ?? '')) {
      storeWrongNode.push({ ...ref(pod), ...(stored.spec.nodeName ? { storeNodeName: stored.spec.nodeName } : {}) });
    }
  }
  const storeRedundantPods = [...storePods.values()].filter((p) => !apiByUid.has(p.metadata.uid)).map(ref);

  const diff: CacheDiff = {
    consistent: false,
    comparedAt: new Date().toISOString(),
    counts: {
      apiNodes: apiNodes.length,
      apiPods: apiPods.length,
      apiAssignedPods: apiAssigned.length,
      cacheNodes: cacheNodeNames.size,
      cachePods: cache.podCount(),
    },
    cache: {
      nodes: { missing: missingNodes, redundant: redundantNodes, ghosts: ghosts.sort() },
      pods: {
        missing: missingPods.sort(byName),
        redundant: redundantPods.sort(byName),
        wrongNode: wrongNode.sort(byName),
        unaccounted: Math.max(0, cache.podCount() - cachePods.size),
      },
      assumed: assumed.sort(byName),
    },
    store: {
      nodes: {
        missing: [...apiNodeNames].filter((n) => !storeNodeNames.has(n)).sort(),
        redundant: [...storeNodeNames].filter((n) => !apiNodeNames.has(n)).sort(),
      },
      pods: {
        missing: storeMissingPods.sort(byName),
        redundant: storeRedundantPods.sort(byName),
        wrongNode: storeWrongNode.sort(byName),
      },
    },
  };
  const c = diff.cache;
  const s = diff.store;
  diff.consistent =
    c.nodes.missing.length + c.nodes.redundant.length === 0 &&
    c.pods.missing.length + c.pods.redundant.length + c.pods.wrongNode.length + c.pods.unaccounted === 0 &&
    s.nodes.missing.length + s.nodes.redundant.length === 0 &&
    s.pods.missing.length + s.pods.redundant.length + s.pods.wrongNode.length === 0;
  return diff;
}
