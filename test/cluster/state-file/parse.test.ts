import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { ClusterStateError } from '../../../src/cluster/state-file/error.ts';
import { parseClusterState, readClusterState } from '../../../src/cluster/state-file/parse.ts';
import { type Kind, objectKey } from '../../../src/cluster/types.ts';
import { NODE_A, POD_WEB, tempDir } from './helpers.ts';

function names(text: string, kind: Kind, file = 'cluster.yaml'): string[] {
  return (parseClusterState(text, file).objects.get(kind) ?? []).map((o) =>
    o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name,
  );
}

function failure(text: string, file = 'cluster.yaml'): string {
  try {
    parseClusterState(text, file);
  } catch (err) {
    assert.ok(err instanceof ClusterStateError, `expected a ClusterStateError, got ${err}`);
    return err.message;
  }
  assert.fail('expected the file to be rejected');
}

/** The items of a YAML List, as plain objects (what kubectl get -o json would print for them). */
const parseAllItems = (text: string) => (parseAllDocuments(text)[0] as { toJS(): { items: unknown[] } }).toJS().items;

describe('cluster-state file parsing', () => {
  it('reads a kind: List as kubectl get -o yaml prints it', () => {
    const indent = (s: string) => `${s.trimEnd().replace(/^/gm, '  ').replace(/^ {2}/, '- ')}\n`;
    const text = `apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: ""\nitems:\n${indent(NODE_A)}${indent(POD_WEB)}`;
    assert.deepEqual(names(text, 'Node'), ['node-a']);
    assert.deepEqual(names(text, 'Pod'), ['shop/web']);
  });

  it('reads multi-document YAML, skipping empty documents', () => {
    const text = `---\n${NODE_A}---\n${POD_WEB}---\n`;
    assert.deepEqual(names(text, 'Node'), ['node-a']);
    assert.deepEqual(names(text, 'Pod'), ['shop/web']);
  });

  it('reads a single object', () => {
    assert.deepEqual(names(NODE_A, 'Node'), ['node-a']);
  });

  it('reads kubectl get -o json output (a List whose items carry their kind)', () => {
    const json = JSON.stringify(
      {
        apiVersion: 'v1',
        kind: 'List',
        metadata: { resourceVersion: '' },
        items: [
          {
            apiVersion: 'storage.k8s.io/v1',
            kind: 'StorageClass',
            metadata: { name: 'fast', uid: 'a5b1c2d3-0000-4000-8000-000000000001', resourceVersion: '812' },
            provisioner: 'disk.csi.example.com',
            volumeBindingMode: 'WaitForFirstConsumer',
          },
          {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            metadata: { name: 'data', namespace: 'db', creationTimestamp: '2026-11-01T10:00:00Z' },
            spec: {
              accessModes: ['ReadWriteOnce'],
              resources: { requests: { storage: '10Gi' } },
              storageClassName: 'fast',
            },
            status: { phase: 'Pending' },
          },
        ],
      },
      null,
      4,
    );
    const { objects } = parseClusterState(json, 'cluster.json');
    const sc = objects.get('StorageClass')![0];
    assert.equal(sc.metadata.uid, 'a5b1c2d3-0000-4000-8000-000000000001');
    assert.equal(sc.metadata.resourceVersion, '812');
    assert.deepEqual(names(json, 'PersistentVolumeClaim'), ['db/data']);
  });

  it('reads a typed list (NodeList from the API) whose items omit kind and apiVersion', () => {
    const json = JSON.stringify({
      kind: 'NodeList',
      apiVersion: 'v1',
      metadata: { resourceVersion: '99' },
      items: [{ metadata: { name: 'n1' } }, { metadata: { name: 'n2' } }],
    });
    assert.deepEqual(names(json, 'Node'), ['n1', 'n2']);
  });

  it('rejects an item without kind inside a plain List, naming where it is', () => {
    const msg = failure(`kind: List\nitems:\n- metadata:\n    name: orphan\n`);
    assert.match(msg, /^cluster\.yaml: object orphan \(items\[0\]\): kind is required$/);
  });

  it('reads Services and ReplicationControllers, ReplicaSets and StatefulSets, as kubectl get -o yaml prints them, down to namespace, name and selector', () => {
    const text = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: {name: web, namespace: shop, labels: {app: web}}
  spec: {selector: {app: web}, ports: [{port: 80}], clusterIP: 10.0.0.1}
- apiVersion: v1
  kind: Service
  metadata: {name: external, namespace: shop}
  spec: {type: ExternalName, externalName: example.com}
- apiVersion: v1
  kind: ReplicationController
  metadata: {name: legacy}
  spec: {selector: {app: legacy}, template: {metadata: {labels: {app: legacy}}}}
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata: {name: web-7d9f8, namespace: shop, annotations: {deployment.kubernetes.io/revision: "3"}}
  spec:
    replicas: 3
    selector: {matchLabels: {app: web}, matchExpressions: [{key: tier, operator: In, values: [front]}]}
    template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c, image: nginx}]}}
  status: {replicas: 3}
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: db, namespace: shop}
  spec: {serviceName: db, selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}}}
