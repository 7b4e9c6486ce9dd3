// Property: finding a node's CSIStorageCapacity through the index (by class, then by the hostname or zone its
// selector pins) decides exactly as hasEnoughCapacity's scan of every capacity of the class: same verdict and the
// same admitting object, through any sequence of adds, updates and deletes.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import type { CSIStorageCapacity, LabelSelector } from '../../src/cluster/types.ts';
import { CapacityIndex } from '../../src/volumes/capacity-index.ts';
import { capacitySufficient, facts, jointSufficient, nodeHasAccess } from '../../src/volumes/provisioning.ts';

const KEYS = ['kubernetes.io/hostname', 'topology.kubernetes.io/zone', 'rack'];
const VALUES = ['a', 'b'];
const GI = 1024 ** 3;

const requirement = fc.record({
  key: fc.constantFrom(...KEYS),
  operator: fc.constantFrom('In', 'In', 'In', 'NotIn', 'Exists', 'DoesNotExist'),
  values: fc.subarray([...VALUES, 'c', 'a'], { minLength: 1 }),
});
// Sometimes invalid (In without values, Exists with values, an unknown operator): such a selector matches no node.
const anyRequirement = fc.oneof(
  {
    arbitrary: requirement.map((r) =>
      r.operator === 'Exists' || r.operator === 'DoesNotExist' ? { key: r.key, operator: r.operator } : r,
    ),
    weight: 8,
  },
  { arbitrary: requirement, weight: 1 },
  { arbitrary: requirement.map((r) => ({ ...r, values: [] })), weight: 1 },
  { arbitrary: requirement.map((r) => ({ ...r, operator: 'Bogus' })), weight: 1 },
);
const selector: fc.Arbitrary<LabelSelector | undefined> = fc.option(
  fc.record(
    {
      matchLabels: fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), { maxKeys: 2 }),
      matchExpressions: fc.array(anyRequirement, { maxLength: 2 }),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined, freq: 10 },
);
const capacityArb = fc.record({
  name: fc.constantFrom('c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7'),
  namespace: fc.constantFrom('kube-system', 'storage'),
  cls: fc.constantFrom('x', 'x', 'y'),
  nodeTopology: selector,
  capacity: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
  maximumVolumeSize: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
});
const query = fc.record({
  cls: fc.constantFrom('x', 'x', 'y', 'z'),
  size: fc.integer({ min: 0, max: 5 }),
  // Nodes mostly carry a hostname and a zone, as real ones do.
  labels: fc.option(
    fc.record(Object.fromEntries(KEYS.map((k) => [k, fc.constantFrom(...VALUES)])), {
      requiredKeys: KEYS.slice(0, 2),
    }),
    { nil: undefined, freq: 10 },
  ),
});
const command = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('upsert' as const), c: capacityArb }), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant('delete' as const), c: capacityArb }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('find' as const), q: query }), weight: 3 },
);

type CapacitySpec = typeof capacityArb extends fc.Arbitrary<infer T> ? T : never;

function toCapacity(c: CapacitySpec): CSIStorageCapacity {
  return {
    metadata: { name: c.name, namespace: c.namespace, uid: `${c.namespace}-${c.name}`, resourceVersion: '1' },
    storageClassName: c.cls,
    ...(c.nodeTopology ? { nodeTopology: c.nodeTopology } : {}),
    ...(c.capacity !== undefined ? { capacity: `${c.capacity}Gi` } : {}),
    ...(c.maximumVolumeSize !== undefined ? { maximumVolumeSize: `${c.maximumVolumeSize}Gi` } : {}),
  };
}

it('indexed capacity lookup decides as a scan of every capacity of the class', () => {
  fc.assert(
    fc.property(fc.array(command, { maxLength: 40 }), (commands) => {
      const index = new CapacityIndex();
      // The reference: every capacity in arrival order, an update arriving anew (as the binder's old map did).
      const all = new Map<string, CSIStorageCapacity>();
      for (const cmd of commands) {
        if (cmd.op === 'find') {
          const { cls, size, labels } = cmd.q;
          const accept = (c: CSIStorageCapacity) => capacitySufficient(c, size * GI) && nodeHasAccess(labels, c);
          const scanned = [...all.values()].find((c) => c.storageClassName === cls && accept(c));
          assert.equal(index.find(cls, labels, accept, undefined), scanned);
          // Where the index says the node is reached, the selector is not matched again: the same answer.
          const trusting = (c: CSIStorageCapacity, _: unknown, reached: boolean) =>
            capacitySufficient(c, size * GI) && (reached || nodeHasAccess(labels, c));
          assert.equal(index.find(cls, labels, trusting, undefined), scanned);
          continue;
        }
        const c = toCapacity(cmd.c);
        const key = `${c.metadata.namespace}/${c.metadata.name}`;
        all.delete(key);
        if (cmd.op === 'upsert') {
          all.set(key, c);
          index.upsert(c);
        } else {
          index.delete(c);
        }
      }
    }),
    { numRuns: 2000 },
  );
});

