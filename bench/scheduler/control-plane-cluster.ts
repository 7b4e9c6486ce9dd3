// bench-helper
// The local-storage cluster (bench/synthetic.ts) on a real control plane for bench/scheduler-throughput.ts: etcd,
// kube-apiserver and kube-controller-manager (its real PV controller, at its default client limit unless told
// otherwise) from test/components, the stand-in CSI external-provisioner, the extender as the chart's ServiceAccount.
// The cluster is loaded as it would stand after months of use: PVs and claims that are bound carry their Bound status
// (written through /status, as the PV controller had written it), so the PV controller starts with nothing to do.
// A phase creates its pending pods (and their claims) at once and times them from creation to the last Binding seen
// by a watch; the audit log says who wrote what per pod, and how long each claim waited for the PV controller after
// our bind gave its PV a claimRef (or, for a provisioned claim, after the claim's selected-node annotation).
import { kubeComponents } from '../../test/components/components.ts';
import {
  type AuditEvent,
  type ControlPlane,
  type ControlPlaneOptions,
  startControlPlane,
} from '../../test/components/control-plane.ts';
import { type CsiProvisioner, startCsiProvisioner } from '../../test/components/csi-provisioner.ts';
import type { KubeApi, KubeObject } from '../../test/components/kube-api.ts';
import { installExtenderRbac } from '../../test/e2e/scheduler-cluster.ts';
import { DISK_DRIVER, generateCluster, LOCAL_STORAGE_SHAPE, LVM_DRIVER } from '../synthetic.ts';

export interface PhaseResult {
  count: number;
  bound: number;
  seconds: number;
  /** Completed writes by writer and kind of request (`extender PATCH PV`, `kube-scheduler binding`, ...). */
  writes: Record<string, number>;
  misplaced: number;
  doubleBooked: number;
  /** Per claim of a bound pod: seconds from our write that chose its volume to the PV controller's Bound status. */
  pvControllerWaits: number[];
  /** Seconds from the last Binding until every claim of a bound pod was Bound (the PV controller's tail). */
  settleSeconds: number;
}

export interface BenchCluster {
  plane: ControlPlane;
  /** The extender's kubeconfig (the chart's ServiceAccount and RBAC). */
  extenderKubeconfig: string;
  /** kube-scheduler's (user system:kube-scheduler). */
  schedulerKubeconfig: string;
  pods: number;
  /** Seconds to load the cluster into the API server. */
  loadSeconds: number;
  /** `bound` runs once the last pod is bound, before the PV controller's tail (a bench scrapes its metrics there). */
  phase(
    scheduler: string,
    claims: number,
    count: number,
    timeoutMs: number,
    bound?: () => Promise<void>,
  ): Promise<PhaseResult>;
  stop(): Promise<void>;
}

const NAMESPACE = 'bench';
/** The synthetic cluster's provisioners of the kind an external-provisioner runs for. */
const CSI_DRIVERS = [DISK_DRIVER, LVM_DRIVER];

/** Runs `work` over `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

type Meta = KubeObject['metadata'] & { uid?: string; resourceVersion?: string; creationTimestamp?: string };
type Stored = KubeObject & { metadata: Meta; spec?: Record<string, unknown>; status?: Record<string, unknown> };

/** What a client sends to create it: no uid, resourceVersion or timestamps (the API server assigns them). */
function asCreated(o: Stored): Stored {
  const { uid: _u, resourceVersion: _r, creationTimestamp: _c, ...metadata } = o.metadata;
  return { ...o, metadata };
}