`;
    const { objects } = parseClusterState(text, 'cluster.yaml');
    const specs = (kind: Kind) =>
      (objects.get(kind) ?? []).map((o) => [objectKey(kind, o), (o as { spec: object }).spec]);
    assert.deepEqual(specs('Service'), [
      ['shop/web', { selector: { app: 'web' } }],
      ['shop/external', {}],
    ]);
    assert.deepEqual(specs('ReplicationController'), [['default/legacy', { selector: { app: 'legacy' } }]]);
    assert.deepEqual(specs('ReplicaSet'), [
      [
        'shop/web-7d9f8',
        {
          selector: {
            matchLabels: { app: 'web' },
            matchExpressions: [{ key: 'tier', operator: 'In', values: ['front'] }],
          },
        },
      ],
    ]);
    assert.deepEqual(specs('StatefulSet'), [['shop/db', { selector: { matchLabels: { app: 'db' } } }]]);
    const rs = objects.get('ReplicaSet')![0];
    assert.deepEqual(Object.keys(rs.metadata).sort(), ['name', 'namespace', 'resourceVersion', 'uid']);
    // The same objects from kubectl get -o json: one parse for both.
    const json = parseClusterState(JSON.stringify({ kind: 'List', items: parseAllItems(text) }), 'cluster.json');
    assert.deepEqual(json.objects, objects);
  });

  it('reads Namespaces down to their name and labels (what a namespaceSelector matches)', () => {
    const text = `kind: Namespace
