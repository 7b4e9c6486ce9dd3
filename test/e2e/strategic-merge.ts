// Strategic merge patch and server-side apply, as far as the fake API server's clients use them (kube-scheduler
// patches pod status by strategic merge, applies DisruptionTarget conditions by server-side apply, and patches event
// series). Lists with a patch merge key in upstream's Go types merge element by element; every other list is replaced,
// as kube-apiserver does. Directives the real server would reject here are refused, never silently ignored.

/** The patchMergeKey of the lists our clients patch, by dotted path from the object's root (k8s.io/api tags). */
const MERGE_KEYS: Record<string, string> = {
  'status.conditions': 'type',
  'metadata.ownerReferences': 'uid',
  'spec.containers': 'name',
  'spec.initContainers': 'name',
  'spec.volumes': 'name',
};

export class PatchError extends Error {}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (v: unknown): v is JsonObject => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Applies a strategic merge patch to `target` (neither is modified). */
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) throw new PatchError('a strategic merge patch must be a JSON object');
  return mergeObject(isObject(target) ? target : {}, patch, '', 'patch');
}

/**
 * Server-side apply of a full applied configuration, reduced to what a single field manager sees: the applied fields
 * are merged into the object (lists by merge key), fields it does not mention are kept. Field ownership and conflicts
 * between managers are not modelled: `force` is required so that a conflict could never go unnoticed.
 */
export function serverSideApply(target: unknown, applied: unknown, force: boolean): unknown {
  if (!isObject(applied)) throw new PatchError('an apply patch must be an object');
  if (!force) throw new PatchError('the fake API server models apply with force=true only');
  return mergeObject(isObject(target) ? target : {}, applied, '', 'apply');
}

function mergeObject(target: JsonObject, patch: JsonObject, path: string, mode: 'patch' | 'apply'): JsonObject {
  if (patch.$patch === 'replace') {
    const { $patch: _, ...rest } = patch;
    return rest;
  }
  if (patch.$patch !== undefined && patch.$patch !== 'merge') {
    throw new PatchError(`unknown patch type: ${String(patch.$patch)} at ${path || '.'}`);
  }
  const out: JsonObject = { ...target };
  const orders = new Map<string, Json[]>();
  for (const [key, value] of Object.entries(patch)) {
    if (key === '$patch') continue;
    if (key.startsWith('$setElementOrder/')) {
      if (!Array.isArray(value)) throw new PatchError(`${key} must be a list`);
      orders.set(key.slice('$setElementOrder/'.length), value);
      continue;
    }
    if (key.startsWith('$')) throw new PatchError(`unsupported patch directive ${key} at ${path || '.'}`);
    const childPath = path ? `${path}.${key}` : key;
    if (value === null) {
      if (mode === 'patch') delete out[key];
      continue;
    }
    if (isObject(value)) {
      out[key] = mergeObject(isObject(out[key]) ? out[key] : {}, value, childPath, mode);
    } else if (Array.isArray(value) && MERGE_KEYS[childPath]) {
      out[key] = mergeList(Array.isArray(out[key]) ? out[key] : [], value, MERGE_KEYS[childPath], childPath, mode);
    } else {
      out[key] = value;
    }
  }
  for (const [key, order] of orders) {
    const list = out[key];
    const mergeKey = MERGE_KEYS[path ? `${path}.${key}` : key];
    if (!Array.isArray(list) || !mergeKey) continue;
    out[key] = reorder(list, order, mergeKey);
  }
  return out;
}

function mergeList(target: Json[], patch: Json[], mergeKey: string, path: string, mode: 'patch' | 'apply'): Json[] {
  const out = [...target];
  for (const element of patch) {
    if (!isObject(element) || element[mergeKey] === undefined) {
      throw new PatchError(`${path}: every element must be an object with its merge key "${mergeKey}"`);
    }
    const at = out.findIndex((e) => isObject(e) && e[mergeKey] === element[mergeKey]);
    if (element.$patch === 'delete') {
      if (at >= 0) out.splice(at, 1);
      continue;
    }
    if (at >= 0) out[at] = mergeObject(out[at] as JsonObject, element, path, mode);
    else out.push(mergeObject({}, element, path, mode));
  }
  return out;
}

/** `$setElementOrder`: the listed elements in the given order, then the ones the order does not name. */
function reorder(list: Json[], order: Json[], mergeKey: string): Json[] {
  const keyOf = (e: Json) => (isObject(e) ? e[mergeKey] : undefined);
  const wanted = order.map((o) => (isObject(o) ? o[mergeKey] : undefined));
  const ordered = wanted.flatMap((k) => list.filter((e) => keyOf(e) === k));
  return [...ordered, ...list.filter((e) => !wanted.includes(keyOf(e) as Json))];
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value) as Json;
  }
  return out;
}