async function load(api: KubeApi, nodes: number): Promise<number> {
  const { objects, counts } = generateCluster({ ...LOCAL_STORAGE_SHAPE, nodes, seed: 1, pendingPerKind: 0 });
  const all = objects as unknown as Stored[];
  const of = (kind: string) => all.filter((o) => o.kind === kind);
  const namespaces = new Set(all.map((o) => o.metadata.namespace).filter((n) => n && n !== 'default'));
  namespaces.add(NAMESPACE);
  await pool([...namespaces], 8, (name) =>
    api.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: name! } }).catch(() => {}),
  );
  for (const kind of ['PriorityClass', 'StorageClass', 'CSIDriver'])
    await pool(of(kind), 8, (o) => api.create(asCreated(o)));
  await pool([...of('Node'), ...of('CSINode'), ...of('CSIStorageCapacity')], 32, (o) => api.create(asCreated(o)));
  // Running pods are bound (spec.nodeName); no kubelet reports their phase, which kube-scheduler does not read.
  // They go before their claims: kube-controller-manager v1.37's pvc-protection controller judges a bound claim's
  // Unused condition when the claim appears, and a claim it judged before its pod was in its informer got two status
  // writes (Unused, then used again), at its client limit (20/s): at 5,000 nodes they went on for two minutes after
  // the load, each a watch event to every component.
  await pool(of('Pod'), 64, (p) => api.create(asCreated({ ...p, status: undefined })));
  // Then claims: a bound PV's claimRef names its claim's uid, which the API server assigns. A bound claim carries
  // the Unused condition that controller keeps (True unless a pod names it): without it the controller writes every
  // bound claim's status for minutes after the load.
  const claimUids = new Map<string, string>();
  const used = new Set(
    of('Pod').flatMap((p) =>
      ((p.spec?.volumes ?? []) as { persistentVolumeClaim?: { claimName: string } }[]).flatMap((v) =>
        v.persistentVolumeClaim ? [`${p.metadata.namespace}/${v.persistentVolumeClaim.claimName}`] : [],
      ),
    ),
  );
  const loadedAt = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  await pool(of('PersistentVolumeClaim'), 32, async (c) => {
    const made = (await api.create(asCreated(c))) as Stored;
    const key = `${c.metadata.namespace}/${c.metadata.name}`;
    claimUids.set(key, made.metadata.uid!);
    if (!c.status) return;
    const unused =
      c.status.phase === 'Bound'
        ? used.has(key)
          ? { status: 'False', reason: 'PodUsingPVC', message: 'A pod is currently referencing this PVC' }
          : { status: 'True', reason: 'NoPodsUsingPVC', message: 'No pods are currently referencing this PVC' }
        : undefined;
    const conditions = unused ? [{ type: 'Unused', lastTransitionTime: loadedAt, ...unused }] : undefined;
    await api.patch(made, { status: { ...c.status, ...(conditions ? { conditions } : {}) } }, 'status');
  });
  await pool(of('PersistentVolume'), 32, async (pv) => {
    const ref = pv.spec?.claimRef as { namespace: string; name: string; uid?: string } | undefined;
    const spec = ref
      ? { ...pv.spec, claimRef: { ...ref, uid: claimUids.get(`${ref.namespace}/${ref.name}`) } }
      : pv.spec;
    const made = (await api.create(asCreated({ ...pv, spec }))) as Stored;
    await api.patch(made, { status: { phase: ref ? 'Bound' : 'Available' } }, 'status');
  });
  return counts.Pod;
}

/** Resolves once every named claim (of the bench namespace) has status.phase Bound, or after timeoutMs. */
async function claimsBound(api: KubeApi, names: string[], timeoutMs: number): Promise<void> {
  const unbound = new Set(names);
  if (unbound.size === 0) return;
  const { promise, resolve } = Promise.withResolvers<void>();
  const timer = setTimeout(resolve, timeoutMs);
  const stop = await api.watch<Stored>('PersistentVolumeClaim', (_type, c) => {
    if (c.metadata.namespace === NAMESPACE && c.status?.phase === 'Bound' && unbound.delete(c.metadata.name))
      if (unbound.size === 0) resolve();
  });
  await promise;
  clearTimeout(timer);
  stop();
}

function claimObject(name: string, className: string, size: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: NAMESPACE },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } }, storageClassName: className },
  };
}

function podObject(name: string, schedulerName: string, claims: string[]): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NAMESPACE, labels: { app: 'bench' } },
    spec: {
      schedulerName,
      containers: [{ name: 'main', image: 'app:1', resources: { requests: { cpu: '10m', memory: '16Mi' } } }],
      ...(claims.length > 0
        ? { volumes: claims.map((claimName, i) => ({ name: `v${i}`, persistentVolumeClaim: { claimName } })) }
        : {}),
    },
  };
}