metadata: {name: shop, labels: {kubernetes.io/metadata.name: shop, team: web}, annotations: {owner: me}}
spec: {finalizers: [kubernetes]}
status: {phase: Active}
`;
    const [ns] = parseClusterState(text, 'cluster.yaml').objects.get('Namespace')!;
    assert.deepEqual(Object.keys(ns), ['metadata']);
    assert.deepEqual(ns.metadata.labels, { 'kubernetes.io/metadata.name': 'shop', team: 'web' });
    assert.equal(ns.metadata.namespace, undefined);
    assert.match(
      failure(`kind: Namespace\nmetadata: {name: shop, labels: {team: [web]}}\n`),
      /^cluster\.yaml: Namespace shop \(document 1\): \/metadata\/labels\/team must be string \(got an array\)$/,
    );
  });

  it('rejects a Service or controller whose selector has the wrong shape, in one sentence naming the object and the field', () => {
    const cases: [string, RegExp][] = [
      [
        `kind: Service\nmetadata: {name: web}\nspec: {selector: app=web}\n`,
        /^cluster\.yaml: Service web \(document 1\): \/spec\/selector must be object \(got string "app=web"\)$/,
      ],
      [
        `kind: ReplicationController\nmetadata: {name: rc}\nspec: {selector: {app: 5}}\n`,
        /^cluster\.yaml: ReplicationController rc \(document 1\): \/spec\/selector\/app must be string \(got number 5\)$/,
      ],
      [
        `kind: ReplicaSet\nmetadata: {name: rs, namespace: shop}\nspec: {selector: {matchLabels: [app]}}\n`,
        /^cluster\.yaml: ReplicaSet shop\/rs \(document 1\): \/spec\/selector\/matchLabels must be object \(got an array\)$/,
      ],
      [
        `kind: StatefulSet\nmetadata: {name: db}\nspec: {selector: {matchExpressions: {key: app}}}\n`,
        /^cluster\.yaml: StatefulSet db \(document 1\): \/spec\/selector\/matchExpressions must be array \(got an object\)$/,
      ],
    ];
    for (const [text, message] of cases) assert.match(failure(text), message);
  });

  it('counts kinds the extender does not store as skipped', () => {
    const text = `kind: List\nitems:\n- kind: Secret\n  metadata: {name: a}\n- kind: Secret\n  metadata: {name: b}\n- kind: ConfigMap\n  metadata: {name: s}\n`;
    const { skipped, objects } = parseClusterState(text, 'cluster.yaml');
    assert.deepEqual(
      [...skipped],
      [
        ['Secret', 2],
        ['ConfigMap', 1],
      ],
    );
    assert.equal([...objects.values()].flat().length, 0);
  });

  it('synthesizes a UUID-shaped uid from kind, namespace and name, the same on every load', () => {
    const first = parseClusterState(POD_WEB, 'a.yaml').objects.get('Pod')![0].metadata.uid;
    const again = parseClusterState(`# edited\n${POD_WEB}`, 'a.yaml').objects.get('Pod')![0].metadata.uid;
    assert.match(first, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(again, first);
    const other = parseClusterState(POD_WEB.replace('namespace: shop', 'namespace: other'), 'a.yaml').objects.get(
      'Pod',
    )![0];
    assert.notEqual(other.metadata.uid, first);
  });

  it('puts namespaced objects without a namespace in "default" and drops namespaces from cluster-scoped ones', () => {
    const text = `kind: PersistentVolumeClaim\nmetadata:\n  name: c\nspec: {}\n---\n${NODE_A.replace('name: node-a\n', 'name: node-a\n  namespace: x\n')}`;
    assert.deepEqual(names(text, 'PersistentVolumeClaim'), ['default/c']);
    assert.equal(parseClusterState(text, 'f').objects.get('Node')![0].metadata.namespace, undefined);
  });

  it('leaves a missing or non-integer resourceVersion for the state to assign', () => {
    const text = `${NODE_A}---\nkind: Node\nmetadata:\n  name: b\n  resourceVersion: "abc"\n---\nkind: Node\nmetadata:\n  name: c\n  resourceVersion: 17\n`;
    const rvs = parseClusterState(text, 'f')
      .objects.get('Node')!
      .map((n) => n.metadata.resourceVersion);
    assert.deepEqual(rvs, ['', '', '17']);
  });

  describe('malformed files fail with a message naming the file, the object and the problem', () => {
    it('a YAML syntax error', () => {
      assert.match(failure('kind: Node\nmetadata:\n  name: [oops\n'), /^cluster\.yaml: invalid YAML in document 1: /);
    });

    it('invalid JSON', () => {
      assert.match(failure('{"kind": "Node",', 'c.json'), /^c\.json: invalid JSON: /);
    });

    it('an object without metadata.name', () => {
      assert.equal(
        failure(`kind: List\nitems:\n- kind: Pod\n  metadata:\n    namespace: x\n  spec:\n    containers: []\n`),
        'cluster.yaml: Pod at items[0]: /metadata/name is required',
      );
    });

    it('non-array containers', () => {
      assert.equal(
        failure(POD_WEB.replace(/containers:[\s\S]*$/, 'containers:\n    name: web\n')),
        'cluster.yaml: Pod shop/web (document 1): /spec/containers must be array (got an object)',
      );
    });

    it('an unparseable PV capacity', () => {
      const pv = `---\n${NODE_A}---\nkind: PersistentVolume\nmetadata:\n  name: pv1\nspec:\n  capacity:\n    storage: 10 gigs\n`;
      assert.match(
        failure(pv),
        /^cluster\.yaml: PersistentVolume pv1 \(document 2\): \/spec\/capacity\/storage must be a quantity: quantities must match/,
      );
    });

    it('an unparseable PVC request', () => {
      const pvc = `kind: PersistentVolumeClaim\nmetadata:\n  name: c\n  namespace: db\nspec:\n  resources:\n    requests:\n      storage: lots\n`;
      assert.match(
        failure(pvc),
        /PersistentVolumeClaim db\/c \(document 1\): \/spec\/resources\/requests\/storage must be a quantity: quantities must match.*"lots"/,
      );
    });

    it('an unparseable node allocatable', () => {
      assert.match(
        failure(NODE_A.replace('cpu: "4"', 'cpu: four')),
        /Node node-a \(document 1\): \/status\/allocatable\/cpu must be a quantity: quantities/,
      );
    });

    it('a wrong type on another field scheduling reads', () => {
      assert.match(
        failure(`kind: PriorityClass\nmetadata:\n  name: p\nvalue: high\n`),
        /PriorityClass p \(document 1\): \/value must be number \(got string "high"\)/,
      );
      assert.match(
        failure(`kind: StorageClass\nmetadata:\n  name: s\nprovisioner: x\nallowedTopologies: zone-a\n`),
        /StorageClass s \(document 1\): \/allowedTopologies must be array/,
      );
    });

    it('a Pod or Node shape the scheduler verbs refuse (one set of schemas), naming the object and the field', () => {
      const pod = (spec: unknown) => ({ kind: 'Pod', metadata: { name: 'web-0', namespace: 'default' }, spec });
      const node = (status: unknown) => ({ kind: 'Node', metadata: { name: 'node-a' }, status });
      const cases: [unknown, string][] = [
        [
          pod({ containers: [{ name: 'c', ports: '80' }] }),
          'Pod default/web-0 (items[1]): /spec/containers/0/ports must be array (got string "80")',
        ],
        [pod({ containers: [{ name: 'c', image: null }] }), 'Pod default/web-0 (items[1]): /spec/containers/0/image'],
        [
          pod({ containers: [{ name: 'c', ports: [{ hostPort: 80.5 }] }] }),
          'Pod default/web-0 (items[1]): /spec/containers/0/ports/0/hostPort must be integer',
        ],
        [node({ images: [null] }), 'Node node-a (items[1]): /status/images/0 must be object (got null)'],
        [node({ allocatable: { cpu: {} } }), 'Node node-a (items[1]): /status/allocatable/cpu must be string'],
      ];
      for (const [item, message] of cases) {
        const file = JSON.stringify({ kind: 'List', items: [{ kind: 'Namespace', metadata: { name: 'x' } }, item] });
        assert.ok(failure(file, 'c.json').startsWith(`c.json: ${message}`), failure(file, 'c.json'));
      }
    });

    it('the same object twice', () => {
      assert.match(
        failure(`${NODE_A}---\n${NODE_A}`),
        /Node node-a \(document 2\): duplicate of the object at document 1/,
      );
    });
  });
});

