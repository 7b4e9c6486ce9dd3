import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { streamJsonList } from '../../../src/cluster/state-file/json-list.ts';
import { tempDir } from './helpers.ts';

let dir: Awaited<ReturnType<typeof tempDir>>;
before(async () => {
  dir = await tempDir();
});
after(() => dir.cleanup());

async function stream(text: string, chunkBytes?: number) {
  const file = await dir.file('list.json', text);
  const items: [number, unknown][] = [];
  const { head, items: found } = await streamJsonList(file, (item, i) => items.push([i, item]), chunkBytes);
  return { head, found, items };
}

describe('a JSON List read one item at a time', () => {
  it('hands over each item as JSON.parse reads it, and the rest of the document with items empty', async () => {
    const text =
      '{"kind":"List","metadata":{"x":"]}\\\\\\"items\\"[{\\\\"},"items" : [ {"kind":"Node","metadata":' +
      '{"name":"a]}\\\\\\\\"}}, null ,"s\\"]",[1,2],{"kind":"Pod","ü":"€"}],"z":1}';
    const whole = JSON.parse(text);
    for (const chunkBytes of [1, 2, 3, 7, 1 << 20]) {
      const { head, found, items } = await stream(text, chunkBytes);
      assert.equal(found, true);
      assert.deepEqual(head, { ...whole, items: [] }, `chunks of ${chunkBytes}`);
      assert.deepEqual(
        items,
        whole.items.map((item: unknown, i: number) => [i, item]),
      );
    }
  });

  it('parses a document without a top-level items array whole, handing nothing over', async () => {
    const text = '{"kind":"Node","metadata":{"name":"n","items":[1]},"spec":{"items":[2]}}';
    assert.deepEqual(await stream(text, 5), { head: JSON.parse(text), found: false, items: [] });
  });

  it('throws JSON.parse’s SyntaxError for a malformed item or document', async () => {
    await assert.rejects(stream('{"kind":"List","items":[{"a":}]}'), SyntaxError);
    await assert.rejects(stream('{"kind":"List","items":[{"a":1}]'), SyntaxError);
    await assert.rejects(stream('{"kind":"List","items":[{"a":1}'), SyntaxError);
    await assert.rejects(stream('{"kind":"List",,"items":[]}'), SyntaxError);
  });

  it('agrees with JSON.parse on arbitrary lists, in chunks of any size', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.jsonValue(), { maxLength: 6 }),
        fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 }),
        fc.integer({ min: 1, max: 64 }),
        fc.boolean(),
        async (list, rest, chunkBytes, pretty) => {
          const { items: _dropped, ...others } = rest;
          const doc = { ...others, items: list };
          const text = pretty ? JSON.stringify(doc, null, 2) : JSON.stringify(doc);
          const { head, found, items } = await stream(text, chunkBytes);
          assert.equal(found, true);
          assert.deepEqual(head, JSON.parse(JSON.stringify({ ...others, items: [] })));
          assert.deepEqual(
            items.map(([, item]) => item),
            JSON.parse(text).items,
          );
        },
      ),
      { numRuns: 200 },
    );
  });
});
