// Node selector terms (PV node affinity) and topology selector terms (StorageClass allowedTopologies), evaluated
// as component-helpers' MatchNodeSelectorTerms / MatchTopologySelectorTerms do, plus the index keys that let the
// PV cache find "PVs that could fit this node" without scanning every PV.
import type {
  NodeSelector,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  PersistentVolume,
  TopologySelectorTerm,
} from '../cluster/types.ts';

type Labels = Readonly<Record<string, string>>;

/** Evaluates one requirement; undefined when the requirement is invalid (the whole term is then skipped). */
function matchRequirement(req: NodeSelectorRequirement, source: Labels): boolean | undefined {
  const has = Object.hasOwn(source, req.key);
  const values = req.values ?? [];
  switch (req.operator) {
    case 'In':
      if (values.length === 0) return undefined;
      return has && values.includes(source[req.key]);
    case 'NotIn':
      if (values.length === 0) return undefined;
      return !has || !values.includes(source[req.key]);
    case 'Exists':
      if (values.length > 0) return undefined;
      return has;
    case 'DoesNotExist':
      if (values.length > 0) return undefined;
      return !has;
    case 'Gt':
    case 'Lt': {
      if (values.length !== 1 || !/^-?\d+$/.test(values[0])) return undefined;
      if (!has || !/^-?\d+$/.test(source[req.key])) return false;
      const have = Number(source[req.key]);
      const want = Number(values[0]);
      return req.operator === 'Gt' ? have > want : have < want;
    }
    default:
      return undefined;
  }
}

/** A term matches when it has at least one requirement and all of them hold; invalid terms never match. */
function matchTerm(term: NodeSelectorTerm, labels: Labels, fields: Labels): boolean {
  const exprs = term.matchExpressions ?? [];
  const flds = term.matchFields ?? [];
  if (exprs.length === 0 && flds.length === 0) return false;
  let ok = true;
  for (const req of exprs) {
    const m = matchRequirement(req, labels);
    if (m === undefined) return false;
    if (!m) ok = false;
  }
  for (const req of flds) {
    // Only metadata.name is a valid field, and only with In/NotIn and exactly one value.
    if (req.key !== 'metadata.name' || (req.operator !== 'In' && req.operator !== 'NotIn')) return false;
    if ((req.values ?? []).length !== 1) return false;
    const m = matchRequirement(req, fields);
    if (!m) ok = false;
  }
  return ok;
}

/** Terms are OR'd. `nodeName` feeds matchFields; PV affinity checks pass none (upstream builds a labels-only node). */
export function matchNodeSelectorTerms(selector: NodeSelector, labels: Labels | undefined, nodeName = ''): boolean {
  const own = labels ?? {};
  const fields = { 'metadata.name': nodeName };
  for (const term of selector.nodeSelectorTerms ?? []) {
    if (matchTerm(term, own, fields)) return true;
  }
  return false;
}

/** volume.CheckNodeAffinity: nil affinity (or nil required) matches every node. */
export function pvNodeAffinityMatches(pv: PersistentVolume, labels: Labels | undefined): boolean {
  const required = pv.spec.nodeAffinity?.required;
  if (!required) return true;
  return matchNodeSelectorTerms(required, labels);
}

/** The error text upstream's CheckNodeAffinity returns on a mismatch. */
export const NO_MATCHING_TERMS = 'no matching NodeSelectorTerms';

/** v1helper.MatchTopologySelectorTerms: no terms match everything; each expression needs the label with a listed value. */
export function matchTopologySelectorTerms(
  terms: readonly TopologySelectorTerm[] | undefined,
  labels: Labels | undefined,
): boolean {
  if (!terms || terms.length === 0) return true;
  const own = labels ?? {};
  for (const term of terms) {
    const exprs = term.matchLabelExpressions ?? [];
    if (exprs.every((e) => Object.hasOwn(own, e.key) && e.values.includes(own[e.key]))) return true;
  }
  return false;
}

/**
 * Index entries for a PV's affinity: distinct `[key, value]` pairs such that any node the PV can match carries one of
 * them. Undefined when the affinity cannot be indexed that way (none, or some term without an `In` requirement): such
 * PVs are candidates for every node. Each term contributes the values of its first valid `In` requirement; a pair two
 * terms share (one term per segment of a multi-segment topology) is one entry, so the PV sits in its bucket once.
 */
export function affinityIndexEntries(pv: PersistentVolume): IndexEntries | undefined {
  const terms = pv.spec.nodeAffinity?.required?.nodeSelectorTerms;
  if (!terms) return undefined;
  const out: [string, string][] = [];
  const seen = new Set<string>();
  for (const term of terms) {
    const inReq = (term.matchExpressions ?? []).find((r) => r.operator === 'In' && (r.values?.length ?? 0) > 0);
    if (!inReq) {
      // A term with no requirement at all never matches, so it needs no entry; anything else is not indexable.
      if ((term.matchExpressions?.length ?? 0) === 0 && (term.matchFields?.length ?? 0) === 0) continue;
      return undefined;
    }
    for (const value of inReq.values!) {
      const pair = `${inReq.key}\0${value}`;
      if (seen.has(pair)) continue;
      seen.add(pair);
      out.push([inReq.key, value]);
    }
  }
  return out.length === 1 ? singleEntry(out[0][0], out[0][1]) : out;
}

export type IndexEntries = readonly (readonly [string, string])[];

/**
 * Nearly every local PV names one hostname: its PV cache record keeps the entry list, so the PVs of a node share one
 * (frozen) list instead of holding two arrays each. Bounded: past the bound a list is the caller's own.
 */
const SINGLE_ENTRIES_MAX = 50_000;
const singleEntries = new Map<string, IndexEntries>();
function singleEntry(key: string, value: string): IndexEntries {
  const id = `${key}\0${value}`;
  let held = singleEntries.get(id);
  if (!held) {
    held = Object.freeze([Object.freeze([key, value] as const)]);
    if (singleEntries.size < SINGLE_ENTRIES_MAX) singleEntries.set(id, held);
  }
  return held;
}