it('a node finds its own per-node capacity among thousands without looking at the others', () => {
  const index = new CapacityIndex();
  for (let i = 0; i < 5000; i++) {
    index.upsert({
      metadata: { name: `topolvm-${i}`, namespace: 'kube-system', uid: `u${i}`, resourceVersion: '1' },
      storageClassName: 'lvm',
      nodeTopology: { matchLabels: { 'kubernetes.io/hostname': `node-${i}` } },
      capacity: '100Gi',
    });
  }
  let looked = 0;
  const found = index.find(
    'lvm',
    { 'kubernetes.io/hostname': 'node-4321' },
    (c) => {
      looked++;
      return nodeHasAccess({ 'kubernetes.io/hostname': 'node-4321' }, c);
    },
    undefined,
  );
  assert.equal(found?.metadata.name, 'topolvm-4321');
  assert.equal(looked, 1);
});

it("a node's dense capacity row decides as the scan, in flight included, through adds, updates, deletes and owed bytes", () => {
  const owe = fc.record({ op: fc.constant('owe' as const), c: capacityArb, bytes: fc.integer({ min: 0, max: 4 }) });
  const rowQuery = fc.record({ op: fc.constant('find' as const), q: query, joint: fc.boolean() });
  const commands = fc.array(fc.oneof(command, owe, rowQuery), { maxLength: 40 });
  fc.assert(
    fc.property(commands, (cmds) => {
      const owed = new Map<string, number>();
      const keyOf = (c: CSIStorageCapacity) => `${c.metadata.namespace}/${c.metadata.name}`;
      const index = new CapacityIndex({
        reaches: (c, labels) => nodeHasAccess(labels, c),
        bytes: facts,
        owed: (c) => owed.get(keyOf(c)) ?? 0,
      });
      const all = new Map<string, CSIStorageCapacity>();
      // One labels object and one ordinal per distinct node, so rows built by one query are reused by the next.
      const nodes = new Map<string, { labels: Record<string, string>; ordinal: number }>();
      for (const cmd of cmds) {
        if (cmd.op === 'find') {
          const { cls, size, labels } = cmd.q;
          if (!labels) continue;
          const id = JSON.stringify(labels);
          if (!nodes.has(id)) nodes.set(id, { labels, ordinal: nodes.size });
          const node = nodes.get(id)!;
          const joint = 'joint' in cmd && cmd.joint;
          const fits = (c: CSIStorageCapacity) =>
            joint ? jointSufficient(c, size * GI, owed.get(keyOf(c)) ?? 0) : capacitySufficient(c, size * GI);
          const scanned = [...all.values()].find(
            (c) => c.storageClassName === cls && fits(c) && nodeHasAccess(node.labels, c),
          );
          assert.equal(
            index.findForNode(cls, {
              nodeLabels: node.labels,
              ordinal: node.ordinal,
              size: size * GI,
              joint,
              pod: new Map(),
            }),
            scanned,
          );
          continue;
        }
        const c = toCapacity(cmd.c);
        const key = keyOf(c);
        if (cmd.op === 'owe') {
          owed.set(key, cmd.bytes * GI);
          index.owedChanged(key);
          continue;
        }
        all.delete(key);
        if (cmd.op === 'upsert') {
          all.set(key, c);
          index.upsert(c);
        } else {
          index.delete(c);
        }
      }
    }),
    { numRuns: 2000 },
  );
});

it("a node's dense capacity row follows what its capacities owe and capacities published for new topology values", () => {
  const owed = new Map<string, number>();
  const index = new CapacityIndex({
    reaches: (c, labels) => nodeHasAccess(labels, c),
    bytes: facts,
    owed: (c) => owed.get(c.metadata.name) ?? 0,
  });
  const HOST = 'kubernetes.io/hostname';
  const ZONE = 'topology.kubernetes.io/zone';
  const node = { [HOST]: 'a', [ZONE]: 'z' };
  const find = (size: number) => {
    const found = index.findForNode('x', {
      nodeLabels: node,
      ordinal: 0,
      size: size * GI,
      joint: true,
      pod: new Map(),
    });
    return typeof found === 'object' ? found.metadata.name : found;
  };
  const capacity = (name: 'c0' | 'c1', key: string, value: string, gi: number) =>
    toCapacity({
      name,
      namespace: 'storage',
      cls: 'x',
      nodeTopology: { matchLabels: { [key]: value } },
      capacity: gi,
      maximumVolumeSize: undefined,
    });
  index.upsert(capacity('c0', HOST, 'a', 4));
  assert.equal(find(3), 'c0');
  owed.set('c0', 2 * GI);
  index.owedChanged('storage/c0');
  assert.equal(find(3), undefined);
  index.upsert(capacity('c1', ZONE, 'z', 10)); // the first capacity of that zone: a new bucket
  assert.equal(find(3), 'c1');
});
