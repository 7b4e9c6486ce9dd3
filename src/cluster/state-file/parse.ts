// Turns a cluster-state file's text into trimmed-type objects per kind. Accepts every shape `kubectl get -o yaml|json`
// prints (a `List`, a typed `XList` whose items carry no kind, a single object) and multi-document YAML.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, open, readFile, stat } from 'node:fs/promises';
import { parseAllDocuments } from 'yaml';
import { trimObject } from '../trim.ts';
import { type AnyObject, KINDS, type Kind, NAMESPACED, namespaceOf } from '../types.ts';
import { ClusterStateError, unreadableReason } from './error.ts';
import { type StreamedList, streamJsonList } from './json-list.ts';
import { normalizeObject } from './normalize.ts';
import { FieldError, isRecord, type Json, validateObject } from './validate.ts';
import { countYamlDocuments, detachStrings, streamYamlDocuments, YamlSyntaxError } from './yaml-list.ts';

export interface ParsedClusterState {
  /** Validated, normalised and trimmed: the objects as the store keeps them. */
  objects: Map<Kind, AnyObject[]>;
  /** Kinds the extender does not store, with how many objects of each the file held. */
  skipped: Map<string, number>;
}

/**
 * Where an object is in the file: a document (`document 2`), or an item of a list there, whose text (`items[7]`) is
 * built only for a message: a cluster-sized file has 700,000 items, and the duplicate check keeps one of these each.
 */
type Where = string | { readonly list: string; readonly index: number };

interface Located {
  value: unknown;
  where: Where;
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

/** Validates, normalises and trims objects one at a time into per-kind lists. */
function collector(file: string, documentCount: number, detach = false) {
  const objects = new Map<Kind, AnyObject[]>(KINDS.map((k) => [k, []]));
  const skipped = new Map<string, number>();
  // Kind and namespace, then the object's own name string: no key string per object is kept for the whole read.
  const seen = new Map<string, Map<string, Where>>();
  let count = 0;
  /** `items[7]` in a file of one document, `document 2, items[7]` in one of several. */
  const whereText = (where: Where): string => {
    if (typeof where === 'string') return where;
    return documentCount === 1 && where.list === 'document 1'
      ? `items[${where.index}]`
      : `${where.list}, items[${where.index}]`;
  };

  // Recursive over lists rather than a queue: a cluster-sized List holds 100,000+ items.
  const visit = ({ value, where, listItemKind }: Located): void => {
    if (value === null || value === undefined) return; // an empty document (e.g. a trailing `---`)
    if (!isRecord(value))
      throw new ClusterStateError(
        file,
        `${whereText(where)}: expected an object, got ${Array.isArray(value) ? 'an array' : typeof value}`,
      );
    const kind = typeof value.kind === 'string' && value.kind ? value.kind : listItemKind;
    if (!kind) throw new ClusterStateError(file, `${label('object', value, whereText(where))}: kind is required`);
    if (kind.endsWith('List') && 'items' in value) {
      if (!Array.isArray(value.items))
        throw new ClusterStateError(file, `${kind} at ${whereText(where)}: items must be an array`);
      const items = value.items;
      for (let i = 0; i < items.length; i++) {
        visit({ value: items[i], where: { list: whereText(where), index: i }, listItemKind: listItemKindOf(kind) });
        // Only the trimmed copy is kept: let the parsed item go now rather than with the whole file's tree.
        items[i] = undefined;
      }
      return;
    }
    count++;
    if (!KNOWN.has(kind)) {
      skipped.set(kind, (skipped.get(kind) ?? 0) + 1);
      return;
    }
    const k = kind as Kind;
    try {
      validateObject(k, value);
    } catch (err) {
      if (err instanceof FieldError)
        throw new ClusterStateError(file, `${label(kind, value, whereText(where))}: ${err.message}`);
      throw err;
    }
    const obj = trimObject(k, normalizeObject(k, value));
    if (detach) detachStrings(obj);
    const scope = NAMESPACED.has(k) ? `${k} ${namespaceOf(obj)}` : k;
    let names = seen.get(scope);
    if (!names) {
      names = new Map();
      seen.set(scope, names);
    }
    const first = names.get(obj.metadata.name);
    if (first !== undefined)
      throw new ClusterStateError(
        file,
        `${label(kind, value, whereText(where))}: duplicate of the object at ${whereText(first)}`,
      );
    names.set(obj.metadata.name, where);
    objects.get(k)!.push(obj);
  };
  // Labels of the documents, one string each rather than one per item.
  const documentLabels: string[] = [];
  const itemWhere = (document: number, index: number): Where => {
    documentLabels[document] ??= `document ${document}`;
    return { list: documentLabels[document], index };
  };
  const result = (): ParsedClusterState => {
    // An empty file is a mistake (a failed `kubectl get > dump.yaml`), not a cluster without nodes.
    if (count === 0)
      throw new ClusterStateError(
        file,
        'holds no Kubernetes objects (it is empty, or every document or List in it is)',
      );
    return { objects, skipped };
  };
  return { visit, itemWhere, result, count: () => count };
}

/** `NodeList` → `Node`: the kind of a typed list's items, which omit theirs. */
function listItemKindOf(kind: string): string | undefined {
  return kind === 'List' ? undefined : kind.slice(0, -'List'.length);
}

export function parseClusterState(text: string, file: string): ParsedClusterState {
  const docs = documents(text, file);
  const { visit, result } = collector(file, docs.length);
  for (const doc of docs) visit(doc);
  return result();
}

const unreadable = (file: string, err: unknown) =>
  new ClusterStateError(file, `cannot read the file: ${unreadableReason(err)}`);

/** SHA-256 of the file's bytes: whether it changed since it was last applied. */
export async function fileDigest(file: string): Promise<string> {
  const hash = createHash('sha256');
  try {
    for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  } catch (err) {
    throw unreadable(file, err);
  }
  return hash.digest('hex');
}

async function startsWithBrace(file: string): Promise<boolean> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(file);
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(4096), 0, 4096, 0);
    return /^\s*\{/.test(buffer.toString('utf8', 0, bytesRead));
  } catch (err) {
    throw unreadable(file, err);
  } finally {
    await handle?.close();
  }
}

