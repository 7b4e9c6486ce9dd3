// Turns a cluster-state file's text into trimmed-type objects per kind. Accepts every shape `kubectl get -o yaml|json`
// prints (a `List`, a typed `XList` whose items carry no kind, a single object) and multi-document YAML.
import { parseAllDocuments } from 'yaml';
import { type AnyObject, KINDS, type Kind, objectKey } from '../types.ts';
import { ClusterStateError } from './error.ts';
import { normalizeObject } from './normalize.ts';
import { FieldError, isRecord, type Json, validateObject } from './validate.ts';

export interface ParsedClusterState {
  objects: Map<Kind, AnyObject[]>;
  /** Kinds the extender does not store, with how many objects of each the file held. */
  skipped: Map<string, number>;
}

interface Located {
  value: unknown;
  where: string;
  /** The kind implied by a typed list (`NodeList` → `Node`) for items that omit theirs. */
  listItemKind?: string;
}

const KNOWN = new Set<string>(KINDS);

function documents(text: string, file: string): Located[] {
  if (/^\s*\{/.test(text)) {
    try {
      return [{ value: JSON.parse(text), where: 'document 1' }];
    } catch (err) {
      throw new ClusterStateError(file, `invalid JSON: ${(err as Error).message}`);
    }
  }
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs)) return [];
  return docs.map((doc, i) => {
    const err = doc.errors[0];
    if (err) throw new ClusterStateError(file, `invalid YAML in document ${i + 1}: ${err.message.split('\n')[0]}`);
    return { value: doc.toJS({ maxAliasCount: 1000 }), where: `document ${i + 1}` };
  });
}

function label(kind: string, value: Json, where: string): string {
  const meta = isRecord(value.metadata) ? value.metadata : {};
  const name = typeof meta.name === 'string' && meta.name ? meta.name : undefined;
  if (!name) return `${kind} at ${where}`;
  const ns = typeof meta.namespace === 'string' && meta.namespace ? `${meta.namespace}/` : '';
  return `${kind} ${ns}${name} (${where})`;
}

export function parseClusterState(text: string, file: string): ParsedClusterState {
  const objects = new Map<Kind, AnyObject[]>(KINDS.map((k) => [k, []]));
  const skipped = new Map<string, number>();
  const seen = new Map<string, string>();
  const docs = documents(text, file);

  // Recursive over lists rather than a queue: a cluster-sized List holds 100,000+ items.
  const visit = ({ value, where, listItemKind }: Located): void => {
    if (value === null || value === undefined) return; // an empty document (e.g. a trailing `---`)
    if (!isRecord(value))
      throw new ClusterStateError(
        file,
        `${where}: expected an object, got ${Array.isArray(value) ? 'an array' : typeof value}`,
      );
    const kind = typeof value.kind === 'string' && value.kind ? value.kind : listItemKind;
    if (!kind) throw new ClusterStateError(file, `${label('object', value, where)}: kind is required`);
    if (kind.endsWith('List') && 'items' in value) {
      if (!Array.isArray(value.items)) throw new ClusterStateError(file, `${kind} at ${where}: items must be an array`);
      const itemKind = kind === 'List' ? undefined : kind.slice(0, -'List'.length);
      const prefix = docs.length === 1 && where === 'document 1' ? '' : `${where}, `;
      value.items.forEach((item, i) => {
        visit({ value: item, where: `${prefix}items[${i}]`, listItemKind: itemKind });
      });
      return;
    }
    if (!KNOWN.has(kind)) {
      skipped.set(kind, (skipped.get(kind) ?? 0) + 1);
      return;
    }
    const k = kind as Kind;
    try {
      validateObject(k, value);
    } catch (err) {
      if (err instanceof FieldError) throw new ClusterStateError(file, `${label(kind, value, where)}: ${err.message}`);
      throw err;
    }
    const obj = normalizeObject(k, value);
    const id = `${kind} ${objectKey(k, obj)}`;
    const first = seen.get(id);
    if (first) throw new ClusterStateError(file, `${label(kind, value, where)}: duplicate of the object at ${first}`);
    seen.set(id, where);
    objects.get(k)!.push(obj);
  };

  for (const doc of docs) visit(doc);
  return { objects, skipped };
}
