// The storage view kept current from the store's events (storage-headroom.ts) against the one computed afresh
// (storage.ts, whose counts test/ops/pending.test.ts checks against the API objects): on random clusters, through
// random sequences of PVs bound, released, resized and deleted, capacities changing, claims waiting and bound, and
// nodes added, removed and relabelled, with the view read at random points, the two are equal. PVs name a hostname,
// or a CSI driver's own zone or node key (placed through the nodes carrying it), or select without an In requirement.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ClusterStore } from '../../src/cluster/store.ts';
import type { AnyObject, CSIStorageCapacity, Kind, Node, PersistentVolume } from '../../src/cluster/types.ts';
import { storageView } from '../../src/ops/storage.ts';
import { storageHeadroom } from '../../src/ops/storage-headroom.ts';
import { claim, localPV, makeCSIStorageCapacity, node } from '../helpers/objects.ts';

const ZONES = ['z0', 'z1', 'z2'];
const NODES = 5;
const SIZES = ['5Gi', '20Gi', '60Gi', '2Ti'];
/** A driver's topology keys, published on each node by its node plugin: the node's zone and the node itself. */
const DRIVER_ZONE = 'topology.disk.csi.example.com/zone';
const DRIVER_NODE = 'topology.topolvm.io/node';

/** Where a capacity's nodeTopology points: a zone, a hostname, a selector over another label, or no selector. */
const topology = fc.oneof(
  fc.record({ by: fc.constant('zone' as const), at: fc.nat(2) }),
  fc.record({ by: fc.constant('host' as const), at: fc.nat(NODES - 1) }),
  fc.record({ by: fc.constant('rack' as const), at: fc.nat(1) }),
  fc.record({ by: fc.constant('none' as const), at: fc.constant(0) }),
);

const step = fc.oneof(
  fc.record({
    op: fc.constant('pv' as const),
    i: fc.nat(5),
    node: fc.option(fc.nat(NODES - 1), { nil: undefined }),
    size: fc.nat(SIZES.length - 1),
    state: fc.constantFrom('Available', 'Bound', 'Released', 'gone'),
    cls: fc.constantFrom('local', 'slow'),
    key: fc.constantFrom('hostname', 'driver-zone', 'driver-node', 'not-in'),
  }),
  fc.record({
    op: fc.constant('capacity' as const),
    i: fc.nat(3),
    where: topology,
    size: fc.nat(SIZES.length - 1),
    max: fc.option(fc.nat(SIZES.length - 1), { nil: undefined }),
    gone: fc.boolean(),
  }),
  fc.record({
    op: fc.constant('claim' as const),
    i: fc.nat(4),
    size: fc.nat(SIZES.length - 1),
    cls: fc.constantFrom('local', 'fast', ''),
    state: fc.constantFrom('waiting', 'bound', 'gone'),
  }),
  fc.record({
    op: fc.constant('node' as const),
    i: fc.nat(NODES - 1),
    zone: fc.nat(2),
    rack: fc.nat(1),
    hostname: fc.option(fc.nat(NODES - 1), { nil: undefined }),
    gone: fc.boolean(),
  }),
  // Only a label no PV names: it moves the capacities that select by it, and nothing else.
  fc.record({ op: fc.constant('rack' as const), i: fc.nat(NODES - 1), rack: fc.nat(1) }),
  // A driver's zone label moved (or gone) alone: the PVs that name it move, the node's zone stays.
  fc.record({
    op: fc.constant('driver' as const),
    i: fc.nat(NODES - 1),
    zone: fc.option(fc.nat(2), { nil: undefined }),
  }),
  fc.record({ op: fc.constant('read' as const) }),
);

type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;

class World {
  readonly store = new ClusterStore();
  #version = 1;