type Term = { matchExpressions?: { key: string; operator: string; values?: string[] }[] };

/** The PV's required node affinity admits a node with these labels (the In terms these PVs carry). */
function reachableFrom(volume: Stored, labels: Record<string, string>): boolean {
  const affinity = volume.spec?.nodeAffinity as { required?: { nodeSelectorTerms?: Term[] } } | undefined;
  const terms = affinity?.required?.nodeSelectorTerms;
  if (!terms) return true;
  return terms.some((t) =>
    (t.matchExpressions ?? []).every((m) => m.operator === 'In' && m.values?.includes(labels[m.key])),
  );
}

/** `extender PATCH PV`, `kube-scheduler binding`, `PV controller PUT claim status`, ... */
function writeKind(e: AuditEvent, extenderUser: string): string {
  const user = e.user.username;
  const who =
    user === extenderUser
      ? 'extender'
      : user === 'system:kube-scheduler'
        ? 'kube-scheduler'
        : user.endsWith(':persistent-volume-binder')
          ? 'PV controller'
          : user.startsWith('system:serviceaccount:kube-system:')
            ? user.slice('system:serviceaccount:kube-system:'.length)
            : user;
  const r = e.objectRef;
  if (r?.subresource === 'binding') return `${who} binding`;
  const resource =
    r?.resource === 'persistentvolumes' ? 'PV' : r?.resource === 'persistentvolumeclaims' ? 'claim' : r?.resource;
  const method = { create: 'POST', update: 'PUT', patch: 'PATCH', delete: 'DELETE' }[e.verb] ?? e.verb;
  return `${who} ${method} ${resource}${r?.subresource ? ` ${r.subresource}` : ''}`;
}

