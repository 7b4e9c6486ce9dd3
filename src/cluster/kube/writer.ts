// The live writer: the extender's decisions as API calls. Rules, after kube-scheduler's binder and volume binder:
// - Binding: POST pods/{name}/binding with the pod's UID as precondition. A 5xx or network failure is retried (the UID
//   precondition makes a repeat harmless); a 409 is thrown as it is, and a failure after an attempt that may have
//   been applied is thrown `uncertain`: the bind reads the pod (its store, else a GET) to know whether it is bound.
// - PV/PVC: written with metadata.resourceVersion as the precondition; a 409 means the object changed since the
//   binder read it → WriteError(409, 'Conflict') and the caller reverts. A write of unknown outcome (lost reply,
//   timeout, 5xx) is read back before it is called failed or sent again: applied is success, changed by another
//   writer is a Conflict, unchanged is retried; a read-back that fails too throws the write's error `uncertain`.
//   The write is a JSON merge patch of labels, annotations and spec (content type set explicitly) rather than a PUT of
//   the whole object: the store trims objects (finalizers, last-applied annotation, ...), and a PUT of a trimmed PV
//   would strip its kubernetes.io/pv-protection finalizer. The resourceVersion inside the patch makes the API reject
//   it exactly as it would reject a stale PUT.
// - Reads (getPod) are retried on 5xx and network failures.
// Every failure is a WriteError carrying the status code, the API's reason and its message.

import { type KubeConfig, PatchStrategy } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { Log } from '../../log.ts';
import { trimObject } from '../trim.ts';
import type { PersistentVolume, PersistentVolumeClaim, Pod } from '../types.ts';
import { ANN_BOUND_BY_CONTROLLER } from '../volume-annotations.ts';
import { type ClusterWriter, type PodPrecondition, WriteError } from '../writer.ts';
import { Backoff, type BackoffOptions, wait } from './backoff.ts';
import { KubeApiError, KubeClient } from './client.ts';
import { objectPath, RESOURCES } from './resources.ts';

export interface KubeWriterOptions {
  kubeConfig: KubeConfig;
  logger?: Log;
  /** Extra attempts after a 5xx or network failure. Default 3. */
  retries?: number;
  /** Delay between those attempts: default 100 ms doubling to 2 s, 20 % jitter. */
  backoff?: BackoffOptions;
  /** Aborts waits between retries at shutdown. */
  signal?: AbortSignal;
  /** Deadline of each API request. Default 30 s. */
  requestTimeoutMs?: number;
}

type VolumeKind = 'PersistentVolume' | 'PersistentVolumeClaim';

function toWriteError(err: unknown, what: string, uncertain = false): WriteError {
  if (err instanceof WriteError) return err;
  if (err instanceof KubeApiError) {
    const code = err.code;
    const apiMessage = err.status?.message ?? err.message;
    const status = code === 0 ? 'network error' : `${code} ${err.reason}`;
    return new WriteError(code, err.reason, `${what}: ${status}: ${apiMessage}`, uncertain);
  }
  return new WriteError(0, 'Unknown', `${what}: ${(err as Error)?.message ?? String(err)}`, uncertain);
}

/** A failed write that the API may have applied all the same: no reply (reset, timeout) or a 5xx. */
function mayHaveApplied(err: unknown): boolean {
  return err instanceof KubeApiError && (err.code === 0 || err.code >= 500);
}

/**
 * `part` is contained in `whole`: every key of part has an equal value in whole (objects compared recursively); a
 * null in part (a merge patch's removal) matches an absent key.
 */
function contains(whole: unknown, part: unknown): boolean {
  if (part === null) return whole === null || whole === undefined;
  if (typeof part !== 'object') return whole === part;
  if (whole === null || typeof whole !== 'object') return false;
  if (Array.isArray(part)) {
    return Array.isArray(whole) && whole.length === part.length && part.every((p, i) => contains(whole[i], p));
  }
  const w = whole as Record<string, unknown>;
  return Object.entries(part as Record<string, unknown>).every(([k, v]) => contains(w[k], v));
}

export class KubeWriter implements ClusterWriter {
  readonly #client: KubeClient;
  readonly #logger: Log;
  readonly #retries: number;
  readonly #backoff: BackoffOptions;
  readonly #signal: AbortSignal;

