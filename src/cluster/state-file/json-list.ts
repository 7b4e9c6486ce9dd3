// Reads a JSON List (`kubectl get -o json`) from a file one item at a time: each element of the top-level `items`
// array is parsed on its own and handed over, so a cluster-sized file never exists as one string plus one parsed tree
// (a 165 MiB List took 400 MiB that way, all of it old-generation garbage by the time the extender was ready). The
// scan only finds where items begin and end; JSON.parse still does all the parsing, so a malformed document fails
// there (the items, or the rest of the document with an empty `items`).
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const ITEMS = Buffer.from('items');

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

export interface StreamedList {
  /** The document with `items` empty (every other member as written), or whole when `items` was not found. */
  head: unknown;
  /** Whether the top-level `items` array was found, its elements handed to `onItem`. */
  items: boolean;
  /** SHA-256 of the file's bytes. */
  digest: string;
}

/**
 * Streams `file`, calling `onItem` with each element of the top-level object's `items` array, parsed, in order; then
 * parses the rest of the document. Throws JSON.parse's SyntaxError for a malformed document (possibly after some
 * items were handed over). A document whose `items` is not found this way (no such member, or its key written with
 * escapes) is simply parsed whole as the head.
 */
export async function streamJsonList(
  file: string,
  onItem: (item: unknown, index: number) => void,
  chunkBytes = 1 << 20,
  onBytes?: (bytes: number) => void,
): Promise<StreamedList> {
  const hash = createHash('sha256');
  const head: Buffer[] = [];
  let depth = 0;
  let inString = false;
  let escaped = false;
  // Recognising `"items": [` at depth 1: the last string's bytes, then 1 = it was "items", 2 = and a colon followed.
  let keyStart = -1;
  let key: Buffer[] = [];
  let itemsKey = 0;
  let inItems = false; // inside the items array (depth 2 is its own level)
  let foundItems = false;
  let itemStart = -1; // where the current item began in this chunk, -1 between items
  let item: Buffer[] = [];
  let index = 0;

  const endItem = (chunk: Buffer, end: number) => {
    item.push(chunk.subarray(itemStart, end));
    const text = item.length === 1 ? item[0].toString('utf8') : Buffer.concat(item).toString('utf8');
    item = [];
    itemStart = -1;
    onItem(JSON.parse(text), index++);
  };

  let bytes = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: chunkBytes }) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    bytes += chunk.length;
    let headFrom = inItems ? -1 : 0;
    if (keyStart >= 0) keyStart = 0;
    // Most bytes are inside strings: skip to the closing quote with indexOf rather than byte by byte.
    let backslash = chunk.indexOf(BACKSLASH);
    for (let i = 0; i < chunk.length; i++) {
      if (inString) {
        if (escaped) {
          escaped = false;
          continue;
        }
        const quote = chunk.indexOf(QUOTE, i);
        if (backslash !== -1 && backslash < i) backslash = chunk.indexOf(BACKSLASH, i);
        if (backslash !== -1 && (quote === -1 || backslash < quote)) {
          escaped = true; // the next byte, in this chunk or the next, is escaped
          i = backslash;
          continue;
        }
        if (quote === -1) break; // the string goes on in the next chunk
        i = quote;
        inString = false;
        if (keyStart >= 0) {
          key.push(chunk.subarray(keyStart, i));
          itemsKey = Buffer.concat(key).equals(ITEMS) ? 1 : 0;
          keyStart = -1;
          key = [];
        }
        continue;
      }
      const c = chunk[i];
      if (isSpace(c)) continue;
      if (inItems && depth === 2) {
        // Between items, or at the end of a scalar item.
        if (c === COMMA || c === CLOSE_BRACKET) {
          if (itemStart >= 0) endItem(chunk, i);
          if (c === CLOSE_BRACKET) {
            inItems = false;
            depth = 1;
            headFrom = i; // the head gets `[` (written when the array opened) and this `]`
          }
          continue;
        }
        if (itemStart < 0) itemStart = i;
      }
      if (c === QUOTE) {
        inString = true;
        if (depth === 1 && !inItems) keyStart = i + 1;
        itemsKey = 0;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        if (depth === 1 && itemsKey === 2 && c === OPEN_BRACKET) {
          head.push(chunk.subarray(headFrom, i + 1));
          headFrom = -1;
          inItems = true;
          foundItems = true;
        }
        depth++;
        itemsKey = 0;
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        depth--;
        itemsKey = 0;
        if (inItems && depth === 2 && itemStart >= 0) {
          // An object or array item ends with its bracket: hand it over now, the comma is not needed.
          endItem(chunk, i + 1);
        }
      } else if (c === COLON && itemsKey === 1 && depth === 1) {
        itemsKey = 2;
      } else {
        itemsKey = 0;
      }
    }
    if (keyStart >= 0) key.push(chunk.subarray(keyStart));
    if (itemStart >= 0) {
      item.push(chunk.subarray(itemStart));
      itemStart = 0;
    }
    if (headFrom >= 0) head.push(chunk.subarray(headFrom));
    onBytes?.(bytes);
  }
  if (itemStart >= 0 || item.length > 0) throw new SyntaxError('Unexpected end of JSON input');
  return { head: JSON.parse(Buffer.concat(head).toString('utf8')), items: foundItems, digest: hash.digest('hex') };
}
