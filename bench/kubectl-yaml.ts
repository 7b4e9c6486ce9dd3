// bench-helper
// Writes objects as `kubectl get -o yaml` does (sigs.k8s.io/yaml over go-yaml): keys sorted, two-space indentation,
// sequences under a key not indented, strings plain unless YAML would read them as something else, then
// double-quoted. js-yaml's dump takes minutes for a 5,000-node cluster; this is a bench fixture, not a serializer.

const PLAIN = /^[A-Za-z0-9_./][A-Za-z0-9_./ -]*(:[A-Za-z0-9_./-]+)*$/;
// What a YAML reader would take for a bool, null, number or timestamp.
const NOT_PLAIN =
  /^(true|false|null|yes|no|on|off|y|n|~|[-+]?(\.\d+|\d[\d_]*(\.\d*)?([eE][-+]?\d+)?|0x[0-9a-fA-F]+|0o[0-7]+)|\d{4}-\d\d-\d\d.*)$/i;

function scalar(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') {
    return PLAIN.test(v) && !NOT_PLAIN.test(v) && !v.endsWith(' ') && !v.includes(' -') ? v : JSON.stringify(v);
  }
  return String(v);
}

function isEmpty(v: unknown): string | undefined {
  if (Array.isArray(v) && v.length === 0) return '[]';
  if (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0) return '{}';
  return undefined;
}

/** `value` (a mapping) as block YAML lines at `indent`, the first line's indentation written by the caller. */
function mapping(out: string[], value: Record<string, unknown>, indent: string, first: string): void {
  let prefix = first;
  for (const key of Object.keys(value).sort()) {
    const v = value[key];
    if (v === undefined) continue;
    const k = scalar(key);
    const empty = isEmpty(v);
    if (empty) out.push(`${prefix}${k}: ${empty}\n`);
    else if (Array.isArray(v)) {
      out.push(`${prefix}${k}:\n`);
      sequence(out, v, indent);
    } else if (typeof v === 'object' && v !== null) {
      out.push(`${prefix}${k}:\n`);
      mapping(out, v as Record<string, unknown>, `${indent}  `, `${indent}  `);
    } else out.push(`${prefix}${k}: ${scalar(v)}\n`);
    prefix = indent;
  }
}

function sequence(out: string[], items: unknown[], indent: string): void {
  for (const item of items) {
    const empty = isEmpty(item);
    if (empty) out.push(`${indent}- ${empty}\n`);
    else if (Array.isArray(item)) {
      out.push(`${indent}-\n`);
      sequence(out, item, `${indent}  `);
    } else if (typeof item === 'object' && item !== null) {
      mapping(out, item as Record<string, unknown>, `${indent}  `, `${indent}- `);
    } else out.push(`${indent}- ${scalar(item)}\n`);
  }
}

/** A `kind: List` of `items` as kubectl prints it. */
export function kubectlYamlList(items: unknown[]): string {
  const out: string[] = [];
  mapping(out, { apiVersion: 'v1', items, kind: 'List', metadata: { resourceVersion: '' } }, '', '');
  return out.join('');
}
