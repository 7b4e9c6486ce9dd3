// Kinds that only explain and simulate read (PodTopologySpread's default constraints, InterPodAffinity's
// namespaceSelector); filter, prioritize, preempt and bind never do. A live source is ready without them, so a role
// written by hand for an older version does not stop scheduling; the analysis says what it could not model instead.
import { RESOURCES } from './kube/resources.ts';
import type { KindStatus } from './source.ts';
import { type Kind, SPREAD_SELECTOR_KINDS } from './types.ts';

const SPREADING = 'default topology spreading not fully modelled';

/** Per analysis-only kind, what explain and simulate lose without it. */
export const ANALYSIS_ONLY_KINDS: ReadonlyMap<Kind, string> = new Map<Kind, string>([
  ...SPREAD_SELECTOR_KINDS.map((k): [Kind, string] => [k, SPREADING]),
  ['Namespace', "InterPodAffinity's namespaceSelector matched against namespace names only"],
]);

/** Analysis-only kinds the source cannot serve now: never listed, or listed but no longer followed. */
export function unavailableKinds(statuses: readonly KindStatus[]): KindStatus[] {
  return statuses.filter((s) => ANALYSIS_ONLY_KINDS.has(s.kind) && (!s.synced || s.stale));
}

/** One note per unavailable kind, for explain's and simulate's answers. */
export function unavailableKindNotes(statuses: readonly KindStatus[]): string[] {
  return unavailableKinds(statuses).map((s) => {
    const why = s.synced ? 'are not followed: the watch is failing' : `could not be listed (${s.error ?? 'not yet'})`;
    return `${ANALYSIS_ONLY_KINDS.get(s.kind)}: ${RESOURCES[s.kind].plural} ${why}`;
  });
}
