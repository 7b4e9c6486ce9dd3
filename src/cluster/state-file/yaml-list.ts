// Reads YAML (`kubectl get -o yaml`, multi-document files) from a file one list item at a time, as json-list.ts does
// for JSON: parsing a 168 MB dump whole took 4.5 GB and ran out of heap. The scan only splits lines: documents at
// `---`/`...`, and the block sequence under a document's top-level `items:` at the column of its first `-`; each item,
// and each document without its items, is parsed on its own by js-yaml (YAML 1.2 core schema, as kubectl writes it).
// js-yaml rather than the `yaml` package the rest of the project uses: it parses a pod 6–10× faster (50–60 µs against
// 370–630 µs here), and a dump is a few hundred thousand of them.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { CORE_SCHEMA, load } from 'js-yaml';

const NEWLINE = 0x0a;
const SPACE = 0x20;
const DASH = 0x2d;
const HASH = 0x23;
const DOT = 0x2e;
const CR = 0x0d;
const TAB = 0x09;

/** A YAML syntax error, with the 1-based line of the file it is on. */
export class YamlSyntaxError extends Error {
  readonly line: number;
  constructor(message: string, line: number) {
    super(message);
    this.name = 'YamlSyntaxError';
    this.line = line;
  }
}

export interface YamlEvents {
  /** An element of a document's top-level `items`, parsed; `document` and `index` count from 1 and 0. */
  onItem(item: unknown, document: number, index: number): void;
  /** A document, parsed without its `items` (undefined for an empty one); `items` tells whether it had them. */
  onDocument(head: unknown, document: number, items: boolean): void;
  /** Bytes read so far, after each chunk. */
  onBytes?(bytes: number): void;
}

/** Keeps aliases from expanding into exponential walks later: kubectl never writes any. */
const OPTIONS = { schema: CORE_SCHEMA, maxAliases: 100 };

function parse(text: string, firstLine: number): unknown {
  try {
    return load(text, OPTIONS);
  } catch (err) {
    const e = err as Error & { mark?: { line: number } };
    const line = firstLine + (e.mark?.line ?? 0);
    throw new YamlSyntaxError((e as { reason?: string }).reason ?? e.message.split('\n')[0], line);
  }
}

function isMarker(buf: Buffer, start: number, end: number, c: number): boolean {
  if (end - start < 3 || buf[start] !== c || buf[start + 1] !== c || buf[start + 2] !== c) return false;
  return end - start === 3 || buf[start + 3] === SPACE || buf[start + 3] === TAB || buf[start + 3] === CR;
}

/** The column of the `-` when the line is a block sequence entry (`- x` or `-`), else -1. */
function dashColumn(buf: Buffer, start: number, end: number): number {
  let i = start;
  while (i < end && buf[i] === SPACE) i++;
  if (buf[i] !== DASH) return -1;
  const next = i + 1 < end ? buf[i + 1] : SPACE;
  return next === SPACE || next === TAB || next === CR ? i - start : -1;
}