  put(kind: Kind, obj: AnyObject): void {
    obj.metadata.resourceVersion = String(++this.#version);
    this.store.upsert(kind, obj as never);
  }

  apply(s: Step): void {
    switch (s.op) {
      case 'pv': {
        const name = `pv-${s.i}`;
        if (s.state === 'gone') {
          this.store.delete('PersistentVolume', { metadata: { name } });
          return;
        }
        const pv: PersistentVolume = structuredClone(
          localPV(name, `n${s.node ?? 0}`, { size: SIZES[s.size], className: s.cls }),
        );
        const values = (key: string, v: string[], operator = 'In') => ({
          required: { nodeSelectorTerms: [{ matchExpressions: [{ key, operator, values: v }] }] },
        });
        if (s.node === undefined) delete pv.spec.nodeAffinity;
        else if (s.key === 'driver-zone') pv.spec.nodeAffinity = values(DRIVER_ZONE, [ZONES[s.node % ZONES.length]]);
        else if (s.key === 'driver-node') pv.spec.nodeAffinity = values(DRIVER_NODE, [`n${s.node}`]);
        else if (s.key === 'not-in')
          pv.spec.nodeAffinity = values(DRIVER_ZONE, [ZONES[s.node % ZONES.length]], 'NotIn');
        if (s.state !== 'Available') pv.spec.claimRef = { namespace: 'default', name: `c-${s.i}` };
        pv.status = { phase: s.state };
        this.put('PersistentVolume', pv);
        return;
      }
      case 'capacity': {
        const name = `cap-${s.i}`;
        if (s.gone) {
          this.store.delete('CSIStorageCapacity', { metadata: { name, namespace: 'kube-system' } });
          return;
        }
        const labels: Record<string, string> =
          s.where.by === 'zone'
            ? { 'topology.kubernetes.io/zone': ZONES[s.where.at] }
            : s.where.by === 'host'
              ? { 'kubernetes.io/hostname': `n${s.where.at}` }
              : { rack: `r${s.where.at}` };
        const c: CSIStorageCapacity = makeCSIStorageCapacity(name, {
          namespace: 'kube-system',
          className: 'fast',
          capacity: SIZES[s.size],
          ...(s.max === undefined ? {} : { maximumVolumeSize: SIZES[s.max] }),
          ...(s.where.by === 'none' ? {} : { nodeTopology: { matchLabels: labels } }),
        });
        this.put('CSIStorageCapacity', c as AnyObject);
        return;
      }
      case 'claim': {
        const name = `c-${s.i}`;
        if (s.state === 'gone') {
          this.store.delete('PersistentVolumeClaim', { metadata: { name, namespace: 'default' } });
          return;
        }
        const pvc = structuredClone(
          claim(name, {
            size: SIZES[s.size],
            className: s.cls,
            ...(s.state === 'bound' ? { volumeName: `pv-${s.i}` } : {}),
          }),
        );
        this.put('PersistentVolumeClaim', pvc);
        return;
      }
      case 'node': {
        const name = `n${s.i}`;
        if (s.gone) {
          this.store.delete('Node', { metadata: { name } });
          return;
        }
        const n: Node = structuredClone(node(name, { zone: ZONES[s.zone] }));
        n.metadata.labels = {
          ...n.metadata.labels,
          rack: `r${s.rack}`,
          // A hostname label that differs from the name (cloud nodes) moves the PVs that name it.
          'kubernetes.io/hostname': `n${s.hostname ?? s.i}`,
          [DRIVER_ZONE]: ZONES[s.zone],
          [DRIVER_NODE]: name,
        };
        this.put('Node', n);
        return;
      }
      case 'rack': {
        const n = this.store.get('Node', `n${s.i}`);
        if (n)
          this.put('Node', { ...n, metadata: { ...n.metadata, labels: { ...n.metadata.labels, rack: `r${s.rack}` } } });
        return;
      }
      case 'driver': {
        const n = this.store.get('Node', `n${s.i}`);
        if (!n) return;
        const { [DRIVER_ZONE]: _, ...labels } = n.metadata.labels ?? {};
        if (s.zone !== undefined) labels[DRIVER_ZONE] = ZONES[s.zone];
        this.put('Node', { ...n, metadata: { ...n.metadata, labels } });
        return;
      }
      case 'read':
        return;
    }
  }
}

describe('storage headroom kept current from events', () => {
  it('equals the view computed afresh, read at any point of any sequence of changes', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), fc.array(step, { maxLength: 40 }), (before, after) => {
        const w = new World();
        for (let i = 0; i < NODES; i++)
          w.apply({ op: 'node', i, zone: i % 3, rack: i % 2, hostname: undefined, gone: false });
        for (const s of before) w.apply(s);
        const headroom = storageHeadroom(w.store);
        assert.deepEqual(headroom.view(), storageView(w.store), 'first read');
        for (const s of after) {
          w.apply(s);
          if (s.op === 'read') assert.deepEqual(headroom.view(), storageView(w.store));
        }
        assert.deepEqual(headroom.view(), storageView(w.store), 'last read');
      }),
      { numRuns: 400 },
    );
  });

  it('hands out views of its own: a reader changing one leaves the next untouched', () => {
    const w = new World();
    w.apply({ op: 'node', i: 0, zone: 0, rack: 0, hostname: undefined, gone: false });
    w.apply({ op: 'pv', i: 0, node: 0, size: 0, state: 'Available', cls: 'local', key: 'hostname' });
    const headroom = storageHeadroom(w.store);
    const first = headroom.view();
    first.rows[0].volumes.available.count = 99;
    assert.deepEqual(headroom.view(), storageView(w.store));
  });
});