  constructor(options: KubeWriterOptions) {
    this.#client = new KubeClient(options.kubeConfig, { timeoutMs: options.requestTimeoutMs ?? 30_000 });
    this.#logger = options.logger ?? pino({ level: 'silent' });
    this.#retries = options.retries ?? 3;
    this.#backoff = { initialMs: 100, maxMs: 2_000, ...options.backoff };
    this.#signal = options.signal ?? new AbortController().signal;
  }

  async bindPod(pod: { namespace: string; name: string; uid: string }, nodeName: string): Promise<void> {
    const what = `binding pod "${pod.namespace}/${pod.name}" to node "${nodeName}"`;
    const path = `${objectPath(RESOURCES.Pod, pod.name, pod.namespace)}/binding`;
    const body = {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: pod.name, namespace: pod.namespace, uid: pod.uid },
      target: { apiVersion: 'v1', kind: 'Node', name: nodeName },
    };
    const backoff = new Backoff(this.#backoff);
    let uncertain = false;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#client.request('POST', path, { body });
        return;
      } catch (err) {
        // Already bound (perhaps by an attempt whose reply was lost), or the UID changed: the bind reads the pod.
        if (err instanceof KubeApiError && err.code === 409) throw toWriteError(err, what);
        uncertain ||= mayHaveApplied(err);
        await this.#retryOrThrow(err, attempt, backoff, what, uncertain);
      }
    }
  }

  /** Not retried: a nomination is a hint, and the next rejected attempt nominates again. */
  async nominatePod(pod: PodPrecondition, nodeName: string): Promise<void> {
    const what = `nominating node "${nodeName}" for pod "${pod.namespace}/${pod.name}"`;
    const path = `${objectPath(RESOURCES.Pod, pod.name, pod.namespace)}/status`;
    // A UID in the patch is a precondition: a pod recreated under the same name is refused (409), never nominated;
    // so is a resourceVersion: a pod changed since (bound, say) is refused too.
    const { uid, resourceVersion } = pod;
    const body = {
      metadata: { uid, ...(resourceVersion ? { resourceVersion } : {}) },
      status: { nominatedNodeName: nodeName },
    };
    try {
      await this.#client.request('PATCH', path, { body, contentType: PatchStrategy.MergePatch });
    } catch (err) {
      throw toWriteError(err, what, mayHaveApplied(err));
    }
  }

  updatePersistentVolume(pv: PersistentVolume): Promise<PersistentVolume> {
    return this.#updateVolume('PersistentVolume', pv);
  }

  updatePersistentVolumeClaim(pvc: PersistentVolumeClaim): Promise<PersistentVolumeClaim> {
    return this.#updateVolume('PersistentVolumeClaim', pvc);
  }

  /** A merge patch: null drops the claimRef (or its UID) and the annotation, which a whole object cannot say. */
  unbindPersistentVolume(pv: PersistentVolume): Promise<PersistentVolume> {
    const byController = Object.hasOwn(pv.metadata.annotations ?? {}, ANN_BOUND_BY_CONTROLLER);
    const change = byController
      ? { metadata: { annotations: { [ANN_BOUND_BY_CONTROLLER]: null } }, spec: { claimRef: null } }
      : { spec: { claimRef: { uid: null } } };
    return this.#patch('PersistentVolume', pv.metadata.name, undefined, pv.metadata.resourceVersion, change);
  }

  bindClaimToVolume(
    pvc: PersistentVolumeClaim,
    volumeName: string,
    annotations: Record<string, string | null>,
  ): Promise<PersistentVolumeClaim> {
    const { name, namespace, resourceVersion } = pvc.metadata;
    const change = { metadata: { annotations }, spec: { volumeName } };
    return this.#patch('PersistentVolumeClaim', name, namespace, resourceVersion, change);
  }

  async getPod(namespace: string, name: string): Promise<Pod | undefined> {
    const what = `reading pod "${namespace}/${name}"`;
    const raw = await this.#read<Pod>(objectPath(RESOURCES.Pod, name, namespace), what);
    return raw && trimObject('Pod', raw);
  }

  async getPersistentVolume(name: string): Promise<PersistentVolume | undefined> {
    const raw = await this.#read<PersistentVolume>(
      objectPath(RESOURCES.PersistentVolume, name),
      `reading PersistentVolume "${name}"`,
    );
    return raw && trimObject('PersistentVolume', raw);
  }

  async getPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined> {
    const raw = await this.#read<PersistentVolumeClaim>(
      objectPath(RESOURCES.PersistentVolumeClaim, name, namespace),
      `reading PersistentVolumeClaim "${namespace}/${name}"`,
    );
    return raw && trimObject('PersistentVolumeClaim', raw);
  }

  async #read<T>(path: string, what: string): Promise<T | undefined> {
    const backoff = new Backoff(this.#backoff);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#client.request<T>('GET', path);
      } catch (err) {
        if (err instanceof KubeApiError && err.code === 404) return undefined;
        await this.#retryOrThrow(err, attempt, backoff, what);
      }
    }
  }

  async #updateVolume<K extends VolumeKind>(
    kind: K,
    obj: K extends 'PersistentVolume' ? PersistentVolume : PersistentVolumeClaim,
  ): Promise<K extends 'PersistentVolume' ? PersistentVolume : PersistentVolumeClaim> {
    const { name, namespace, resourceVersion, labels, annotations } = obj.metadata;
    const change = {
      metadata: { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) },
      spec: obj.spec,
    };
    return this.#patch(kind, name, namespace, resourceVersion, change);
  }

  /** A JSON merge patch of `change` with `resourceVersion` as the precondition. */
  async #patch<K extends VolumeKind>(
    kind: K,
    name: string,
    namespace: string | undefined,
    resourceVersion: string | undefined,
    change: { metadata?: object; spec?: object },
  ): Promise<K extends 'PersistentVolume' ? PersistentVolume : PersistentVolumeClaim> {
    type Out = K extends 'PersistentVolume' ? PersistentVolume : PersistentVolumeClaim;
    const key = namespace ? `${namespace}/${name}` : name;
    const what = `updating ${kind} "${key}" at resourceVersion ${resourceVersion}`;
    if (!resourceVersion) {
      throw new WriteError(400, 'BadRequest', `${what}: metadata.resourceVersion is required as the precondition`);
    }
    const path = objectPath(RESOURCES[kind], name, namespace);
    const patch = { ...change, metadata: { ...change.metadata, resourceVersion } };
    const backoff = new Backoff(this.#backoff);
    let uncertain = false;
    for (let attempt = 0; ; attempt++) {
      try {
        const out = await this.#client.request<Out>('PATCH', path, {
          body: patch,
          contentType: PatchStrategy.MergePatch,
        });
        return trimObject(kind, out as never) as Out;
      } catch (err) {
        const conflict = err instanceof KubeApiError && err.code === 409;
        const conflictError = () =>
          new WriteError(
            409,
            'Conflict',
            `${what}: 409 Conflict: ${(err as KubeApiError).status?.message ?? (err as Error).message}`,
          );
        if (err instanceof KubeApiError && err.code === 404) throw toWriteError(err, what);
        if (conflict && !uncertain) throw conflictError();
        if (!conflict && !mayHaveApplied(err)) {
          await this.#retryOrThrow(err, attempt, backoff, what);
          continue;
        }
        // This attempt, or an earlier one, may have been applied (a 409 may be our own earlier write): read the object
        // before calling the write failed or sending it again.
        uncertain = true;
        let live: Out | undefined;
        try {
          live = await this.#read<Out>(path, `reading ${kind} "${key}"`);
        } catch (readErr) {
          const e = toWriteError(err, what);
          throw new WriteError(
            e.code,
            e.reason,
            `${e.message}; reading it back failed: ${(readErr as Error).message}`,
            true,
          );
        }
        if (live && contains(live, change)) return trimObject(kind, live as never) as Out;
        if (!live) throw new WriteError(404, 'NotFound', `${what}: ${kind} "${key}" no longer exists`);
        // Another writer changed it: a retry would be refused, as this write would have been.
        if (conflict || live.metadata.resourceVersion !== resourceVersion) {
          throw conflict
            ? conflictError()
            : new WriteError(409, 'Conflict', `${what}: 409 Conflict: it was changed by another writer`);
        }
        await this.#retryOrThrow(err, attempt, backoff, what);
      }
    }
  }

  /** Waits before the next attempt when the failure is transient and attempts remain; throws a WriteError otherwise. */
  async #retryOrThrow(err: unknown, attempt: number, backoff: Backoff, what: string, uncertain = false): Promise<void> {
    const retriable = err instanceof KubeApiError && err.retriable;
    if (!retriable || attempt >= this.#retries || this.#signal.aborted) throw toWriteError(err, what, uncertain);
    const delay = backoff.next();
    this.#logger.warn(
      { err, attempt: attempt + 1, retryInMs: delay },
      `${what} failed, retrying: ${(err as Error).message}`,
    );
    await wait(delay, this.#signal);
  }
}