const ITEMS_KEY = /^items:[ \t]*(#.*)?\r?$/;

/**
 * Streams `file`, calling `onItem` for every element of each document's top-level `items` sequence and `onDocument`
 * for each document (its other members). Throws YamlSyntaxError for a malformed item or document. Returns the
 * SHA-256 of the file's bytes.
 */
export async function streamYamlDocuments(file: string, events: YamlEvents, chunkBytes = 1 << 20): Promise<string> {
  const hash = createHash('sha256');
  let document = 1;
  let head: string[] = [];
  let headLine = 1; // the file line of head[0]
  let sawItems = false;
  let itemsKeyLine = -1; // `items:` seen, its sequence not yet started
  let itemColumn = -1; // inside the items sequence, its `-` at this column
  let index = 0;
  let itemStart = -1; // offset in buf of the current item, -1 when none
  let itemLine = 0;
  let lineNo = 0; // lines completed so far
  let bytes = 0;
  let carry = Buffer.alloc(0);
  let scanFrom = 0; // where in carry the lines not yet seen begin

  const endItem = (buf: Buffer, end: number) => {
    if (itemStart < 0) return;
    const parsed = parse(buf.toString('utf8', itemStart, end), itemLine);
    itemStart = -1;
    events.onItem(Array.isArray(parsed) ? parsed[0] : parsed, document, index++);
  };
  const endDocument = (buf: Buffer, end: number) => {
    endItem(buf, end);
    const text = head.join('\n');
    const empty = head.every((l) => !l.trim() || l.trimStart().startsWith('#'));
    const value = empty ? undefined : parse(text, headLine);
    // A leading `---`, a trailing one, or only comments: no document, as kubectl and the API server see it.
    if ((value !== undefined && value !== null) || sawItems) {
      events.onDocument(value ?? undefined, document, sawItems);
      document++;
    }
    head = [];
    headLine = lineNo + 2;
    sawItems = false;
    itemsKeyLine = -1;
    itemColumn = -1;
    index = 0;
  };
  const headPush = (text: string) => {
    if (head.length === 0) headLine = lineNo + 1;
    head.push(text);
  };

  const lines = (buf: Buffer, from: number, final: boolean): number => {
    let pos = from;
    for (;;) {
      let nl = buf.indexOf(NEWLINE, pos);
      if (nl === -1) {
        if (!final || pos >= buf.length) return pos;
        nl = buf.length;
      }
      const start = pos;
      pos = nl + 1;
      const first = buf[start];
      if (first === DASH && isMarker(buf, start, nl, DASH)) {
        endDocument(buf, start);
        const rest = buf.toString('utf8', start + 3, nl).trim();
        if (rest && !rest.startsWith('#')) headPush(rest);
      } else if (first === DOT && isMarker(buf, start, nl, DOT)) {
        endDocument(buf, start);
      } else if (itemColumn >= 0) {
        const blank = start === nl || first === CR || first === HASH;
        if (!blank && dashColumn(buf, start, nl) === itemColumn) {
          endItem(buf, start);
          itemStart = start;
          itemLine = lineNo + 1;
        } else if (!blank && first !== SPACE && first !== TAB && !(itemColumn === 0 && first === DASH)) {
          // Back at the document's top level: the sequence has ended.
          endItem(buf, start);
          itemColumn = -1;
          headPush(buf.toString('utf8', start, nl));
        }
      } else if (itemsKeyLine >= 0 && !(start === nl || first === CR || first === HASH)) {
        const column = dashColumn(buf, start, nl);
        if (column >= 0 && (column > 0 || first === DASH)) {
          itemColumn = column;
          sawItems = true;
          itemStart = start;
          itemLine = lineNo + 1;
        } else {
          headPush('items:'); // `items:` with no sequence under it: let the document say what it is
          headPush(buf.toString('utf8', start, nl));
        }
        itemsKeyLine = -1;
      } else if (first === 0x69 /* i */ && ITEMS_KEY.test(buf.toString('latin1', start, nl))) {
        itemsKeyLine = lineNo + 1;
      } else if (itemsKeyLine < 0) {
        headPush(buf.toString('utf8', start, nl).replace(/\r$/, ''));
      }
      lineNo++;
    }
  };

  for await (const chunk of createReadStream(file, { highWaterMark: chunkBytes }) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    bytes += chunk.length;
    const buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    const consumed = lines(buf, scanFrom, false);
    // Keep the unfinished line, and the current item from its start: it is parsed once it is complete.
    const keepFrom = itemStart >= 0 ? itemStart : consumed;
    carry = Buffer.from(buf.subarray(keepFrom));
    scanFrom = consumed - keepFrom;
    if (itemStart >= 0) itemStart = 0;
    events.onBytes?.(bytes);
  }
  const rest = lines(carry, scanFrom, true);
  if (itemsKeyLine >= 0) headPush('items:');
  endDocument(carry, rest);
  return hash.digest('hex');
}

/**
 * How many documents with content `file` holds, by its lines alone (a document's top level starts in column 0):
 * whether the item labels need a document number. A trailing or leading `---` adds none.
 */
export async function countYamlDocuments(file: string): Promise<number> {
  let count = 0;
  let content = false;
  let carry = Buffer.alloc(0);
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    const buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    let pos = 0;
    for (let nl = buf.indexOf(NEWLINE); nl !== -1; nl = buf.indexOf(NEWLINE, pos)) {
      const first = buf[pos];
      if ((first === DASH && isMarker(buf, pos, nl, DASH)) || (first === DOT && isMarker(buf, pos, nl, DOT))) {
        if (content) count++;
        content = false;
      } else if (pos < nl && first !== SPACE && first !== TAB && first !== HASH && first !== CR) content = true;
      pos = nl + 1;
    }
    carry = Buffer.from(buf.subarray(pos));
  }
  if (carry.length && carry[0] !== DASH && carry[0] !== SPACE && carry[0] !== HASH) content = true;
  return count + (content ? 1 : 0);
}

/**
 * Replaces, in place, every string of `value` that V8 may hold as a slice of a longer one by a copy of its own:
 * js-yaml's strings are slices of the text it parsed, so one kept name would keep its whole item's text alive (180
 * MiB more heap for a 5,000-node dump). `s + ' '` is a cons string; slicing it makes a flat copy of s and a space.
 */
export function detachStrings(value: unknown): void {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      if (typeof v === 'string') value[i] = v.length >= 13 ? `${v} `.slice(0, -1) : v;
      else if (v && typeof v === 'object') detachStrings(v);
    }
  } else if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const v = record[key];
      if (typeof v === 'string') record[key] = v.length >= 13 ? `${v} `.slice(0, -1) : v;
      else if (v && typeof v === 'object') detachStrings(v);
    }
  }
}
