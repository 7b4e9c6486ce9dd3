// Did my write land, and is the pod bound anyway? Several writers race for the same objects (replicas, a retry of the
// same pod, the PV controller): a write refused with 409, or whose outcome is unknown (lost reply, timeout, 5xx), is
// not yet a failure. The caller reads the object back and decides from what the API holds now. This module is the
// one place that says which failures are read back and what a pod's binding looks like from the outside.
import type { ClusterStore } from './store.ts';
import { objectKey, type Pod } from './types.ts';
import { type ClusterWriter, WriteError } from './writer.ts';

/** What a write came to. Failures that are not read back (anything but the kinds asked for) are thrown as they are. */
export type WriteOutcome<T, R> =
  | { kind: 'written'; value: T }
  /** Refused with 409; `current` is what readBack found. */
  | { kind: 'conflict'; error: WriteError; current: R }
  /** The outcome is unknown (WriteError.uncertain); `current` is what readBack found. */
  | { kind: 'unknown'; error: WriteError; current: R }
  /** A 409 or an unknown outcome, and reading back failed too. */
  | { kind: 'unread'; error: WriteError; readError: unknown };

export interface ReadBackOptions<R> {
  /** Reads what the write was about, as the API has it now. Absent: every failure is thrown. */
  readBack?: () => Promise<R>;
  /** Read back an unknown outcome too, not only a 409. */
  unknown?: boolean;
}

/** Runs `write`; a 409 (and with `unknown`, an uncertain failure) is read back instead of thrown. */
export async function writeThenReadBack<T, R>(
  write: () => Promise<T>,
  options: ReadBackOptions<R>,
): Promise<WriteOutcome<T, R>> {
  try {
    return { kind: 'written', value: await write() };
  } catch (err) {
    const readBack = options.readBack;
    if (!readBack || !(err instanceof WriteError)) throw err;
    const kind = err.code === 409 ? 'conflict' : options.unknown && err.uncertain ? 'unknown' : undefined;
    if (!kind) throw err;
    let current: R;
    try {
      current = await readBack();
    } catch (readError) {
      return { kind: 'unread', error: err, readError };
    }
    return { kind, error: err, current };
  }
}

/**
 * What the pod, as the API (or its store) has it, says about binding `uid` to `node`: '' when bound there, an error
 * when it is gone, was created again or is bound elsewhere, undefined when it is not bound.
 */
export function podBindingState(
  pod: Pod | undefined,
  key: string,
  uid: string,
  node: string,
  boundTo = pod?.spec.nodeName,
): string | undefined {
  if (!pod) return `pod "${key}" not found`;
  if (pod.metadata.uid !== uid) {
    return `pod "${key}" has UID ${pod.metadata.uid}, not ${uid}: it was deleted and created again`;
  }
  if (!boundTo) return undefined;
  return boundTo === node ? '' : `pod "${key}" is already bound to node "${boundTo}"`;
}

/**
 * The pod's binding (podBindingState) as the store has it, else as the API has it: the watch may not have seen a
 * Binding that landed. Throws when the API cannot be read.
 */
export async function podBindingNow(
  sources: { store: ClusterStore; writer: Pick<ClusterWriter, 'getPod'> },
  pod: Pod,
  node: string,
): Promise<string | undefined> {
  const key = objectKey('Pod', pod);
  const stored = podBindingState(sources.store.get('Pod', key), key, pod.metadata.uid, node);
  if (stored !== undefined) return stored;
  const live = await sources.writer.getPod(pod.metadata.namespace!, pod.metadata.name);
  return podBindingState(live, key, pod.metadata.uid, node);
}
