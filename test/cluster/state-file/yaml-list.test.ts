import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { ClusterStateError } from '../../../src/cluster/state-file/error.ts';
import { parseClusterState, readClusterState } from '../../../src/cluster/state-file/parse.ts';
import { countYamlDocuments, streamYamlDocuments } from '../../../src/cluster/state-file/yaml-list.ts';
import { NODE_A, POD_WEB, tempDir } from './helpers.ts';

let dir: Awaited<ReturnType<typeof tempDir>>;
before(async () => {
  dir = await tempDir();
});
after(() => dir.cleanup());

/** Each document as the whole-text parser reads it, its items listed apart and the document without them. */
function whole(text: string) {
  return parseAllDocuments(text)
    .map((d) => d.toJS())
    .filter((v) => v !== null && v !== undefined)
    .map((v) => {
      const { items, ...head } = v;
      return Array.isArray(items) && items.length > 0 ? { head, items } : { head: v, items: [] };
    });
}

async function streamed(text: string, chunkBytes: number) {
  const file = await dir.file('c.yaml', text);
  const docs: { head: unknown; items: unknown[] }[] = [];
  let items: unknown[] = [];
  await streamYamlDocuments(
    file,
    {
      onItem: (item, d, i) => {
        assert.equal(d, docs.length + 1);
        assert.equal(i, items.length);
        items.push(item);
      },
      onDocument: (head, d) => {
        assert.equal(d, docs.length + 1);
        docs.push({ head, items });
        items = [];
      },
    },
    chunkBytes,
  );
  return docs;
}

// kubectl writes `items:` as an indentless sequence; other tools indent it. Block scalars hold lines that look
// like items and document markers only when indented, comments sit between items, files end with or without `\n`.
const KUBECTL = `apiVersion: v1
items:
# nodes
- apiVersion: v1
  kind: Node
  metadata:
    annotations:
      note: |
        - not an item
        ---
        items:
    name: a
-   kind: Pod
    metadata: {name: "p", namespace: x}

- kind: Node
  metadata:
    name: "b\\n- c"
kind: List
metadata:
  resourceVersion: ""
`;
const INDENTED = `kind: NodeList
items:
  - metadata:
      name: c
  - metadata: {name: d}
apiVersion: v1`;
const MIXED = `# leading comment\n---\n${KUBECTL}---\n${NODE_A}...\n---\n${INDENTED}\n---\nkind: List\nitems: []\n---\n`;

describe('YAML read one list item at a time', () => {
  it('hands over each item and each document without its items as parsing the whole text does, in any chunking', async () => {
    for (const text of [KUBECTL, INDENTED, MIXED, MIXED.replaceAll('\n', '\r\n')]) {
      for (const chunkBytes of [1, 3, 16, 1 << 20]) {
        assert.deepEqual(await streamed(text, chunkBytes), whole(text), `chunks of ${chunkBytes}`);
      }
    }
  });

  it('counts the documents with content', async () => {
    assert.equal(await countYamlDocuments(await dir.file('m.yaml', MIXED)), 4);
    assert.equal(await countYamlDocuments(await dir.file('k.yaml', KUBECTL)), 1);
  });

  it('reads a file into the objects parseClusterState makes, naming items as it does', async () => {
    for (const text of [KUBECTL, `${NODE_A}---\n${POD_WEB}`, MIXED]) {
      const file = await dir.file('c.yaml', text);
      assert.deepEqual((await readClusterState(file)).parsed, parseClusterState(text, file));
    }
    const bad = KUBECTL.replace('-   kind: Pod', '-   kind: Pod\n    spec: {containers: 3}');
    const file = await dir.file('bad.yaml', bad);
    await assert.rejects(readClusterState(file), { message: /bad\.yaml: Pod x\/p \(items\[1\]\): \/spec\/containers/ });
    const two = await dir.file('two.yaml', `${NODE_A}---\n${bad}`);
    await assert.rejects(readClusterState(two), { message: /Pod x\/p \(document 2, items\[1\]\)/ });
  });

  it('reports a syntax error with its line in the file', async () => {
    const file = await dir.file('syntax.yaml', KUBECTL.replace('name: a\n', 'name: [a\n'));
    await assert.rejects(readClusterState(file), { message: /^.*syntax\.yaml: invalid YAML at line 1[1-3]: / });
  });

  it('reports progress: bytes of the file read and objects read so far', async () => {
    const file = await dir.file('c.yaml', KUBECTL);
    const seen: { bytes: number; totalBytes: number; objects: number }[] = [];
    await readClusterState(file, (p) => seen.push(p));
    assert.deepEqual(seen.at(-1), { bytes: KUBECTL.length, totalBytes: KUBECTL.length, objects: 3 });
  });
});

describe('a cluster-state file without objects', () => {
  for (const [name, text] of [
    ['empty', ''],
    ['only comments and markers', '# nothing\n---\n---\n'],
    ['an empty List', 'apiVersion: v1\nkind: List\nitems: []\n'],
    ['an empty JSON List', '{"kind":"List","items":[]}'],
  ]) {
    it(`is an error naming the file: ${name}`, async () => {
      const file = await dir.file(name.replaceAll(' ', '-'), text);
      await assert.rejects(readClusterState(file), (err: Error) => {
        assert.ok(err instanceof ClusterStateError);
        assert.equal(
          err.message,
          `${file}: holds no Kubernetes objects (it is empty, or every document or List in it is)`,
        );
        return true;
      });
    });
  }
});