export async function startBenchCluster(
  nodes: number,
  o: Pick<
    ControlPlaneOptions,
    'controllerManagerQps' | 'controllerManagerBurst' | 'pvResyncSeconds' | 'profiling'
  > = {},
): Promise<BenchCluster> {
  const { components, skip } = await kubeComponents();
  if (!components) throw new Error(skip);
  const plane = await startControlPlane(components, { ...o, auditAdmin: false });
  const api = plane.admin;
  let provisioners: CsiProvisioner[] = [];
  try {
    const loadStarted = performance.now();
    const pods = await load(api, nodes);
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    provisioners = await Promise.all(CSI_DRIVERS.map((d) => startCsiProvisioner(api, d)));
    const account = await installExtenderRbac(api, 'delegated');
    const extenderUser = `system:serviceaccount:${account.namespace}:${account.name}`;
    const extenderKubeconfig = await plane.serviceAccountKubeconfig(account.namespace, account.name);
    let serial = 0;

    const phase = async (
      scheduler: string,
      claims: number,
      count: number,
      timeoutMs: number,
      bound?: () => Promise<void>,
    ): Promise<PhaseResult> => {
      const batch = Array.from({ length: count }, () => {
        const name = `p${++serial}`;
        const names = claims === 0 ? [] : claims === 1 ? [`${name}-a`] : [`${name}-a`, `${name}-b`, `${name}-c`];
        return { name, claims: names };
      });
      await pool(
        batch.flatMap((p) => {
          const [a, b, c] = p.claims;
          return [
            ...(a ? [claimObject(a, 'local-storage', '20Gi')] : []),
            ...(b ? [claimObject(b, 'local-storage', '10Gi')] : []),
            ...(c ? [claimObject(c, 'local-lvm', '10Gi')] : []),
          ];
        }),
        32,
        (c) => api.create(c),
      );
      const auditFrom = (await plane.audit()).length;
      const waiting = new Set(batch.map((p) => p.name));
      const nodeOf = new Map<string, string>();
      let last = 0;
      const { promise: done, resolve } = Promise.withResolvers<void>();
      const timer = setTimeout(resolve, timeoutMs);
      const stopWatch = await api.watch<Stored>('Pod', (_type, pod) => {
        const node = pod.spec?.nodeName as string | undefined;
        if (pod.metadata.namespace !== NAMESPACE || !node || !waiting.delete(pod.metadata.name)) return;
        nodeOf.set(pod.metadata.name, node);
        last = performance.now();
        if (waiting.size === 0) resolve();
      });
      const start = performance.now();
      await pool(batch, 64, (p) => api.create(podObject(p.name, scheduler, p.claims)));
      await done;
      clearTimeout(timer);
      stopWatch();
      const seconds = ((waiting.size === 0 ? last : performance.now()) - start) / 1000;
      await bound?.();
      // The PV controller finishes binding the phase's claims seconds after the last Binding: wait for it, so that the
      // next phase starts quiet and this one's CPU includes the watch events its claims still cause.
      const settleStarted = performance.now();
      await claimsBound(
        api,
        batch.filter((p) => nodeOf.has(p.name)).flatMap((p) => p.claims),
        timeoutMs,
      );
      const settleSeconds = (performance.now() - settleStarted) / 1000;

      const events = (await plane.audit()).slice(auditFrom);
      const writes: Record<string, number> = {};
      for (const e of events) {
        if (!['create', 'update', 'patch', 'delete'].includes(e.verb) || (e.responseStatus?.code ?? 0) >= 300) continue;
        const kind = writeKind(e, extenderUser);
        writes[kind] = (writes[kind] ?? 0) + 1;
      }
      // Where each claim of a bound pod ended up, and how long the PV controller took to bind it.
      const claimsNow = new Map(
        (await api.list<Stored>('PersistentVolumeClaim', NAMESPACE)).map((c) => [c.metadata.name, c]),
      );
      const volumes = new Map((await api.list<Stored>('PersistentVolume')).map((v) => [v.metadata.name, v]));
      const nodeLabels = new Map(
        (await api.list<Stored>('Node')).map((n) => [
          n.metadata.name,
          (n.metadata.labels ?? {}) as Record<string, string>,
        ]),
      );
      const at = (e: AuditEvent) => Date.parse((e as AuditEvent & { stageTimestamp: string }).stageTimestamp);
      let misplaced = 0;
      const pvControllerWaits: number[] = [];
      for (const p of batch) {
        const node = nodeOf.get(p.name);
        if (!node) continue;
        for (const c of p.claims) {
          const volumeName = claimsNow.get(c)?.spec?.volumeName as string | undefined;
          const volume = volumeName ? volumes.get(volumeName) : undefined;
          if (!volume || !reachableFrom(volume, nodeLabels.get(node) ?? {})) misplaced++;
          const chose = events.find(
            (e) =>
              e.user.username === extenderUser &&
              ((e.objectRef?.resource === 'persistentvolumes' && e.objectRef.name === volumeName) ||
                (e.objectRef?.resource === 'persistentvolumeclaims' && e.objectRef.name === c && e.verb === 'patch')),
          );
          const bound = events.find(
            (e) =>
              e.user.username.endsWith(':persistent-volume-binder') &&
              e.objectRef?.resource === 'persistentvolumeclaims' &&
              e.objectRef.name === c &&
              e.objectRef.subresource === 'status',
          );
          if (chose && bound) pvControllerWaits.push((at(bound) - at(chose)) / 1000);
        }
      }
      const refs = new Map<string, number>();
      for (const v of volumes.values()) {
        const ref = v.spec?.claimRef as { namespace?: string; name: string } | undefined;
        if (ref?.namespace === NAMESPACE) refs.set(ref.name, (refs.get(ref.name) ?? 0) + 1);
      }
      return {
        count,
        bound: count - waiting.size,
        seconds,
        writes,
        misplaced,
        doubleBooked: [...refs.values()].filter((n) => n > 1).length,
        pvControllerWaits,
        settleSeconds,
      };
    };

    return {
      plane,
      extenderKubeconfig,
      schedulerKubeconfig: plane.schedulerKubeconfig,
      pods,
      loadSeconds,
      phase,
      async stop() {
        for (const p of provisioners) p.stop();
        await plane.stop();
      },
    };
  } catch (err) {
    for (const p of provisioners) p.stop();
    await plane.stop();
    throw err;
  }
}
