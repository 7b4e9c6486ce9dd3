// A test's hands on a real API server: create, read, patch and delete any object as JSON, through the project's own
// KubeClient (client-node's transport and authentication). Resource paths are guessed from apiVersion and kind the
// way kubectl's RESTMapper guesses before discovery (lower-case plural), which holds for every kind the tests use.
import { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, KubeClient } from '../../src/cluster/kube/client.ts';
import { watch } from '../../src/cluster/kube/watch.ts';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

const CLUSTER_SCOPED = new Set([
  'Namespace',
  'Node',
  'PersistentVolume',
  'StorageClass',
  'CSINode',
  'CSIDriver',
  'VolumeAttachment',
  'PriorityClass',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'DeviceClass',
  'ResourceSlice',
  'RuntimeClass',
]);

/** `v1` for the core group's kinds the tests name bare; others must carry their apiVersion (`events.k8s.io/v1/Event`). */
const CORE = new Set([
  'Namespace',
  'Node',
  'Pod',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'ServiceAccount',
  'Event',
]);
const STORAGE = new Set(['StorageClass', 'CSINode', 'CSIDriver', 'CSIStorageCapacity', 'VolumeAttachment']);

/** `Pod`, `PriorityClass` or `events.k8s.io/v1/Event`: the kind with its apiVersion when not core or storage. */
export type KindRef = string;

function split(ref: KindRef): { apiVersion: string; kind: string } {
  const at = ref.lastIndexOf('/');
  if (at >= 0) return { apiVersion: ref.slice(0, at), kind: ref.slice(at + 1) };
  if (CORE.has(ref)) return { apiVersion: 'v1', kind: ref };
  if (STORAGE.has(ref)) return { apiVersion: 'storage.k8s.io/v1', kind: ref };
  if (ref === 'PriorityClass') return { apiVersion: 'scheduling.k8s.io/v1', kind: ref };
  throw new Error(`kind ${ref}: name its apiVersion too (group/version/Kind)`);
}

function plural(kind: string): string {
  const lower = kind.toLowerCase();
  if (lower.endsWith('s')) return `${lower}es`;
  if (lower.endsWith('y')) return `${lower.slice(0, -1)}ies`;
  return `${lower}s`;
}

/** The collection's path in `namespace` (default: `default`; null: across all namespaces). */
export function collection(apiVersion: string, kind: string, namespace?: string | null): string {
  const prefix = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const ns = CLUSTER_SCOPED.has(kind) || namespace === null ? '' : `/namespaces/${namespace ?? 'default'}`;
  return `${prefix}${ns}/${plural(kind)}`;
}

function pathOf(o: KubeObject): string {
  if (!o.apiVersion || !o.kind) throw new Error(`object ${o.metadata.name} has no apiVersion or kind`);
  return collection(o.apiVersion, o.kind, o.metadata.namespace);
}

export class KubeApi {
  readonly client: KubeClient;

  constructor(kubeconfigFile: string) {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigFile);
    this.client = new KubeClient(kc);
  }

  /** Creates `o`; a running pod's status (phase, start time: what its kubelet would write) follows through pods/status. */
  async create<T extends KubeObject>(o: T): Promise<T> {
    const made = await this.#post(o);
    if (o.kind === 'Pod' && (o.spec as { nodeName?: string } | undefined)?.nodeName && o.status) {
      return this.patch(o, { status: o.status }, 'status');
    }
    return made;
  }

  /**
   * POSTs `o`. The API server's Priority admission looks PriorityClasses up in its informer only (runtimeclass
   * admission falls back to a live read; priority/admission.go does not), so a pod created right after its class may
   * be refused until that informer catches up: retried while the class the refusal names does exist.
   */
  async #post<T extends KubeObject>(o: T): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.client.request<T>('POST', pathOf(o), { body: o });
      } catch (err) {
        const unseen =
          err instanceof KubeApiError &&
          err.code === 403 &&
          /no PriorityClass with name (\S+) was found/.exec(err.message);
        if (!unseen || attempt >= 50 || !(await this.get('PriorityClass', unseen[1]))) throw err;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }

  async createAll(objects: KubeObject[]): Promise<void> {
    for (const o of objects) await this.create(o);
  }

  /** The object, or undefined when it does not exist. */
  async get<T extends KubeObject = KubeObject>(ref: KindRef, name: string, namespace?: string): Promise<T | undefined> {
    const { apiVersion, kind } = split(ref);
    try {
      return await this.client.request<T>('GET', `${collection(apiVersion, kind, namespace)}/${name}`);
    } catch (err) {
      if (err instanceof KubeApiError && err.code === 404) return undefined;
      throw err;
    }
  }

  /** Every object of the kind in `namespace` (null: in all). */
  async list<T extends KubeObject = KubeObject>(ref: KindRef, namespace?: string | null): Promise<T[]> {
    const { apiVersion, kind } = split(ref);
    const answer = await this.client.request<{ items: T[] }>('GET', collection(apiVersion, kind, namespace));
    return answer.items.map((item) => ({ apiVersion, kind, ...item }));
  }

  /** A JSON merge patch of the object (or of its `subresource`). */
  patch<T extends KubeObject>(o: T, patch: unknown, subresource?: string): Promise<T> {
    const path = `${pathOf(o)}/${o.metadata.name}${subresource ? `/${subresource}` : ''}`;
    return this.client.request<T>('PATCH', path, { body: patch, contentType: 'application/merge-patch+json' });
  }

  /**
   * Calls `handle` with every object of the kind as it changes, from now until the returned stop. A watch without a
   * resourceVersion begins with every existing object as ADDED, so one restarted after a drop misses nothing.
   */
  async watch<T extends KubeObject = KubeObject>(
    ref: KindRef,
    handle: (type: string, object: T) => void,
    namespace: string | null = null,
  ): Promise<() => void> {
    const { apiVersion, kind } = split(ref);
    const path = collection(apiVersion, kind, namespace);
    let stopped = false;
    let open: { abort(): void } | undefined;
    const start = async (): Promise<void> => {
      if (stopped) return;
      open = await watch(this.client, path, {
        query: {},
        onEvent: (event) => handle(event.type, { apiVersion, kind, ...(event.object as T) }),
        onDone: () => void start().catch(() => {}),
        inactivityMs: 30_000,
      });
    };
    await start();
    return () => {
      stopped = true;
      open?.abort();
    };
  }

  /**
   * Deletes `o`. With a `metadata.uid`, only that object: a late delete by name would take another object made since
   * under the same name (a pod recreated by a rollout). Gone, or replaced, is done.
   */
  async delete(o: KubeObject, gracePeriodSeconds?: number): Promise<void> {
    const uid = typeof o.metadata.uid === 'string' ? o.metadata.uid : undefined;
    try {
      await this.client.request('DELETE', `${pathOf(o)}/${o.metadata.name}`, {
        body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds, ...(uid && { preconditions: { uid } }) },
      });
    } catch (err) {
      if (err instanceof KubeApiError && (err.code === 404 || (uid && err.code === 409))) return;
      throw err;
    }
  }
}