describe('reading a cluster-state file', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  before(async () => {
    dir = await tempDir();
  });
  after(() => dir.cleanup());

  const list = (items: unknown[], kind = 'List') => ({ apiVersion: 'v1', kind, metadata: {}, items });
  const node = (name: string) => ({ kind: 'Node', metadata: { name } });

  it('reads a JSON List item by item into the objects parseClusterState makes, with a digest of the bytes', async () => {
    const text = JSON.stringify(list([node('a'), { kind: 'Namespace', metadata: { name: 'x' } }, node('b')]), null, 2);
    const file = await dir.file('list.json', text);
    const { parsed, digest } = await readClusterState(file);
    assert.deepEqual(parsed, parseClusterState(text, file));
    assert.equal(digest, createHash('sha256').update(text).digest('hex'));
  });

  it('gives a typed list’s items its kind even when the list names it after them', async () => {
    const text = `{"items":[{"metadata":{"name":"a"}}],"kind":"NodeList","apiVersion":"v1"}`;
    const { parsed } = await readClusterState(await dir.file('typed.json', text));
    assert.deepEqual(
      parsed.objects.get('Node')!.map((n) => n.metadata.name),
      ['a'],
    );
  });

  it('reports a malformed JSON file as parsing it whole does', async () => {
    const text = `{"kind":"List","items":[${JSON.stringify(node('a'))},{"kind":}]}`;
    const file = await dir.file('bad.json', text);
    await assert.rejects(readClusterState(file), (err: Error) => {
      assert.equal(err.message, failure(text, file));
      return true;
    });
  });

  it('names the item a field error is in', async () => {
    const bad = { kind: 'Pod', metadata: { name: 'web-0' }, spec: { containers: [{ name: 'c', ports: 80 }] } };
    const file = await dir.file('pods.json', JSON.stringify(list([node('a'), bad])));
    await assert.rejects(
      readClusterState(file),
      /pods\.json: Pod web-0 \(items\[1\]\): \/spec\/containers\/0\/ports must be array \(got number 80\)$/,
    );
  });

  it('takes a name once per kind and namespace: the same name in another namespace or kind is another object', async () => {
    const claim = (namespace: string) => ({
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace },
      spec: { resources: { requests: { storage: '1Gi' } } },
    });
    const text = JSON.stringify(list([claim('a'), claim('b'), node('data')]));
    const { parsed } = await readClusterState(await dir.file('names.json', text));
    assert.deepEqual(
      parsed.objects.get('PersistentVolumeClaim')!.map((c) => objectKey('PersistentVolumeClaim', c)),
      ['a/data', 'b/data'],
    );
    const twice = JSON.stringify(list([claim('a'), node('data'), claim('a')]));
    await assert.rejects(
      readClusterState(await dir.file('twice.json', twice)),
      /twice\.json: PersistentVolumeClaim a\/data \(items\[2\]\): duplicate of the object at items\[0\]$/,
    );
    const yaml = `${NODE_A}---\n${JSON.stringify(list([node('b'), node('node-a')]))}`;
    await assert.rejects(
      readClusterState(await dir.file('twice.yaml', yaml)),
      /Node node-a \(document 2, items\[1\]\): duplicate of the object at document 1$/,
    );
  });

  it('reads YAML and single objects whole', async () => {
    const { parsed } = await readClusterState(await dir.file('c.yaml', `${NODE_A}---\n${POD_WEB}`));
    assert.deepEqual(parsed, parseClusterState(`${NODE_A}---\n${POD_WEB}`, 'c.yaml'));
    const one = await readClusterState(await dir.file('n.json', JSON.stringify(node('n'))));
    assert.deepEqual(
      one.parsed.objects.get('Node')!.map((n) => n.metadata.name),
      ['n'],
    );
  });
});