/** How far a read has come: bytes of the file read and objects handed to the collector so far. */
export interface ReadProgress {
  bytes: number;
  totalBytes: number;
  objects: number;
}

/**
 * Reads and parses a cluster-state file item by item, with a SHA-256 digest of its bytes: a JSON List through
 * json-list.ts, YAML through yaml-list.ts, so a cluster-sized file never exists as one string plus one parsed tree.
 * A JSON document that is not a List (or is malformed) is parsed whole, which also gives it its error message.
 */
export async function readClusterState(
  file: string,
  onProgress?: (progress: ReadProgress) => void,
): Promise<{ parsed: ParsedClusterState; digest: string }> {
  let totalBytes: number;
  try {
    totalBytes = (await stat(file)).size;
  } catch (err) {
    throw unreadable(file, err);
  }
  const json = await startsWithBrace(file);
  const documentCount = json ? 1 : await countYamlDocuments(file);
  const { visit, itemWhere, result, count } = collector(file, documentCount, !json);
  const onBytes = (bytes: number) => onProgress?.({ bytes, totalBytes, objects: count() });
  // A typed list's items carry no kind: they wait for the list's own, which may come after them (kubectl sorts keys).
  const deferred: { item: unknown; where: Where }[] = [];
  const onItem = (item: unknown, where: Where) => {
    if (isRecord(item) && !item.kind) deferred.push({ item, where });
    else visit({ value: item, where });
  };
  const listHead = (head: unknown, where: string) => {
    if (!isRecord(head) || typeof head.kind !== 'string' || !head.kind.endsWith('List'))
      throw new ClusterStateError(file, `${where}: top-level items outside a List`);
    for (const { item, where } of deferred.splice(0))
      visit({ value: item, where, listItemKind: listItemKindOf(head.kind) });
  };
  if (!json) {
    try {
      const digest = await streamYamlDocuments(file, {
        onItem: (item, d, i) => onItem(item, itemWhere(d, i)),
        onDocument: (head, d, items) => {
          if (items) listHead(head, `document ${d}`);
          else visit({ value: head, where: `document ${d}` });
        },
        onBytes,
      });
      return { parsed: result(), digest };
    } catch (err) {
      if (err instanceof ClusterStateError) throw err;
      if (err instanceof YamlSyntaxError)
        throw new ClusterStateError(file, `invalid YAML at line ${err.line}: ${err.message}`);
      throw unreadable(file, err);
    }
  }
  let streamed: StreamedList | undefined;
  try {
    streamed = await streamJsonList(file, (item, i) => onItem(item, itemWhere(1, i)), undefined, onBytes);
  } catch (err) {
    if (err instanceof ClusterStateError) throw err;
    // A syntax error is reported by the whole-file parse below, with JSON.parse's message for the whole text.
    if (!(err instanceof SyntaxError)) throw unreadable(file, err);
  }
  if (streamed?.items) {
    listHead(streamed.head, 'document 1');
    return { parsed: result(), digest: streamed.digest };
  }
  if (streamed) {
    visit({ value: streamed.head, where: 'document 1' });
    return { parsed: result(), digest: streamed.digest };
  }
  const bytes = await readFile(file).catch((err) => {
    throw unreadable(file, err);
  });
  const digest = createHash('sha256').update(bytes).digest('hex');
  return { parsed: parseClusterState(bytes.toString('utf8'), file), digest };
}
