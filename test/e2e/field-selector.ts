// Field selectors as kube-apiserver evaluates them: `a=b`, `a==b`, `a!=b`, comma-separated (all must hold), over the
// fields each kind supports. An unsupported field is a 400, as the real server answers, so a client that relies on
// one the fake does not know fails loudly instead of receiving everything.

/** Selectable fields per kind (pkg/registry/.../strategy.go, ToSelectableFields) with the value of an unset field. */
const FIELDS: Record<string, Record<string, string>> = {
  Pod: {
    'spec.nodeName': '',
    'spec.schedulerName': '',
    'spec.serviceAccountName': '',
    'spec.hostNetwork': 'false',
    'spec.restartPolicy': '',
    'status.phase': '',
    'status.podIP': '',
    'status.nominatedNodeName': '',
  },
  Node: { 'spec.unschedulable': 'false' },
  PersistentVolumeClaim: { 'spec.volumeName': '' },
};
const META: Record<string, string> = { 'metadata.name': '', 'metadata.namespace': '' };

export type FieldSelector = (obj: object) => boolean;

export class FieldSelectorError extends Error {}

function read(obj: object, path: string, unset: string): string {
  let at: unknown = obj;
  for (const part of path.split('.'))
    at = at && typeof at === 'object' ? (at as Record<string, unknown>)[part] : undefined;
  return at === undefined || at === null ? unset : String(at);
}

/** Parses `selector` for objects of `kind`; throws FieldSelectorError naming what is not supported. */
export function parseFieldSelector(kind: string, selector: string | undefined): FieldSelector | undefined {
  if (!selector) return undefined;
  const terms = selector.split(',').map((term) => {
    const match = /^([^!=]+)(==|!=|=)(.*)$/.exec(term.trim());
    if (!match) throw new FieldSelectorError(`invalid selector: '${selector}'; can't understand '${term}'`);
    const [, field, op, value] = match;
    const unset = META[field] ?? FIELDS[kind]?.[field];
    if (unset === undefined) throw new FieldSelectorError(`field label not supported: ${field}`);
    return (o: object) => (read(o, field, unset) === value) !== (op === '!=');
  });
  return (obj) => terms.every((t) => t(obj));
}
