// The pending report and the storage view (issue 33). On random clusters: every pending pod's line is explain's
// summary byte for byte, each grouping puts every pod in exactly one group, and the storage view counts what the API
// objects say (an oracle that matches each PV against every node). Then, through a whole extender: the report follows
// the store's events without being asked (a pod bound leaves it, a PV bound changes where a claim finds room), and
// the metrics say what the views say.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Registry } from 'prom-client';
import type { AnyObject, PersistentVolume, Pod } from '../../src/cluster/types.ts';
import { storageMetrics } from '../../src/http/report-metrics.ts';
import { explain } from '../../src/ops/explain.ts';
import { GROUPINGS, groupPending, pendingAnswer, stripNumbers, workloadOf } from '../../src/ops/pending.ts';
import { PendingReport, pendingOnce } from '../../src/ops/pending-report.ts';
import { storageView, volumeState } from '../../src/ops/storage.ts';
import { pvNodeAffinityMatches } from '../../src/volumes/node-affinity.ts';
import { pvCapacity } from '../../src/volumes/pv-matching.ts';
import { createTestExtender } from '../helpers/extender.ts';
import { claim, localPV, makeCSIStorageCapacity, node, pod, storageClass } from '../helpers/objects.ts';
import { cluster } from './helpers.ts';

const ZONES = ['z0', 'z1', 'z2'];
const DRIVER_ZONE = 'topology.disk.csi.example.com/zone';

const world = fc.record({
  nodes: fc.array(fc.record({ zone: fc.nat(2), cpu: fc.constantFrom('1', '2', '4') }), { minLength: 1, maxLength: 5 }),
  running: fc.array(fc.record({ node: fc.nat(4), cpu: fc.constantFrom('500m', '1', '2'), priority: fc.nat(2) }), {
    maxLength: 6,
  }),
  pvs: fc.array(
    fc.record({
      node: fc.option(fc.nat(4), { nil: undefined }),
      size: fc.integer({ min: 1, max: 200 }),
      claimed: fc.boolean(),
      released: fc.boolean(),
      // A local PV names its node's hostname; a CSI driver's disk names the driver's own zone key.
      driverZone: fc.boolean(),
    }),
    { maxLength: 8 },
  ),
  capacities: fc.array(fc.record({ zone: fc.nat(2), size: fc.integer({ min: 0, max: 300 }) }), { maxLength: 3 }),
  pending: fc.array(
    fc.record({
      cpu: fc.constantFrom('100m', '1', '3', '8'),
      claim: fc.option(fc.record({ cls: fc.constantFrom('local', 'fast'), size: fc.integer({ min: 1, max: 250 }) }), {
        nil: undefined,
      }),
      replicas: fc.integer({ min: 1, max: 3 }),
      priority: fc.nat(2),
    }),
    { minLength: 1, maxLength: 4 },
  ),
});

type World = typeof world extends fc.Arbitrary<infer T> ? T : never;

function build(w: World): AnyObject[] {
  const nodes = w.nodes.map((n, i) =>
    node(`n${i}`, { zone: ZONES[n.zone], cpu: n.cpu, labels: { [DRIVER_ZONE]: ZONES[n.zone] } }),
  );
  const objects: AnyObject[] = [...nodes, storageClass('local'), storageClass('fast', { provisioner: 'fast.csi' })];
  w.running.forEach((r, i) => {
    const p = pod(`run-${i}`, { nodeName: `n${r.node % nodes.length}`, cpu: r.cpu, priority: r.priority * 100 });
    objects.push(p);
  });
  w.pvs.forEach((v, i) => {
    const pv = structuredClone(localPV(`pv-${i}`, `n${(v.node ?? 0) % nodes.length}`, { size: `${v.size}Gi` }));
    if (v.node === undefined) delete pv.spec.nodeAffinity;
    else if (v.driverZone) {
      const zone = ZONES[w.nodes[v.node % nodes.length].zone];
      pv.spec.nodeAffinity = {
        required: { nodeSelectorTerms: [{ matchExpressions: [{ key: DRIVER_ZONE, operator: 'In', values: [zone] }] }] },
      };
    }
    if (v.claimed) pv.spec.claimRef = { namespace: 'other', name: `held-${i}` };
    pv.status = { phase: v.released ? 'Released' : v.claimed ? 'Bound' : 'Available' };
    objects.push(pv);
  });
  w.capacities.forEach((c, i) => {
    const capacity = makeCSIStorageCapacity(`cap-${i}`, {
      namespace: 'kube-system',
      className: 'fast',
      capacity: `${c.size}Gi`,
      nodeTopology: { matchLabels: { 'topology.kubernetes.io/zone': ZONES[c.zone] } },
    });
    objects.push(capacity as AnyObject);
  });
  w.pending.forEach((p, i) => {
    for (let r = 0; r < p.replicas; r++) {
      const name = `app${i}-${r}`;
      const claims = p.claim ? [`data-${name}`] : [];
      const subject = structuredClone(pod(name, { cpu: p.cpu, priority: p.priority * 100, claims }));
      // One Deployment's replicas: the same spec, labels and controller.
      subject.metadata.labels = { app: `app${i}`, 'pod-template-hash': 'abc12' };
      subject.metadata.ownerReferences = [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `app${i}-abc12`, uid: `rs-${i}`, controller: true },
      ];
      objects.push(subject);
      if (p.claim) objects.push(claim(`data-${name}`, { className: p.claim.cls, size: `${p.claim.size}Gi` }));
    }
  });
  return objects;
}

/** The zones a PV reaches, matched against every node (the view reads its affinity instead). */
function oracleZone(pv: PersistentVolume, nodes: AnyObject[]): string {
  if (!pv.spec.nodeAffinity) return '';
  const zones = new Set(
    nodes
      .filter((n) => pvNodeAffinityMatches(pv, n.metadata.labels))
      .map((n) => n.metadata.labels?.['topology.kubernetes.io/zone'] ?? ''),
  );
  return [...zones].sort().join(',');
}

describe('pending report on random clusters', () => {
  it("gives each pending pod explain's line byte for byte, and every grouping adds up to the pods listed", () => {
    fc.assert(
      fc.property(world, (w) => {
        const objects = build(w);
        const { deps } = cluster(objects);
        const snapshot = pendingOnce(deps, ['default-scheduler']);
        const pending = objects.filter((o) => o.kind === 'Pod' && !(o as Pod).spec.nodeName);
        assert.equal(snapshot.items.length, pending.length);
        assert.equal(snapshot.waiting, 0);
        for (const p of snapshot.items) {
          const expected = explain(deps, { namespace: p.namespace, name: p.name, limit: 0 });
          assert.equal(p.summary, expected.summary, `${p.name}`);
          assert.equal(p.workload, `Deployment/${p.name.replace(/-\d+$/, '')}`);
          const rejected = Object.values(p.plugins).reduce((a, b) => a + b, 0);
          assert.equal(rejected, p.totalNodes - p.feasibleNodes, 'every node that does not fit has its plugin');
          if (p.feasibleNodes === 0) assert.ok(p.summary.includes(p.reason) || p.reason === stripNumbers(p.reason));
        }
        for (const by of GROUPINGS) {
          const groups = groupPending(snapshot.items, by, Date.now());
          assert.equal(
            groups.reduce((a, g) => a + g.pods, 0),
            snapshot.items.length,
            by,
          );
          assert.deepEqual(
            groups.map((g) => g.pods),
            groups.map((g) => g.pods).sort((a, b) => b - a),
            `${by}: largest first`,
          );
        }
      }),
      { numRuns: 60 },
    );
  });

  it('counts PVs and CSIStorageCapacity per class and zone as the API objects say, and the metrics say the same', async () => {
    await fc.assert(
      fc.asyncProperty(world, async (w) => {
        const objects = build(w);
        const { store } = cluster(objects);
        const view = storageView(store);
        const nodes = objects.filter((o) => o.kind === 'Node');
        const expected = new Map<string, { available: number; bound: number; released: number; bytes: number }>();
        for (const o of objects) {
          if (o.kind !== 'PersistentVolume') continue;
          const pv = o as PersistentVolume;
          const key = `${pv.spec.storageClassName}/${oracleZone(pv, nodes)}`;
          const e = expected.get(key) ?? { available: 0, bound: 0, released: 0, bytes: 0 };
          e[volumeState(pv)]++;
          e.bytes += pvCapacity(pv);
          expected.set(key, e);
        }
        const seen = new Map<string, { available: number; bound: number; released: number; bytes: number }>();
        for (const r of view.rows) {
          const { available, bound, released } = r.volumes;
          if (available.count + bound.count + released.count === 0) continue;
          seen.set(`${r.storageClass}/${r.zone}`, {
            available: available.count,
            bound: bound.count,
            released: released.count,
            bytes: available.bytes + bound.bytes + released.bytes,
          });
          const sizes = Object.values(r.freeSizes).reduce((a, b) => a + b, 0);
          assert.equal(sizes, available.count, 'the size histogram counts every available PV once');
        }
        assert.deepEqual(seen, expected);
        for (const z of ZONES) {
          const published = w.capacities.filter((c) => ZONES[c.zone] === z).reduce((a, c) => a + c.size * 2 ** 30, 0);
          const row = view.rows.find((r) => r.storageClass === 'fast' && r.zone === z);
          assert.equal(row?.capacityBytes ?? 0, published, z);
        }
        // The metrics are the view's figures: every series equals its row.
        const registry = new Registry();
        storageMetrics(registry, store);
        const text = await registry.metrics();
        for (const r of view.rows) {
          const labels = `storage_class="${r.storageClass}",zone="${r.zone}"`;
          if (r.capacityObjects > 0)
            assert.ok(text.includes(`topology_extender_storage_capacity_bytes{${labels}} ${r.capacityBytes}\n`));
          for (const [state, v] of Object.entries(r.volumes))
            if (r.volumes.available.count + r.volumes.bound.count + r.volumes.released.count > 0) {
              assert.ok(text.includes(`topology_extender_local_volumes{${labels},state="${state}"} ${v.count}\n`));
              assert.ok(
                text.includes(`topology_extender_local_volumes_bytes{${labels},state="${state}"} ${v.bytes}\n`),
              );
            }
        }
        const waiting = w.pending.filter((p) => p.claim).reduce((a, p) => a + p.replicas, 0);
        assert.equal(
          view.claimsWaiting.reduce((a, c) => a + c.count, 0),
          waiting,
        );
      }),
      { numRuns: 100 },
    );
  });
});

it('names workloads as kubectl does', () => {
  const p = pod('api-6f7b9c4d8-abcde');
  p.metadata.labels = { 'pod-template-hash': '6f7b9c4d8' };
  p.metadata.ownerReferences = [
    { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'api-6f7b9c4d8', uid: 'rs', controller: true },
  ];
  assert.equal(workloadOf(p), 'Deployment/api');
  p.metadata.ownerReferences = [
    { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: 's', controller: true },
  ];
  assert.equal(workloadOf(p), 'StatefulSet/web');
  assert.equal(workloadOf(pod('lonely')), 'Pod/lonely');
  assert.equal(stripNumbers('node(s) had untolerated taint {gpu: 2}'), 'node(s) had untolerated taint {gpu: }');
});

it('starts no slice while the verbs are busy, and catches up once they are not', async () => {
  const { deps } = cluster([node('n0'), pod('waiting', { cpu: '64' })]);
  const report = new PendingReport(deps, { schedulerNames: ['default-scheduler'] });
  let busy = true;
  let asked = 0;
  report.yieldTo(() => {
    asked++;
    return busy;
  });
  report.start();
  // Event-loop turns, not time: the worker asks, is refused, and asks again.
  while (asked < 3) await new Promise((resolve) => setImmediate(resolve));
  assert.equal(report.snapshot().waiting, 1, 'nothing explained while busy');
  busy = false;
  await report.idle();
  assert.deepEqual(
    report.snapshot().items.map((p) => p.reason),
    ['Insufficient cpu'],
  );
  report.close();
});

it('a closed report is not running and hears no more cluster events', async () => {
  const { deps } = cluster([node('n0'), pod('waiting', { cpu: '64' })]);
  const report = new PendingReport(deps, { schedulerNames: ['default-scheduler'] }).start();
  await report.idle();
  assert.equal(report.running, true);
  report.close();
  assert.equal(report.running, false);
  deps.store.upsert('Pod', pod('later', { cpu: '64' }));
  assert.equal(report.snapshot().waiting, 0, 'a pod created after close is not taken');
});

describe('the worker between the verbs', () => {
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  /** Event-loop turns until `done` (at most ten: a worker that never looks fails the assertion after). */
  const turnsUntil = async (done: () => boolean) => {
    for (let i = 0; i < 10 && !done(); i++) await turn();
  };

  it('rests after a slice as long as its duty cycle says, on a timer', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const pods = Array.from({ length: 8 }, (_, i) => pod(`waiting-${i}`, { cpu: `${64 + i}` }));
    const { deps } = cluster([node('n0'), ...pods]);
    // A clock that moves a millisecond each time it is read: a 2 ms slice is a step or two, then a rest of as long.
    let tick = 0;
    const report = new PendingReport(deps, { schedulerNames: ['default-scheduler'], clock: () => tick++, sliceMs: 2 });
    report.start();
    for (let i = 0; i < 3; i++) await turn();
    const read = tick;
    assert.ok(read > 0, 'a slice ran');
    // Resting: it reads its clock no more (works no more) however the event loop turns, until its timer fires.
    for (let i = 0; i < 50; i++) await turn();
    assert.equal(tick, read, 'no work before the rest is over');
    const done = report.idle();
    for (let i = 0; i < 1000 && report.snapshot().items.length < pods.length; i++) {
      t.mock.timers.tick(5);
      await turn();
    }
    await done;
    report.close();
  });

  it('rests while the only pending pod is one kube-scheduler has not tried yet, and explains it once due', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const wall = Date.parse('2026-11-01T00:00:00Z');
    const young = pod('young', { cpu: '64' });
    young.metadata.creationTimestamp = new Date(wall - 4_000).toISOString();
    const { deps } = cluster([node('n0'), young]);
    let now = 0;
    let reads = 0;
    const report = new PendingReport(deps, {
      schedulerNames: ['default-scheduler'],
      explainAfterMs: 10_000,
      now: () => wall,
      clock: () => {
        reads++;
        return now;
      },
    });
    report.start();
    for (let i = 0; i < 5; i++) await turn();
    assert.deepEqual([report.snapshot().items.length, report.snapshot().waiting], [0, 1]);
    const read = reads;
    for (let i = 0; i < 50; i++) await turn();
    assert.equal(reads, read, 'resting: no turn looks at the pod before it is due');
    now = 6_000;
    t.mock.timers.tick(6_000);
    await turnsUntil(() => report.snapshot().items.length === 1);
    assert.deepEqual(
      report.snapshot().items.map((i) => i.name),
      ['young'],
      'explained once 10 s old, woken by its own timer',
    );
    report.close();
  });

  it('starts no slice within the quiet window after a verb answered', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { deps } = cluster([node('n0'), pod('waiting', { cpu: '64' })]);
    // The report's clock, stepped by hand with the mocked timers.
    let now = 100;
    let answeredAt = 99.5;
    let asked = 0;
    const report = new PendingReport(deps, {
      schedulerNames: ['default-scheduler'],
      clock: () => now,
      quietMsAfterVerb: 2,
    });
    report.yieldTo(
      () => false,
      () => answeredAt - 1,
      () => {
        asked++;
        return answeredAt;
      },
    );
    report.start();
    await turnsUntil(() => asked >= 1);
    assert.equal(report.snapshot().waiting, 1, 'nothing explained 0.5 ms after a verb answered');
    assert.equal(asked, 1, 'the worker looked when the last verb answered');
    // Another verb (prioritize) answers before the window ends: the window starts again from its answer.
    now = 101;
    answeredAt = 101;
    t.mock.timers.tick(2);
    await turnsUntil(() => asked >= 2);
    assert.equal(report.snapshot().waiting, 1, 'nothing explained right after the second answer');
    // The window over, no verb since: the slice runs.
    now = 103.1;
    t.mock.timers.tick(2);
    await report.idle();
    assert.deepEqual(
      report.snapshot().items.map((p) => p.reason),
      ['Insufficient cpu'],
    );
    report.close();
  });

  it('ends a slice after a piece when a verb arrived meanwhile, and goes on once it is served', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const pods = Array.from({ length: 8 }, (_, i) => pod(`waiting-${i}`, { cpu: `${64 + i}` }));
    const { deps } = cluster([node('n0'), ...pods]);
    // A clock that moves a millisecond each time it is read: a piece of 2 ms is a step or two.
    let tick = 0;
    let busy = false;
    let asked = 0;
    const report = new PendingReport(deps, {
      schedulerNames: ['default-scheduler'],
      clock: () => tick++,
      sliceMs: 1000,
      sliceMsWithVerbs: 1000,
      pieceMsWithVerbs: 2,
      dutyCycle: 1,
      dutyCycleWithVerbs: 1,
      quietMsAfterVerb: 0,
    });
    report.yieldTo(
      () => {
        asked++;
        return busy;
      },
      () => tick,
    );
    report.start();
    // The worker's first turn runs before this one; a verb is queued right after it.
    await turn();
    busy = true;
    const afterPiece = report.snapshot().items.length;
    assert.ok(afterPiece < pods.length, `a piece explained ${afterPiece} of ${pods.length} pods, not the whole slice`);
    // The worker looks again (its next piece), and again after its pause: nothing while the verb is queued.
    const seen = asked;
    for (let i = 0; i < 10 && asked < seen + 2; i++, t.mock.timers.tick(2)) await turn();
    assert.ok(asked >= seen + 2, 'the worker looked again');
    assert.equal(report.snapshot().items.length, afterPiece, 'nothing more explained while the verb is queued');
    busy = false;
    const done = report.idle();
    t.mock.timers.tick(2);
    await done;
    assert.equal(report.snapshot().items.length, pods.length);
    report.close();
  });
});

describe('the report in a running extender', () => {
  it('follows the store without being asked: a bound pod leaves, a bound PV moves the room, the metrics agree', async () => {
    const objects: AnyObject[] = [
      node('n0', { zone: 'z0' }),
      node('n1', { zone: 'z1' }),
      storageClass('local'),
      localPV('pv-a', 'n0', { size: '50Gi' }),
      localPV('pv-b', 'n1', { size: '50Gi' }),
      claim('data-db', { size: '40Gi' }),
      pod('db', { claims: ['data-db'], uid: 'db-uid' }),
      pod('big', { cpu: '64', uid: 'big-uid' }),
      pod('other', { uid: 'other-uid' }),
    ];
    const other = objects.at(-1) as Pod;
    other.spec.schedulerName = 'another-scheduler';
    const t = await createTestExtender(objects, { pendingReport: true }, { volumeController: false });
    try {
      const report = t.extender.pending;
      await report.idle();
      let answer = (await t.request.get('/api/v1/pending?by=reason').expect(200)).body;
      assert.deepEqual(
        answer.items.map((p: { name: string }) => p.name),
        ['big', 'db'],
        'only the served scheduler',
      );
      const big = answer.items.find((p: { name: string }) => p.name === 'big');
      assert.equal(big.summary, explain(t.extender.verbs, { namespace: 'default', name: 'big' }).summary);
      assert.equal(big.reason, 'Insufficient cpu');
      assert.equal(big.plugin, 'NodeResourcesFit');
      assert.deepEqual(big.plugins, { NodeResourcesFit: 2 });
      const db = answer.items.find((p: { name: string }) => p.name === 'db');
      assert.deepEqual(db.claims[0].zonesWithRoom, ['z0', 'z1']);
      assert.equal(
        answer.groups.reduce((a: number, g: { pods: number }) => a + g.pods, 0),
        2,
      );

      // Another claim takes pv-b: zone z1 has no room left for data-db.
      const pvB = structuredClone(t.store.get('PersistentVolume', 'pv-b')!);
      pvB.spec.claimRef = { namespace: 'default', name: 'someone-else' };
      pvB.status = { phase: 'Bound' };
      pvB.metadata.resourceVersion = '2';
      await t.add({ ...pvB, kind: 'PersistentVolume' } as AnyObject);
      await report.idle();
      answer = (await t.request.get('/api/v1/pending').expect(200)).body;
      assert.deepEqual(answer.items.find((p: { name: string }) => p.name === 'db').claims[0].zonesWithRoom, ['z0']);
      const storage = (await t.request.get('/api/v1/storage').expect(200)).body;
      const z1 = storage.rows.find((r: { zone: string }) => r.zone === 'z1');
      assert.deepEqual(z1.volumes.bound, { count: 1, bytes: 50 * 2 ** 30 });

      // Released (its claim deleted, reclaim policy Retain): still no room in z1, and counted as released.
      pvB.status = { phase: 'Released' };
      pvB.metadata.resourceVersion = '3';
      await t.add({ ...pvB, kind: 'PersistentVolume' } as AnyObject);
      const released = (await t.request.get('/api/v1/storage').expect(200)).body;
      assert.deepEqual(released.rows.find((r: { zone: string }) => r.zone === 'z1').volumes.released, {
        count: 1,
        bytes: 50 * 2 ** 30,
      });
      assert.match(
        (await t.request.get('/metrics')).text,
        /^topology_extender_local_volumes\{storage_class="local",zone="z1",state="released"\} 1$/m,
      );
      // big is bound by someone: it leaves the report at once.
      const bound = structuredClone(t.store.get('Pod', 'default/big')!);
      bound.spec.nodeName = 'n0';
      bound.metadata.resourceVersion = '2';
      await t.add({ ...bound, kind: 'Pod' } as AnyObject);
      await report.idle();
      answer = pendingAnswer(report.snapshot(), ['default-scheduler'], {}, Date.now(), 'v1.37');
      assert.deepEqual(
        answer.items.map((p: { name: string }) => p.name),
        ['db'],
      );
      const metrics = (await t.request.get('/metrics').expect(200)).text;
      // big (64 CPUs) now fills n0, and pv-b is taken: db fits nowhere.
      const [left] = answer.items;
      assert.equal(left.reason, 'Insufficient cpu');
      assert.ok(
        metrics.includes(`topology_extender_pending_pods{reason="Insufficient cpu",plugin="${left.plugin}"} 1\n`),
      );
      assert.match(metrics, /^topology_extender_local_volumes\{storage_class="local",zone="z1",state="bound"\} 0$/m);
      assert.match(metrics, /^topology_extender_claims_waiting\{storage_class="local"\} 1$/m);
      assert.ok(metrics.includes(`topology_extender_pending_pod_age_seconds_count{plugin="${left.plugin}"} 1\n`));
      // The time its slices took, as the report counts it (it explained pods, so more than none).
      const work = Number(/^topology_extender_pending_report_work_seconds_total (\S+)$/m.exec(metrics)?.[1]);
      assert.ok(work > 0 && work <= report.workMs / 1000, `work ${work} s, the report's ${report.workMs} ms`);
    } finally {
      await t.close();
    }
  });

  it('answers a wrong grouping or query with 400 naming it', async () => {
    const t = await createTestExtender([], { pendingReport: true });
    try {
      const res = await t.request.get('/api/v1/pending?by=node').expect(400);
      assert.equal(
        res.body.message,
        'querystring/by must be equal to one of the allowed values: reason, workload, zone',
      );
      const unknown = await t.request.get('/api/v1/pending?color=red').expect(400);
      assert.equal(unknown.body.message, 'querystring must NOT have additional properties: color');
      await t.request.get('/api/v1/storage?byNode=yes').expect(400);
      const empty = (await t.request.get('/api/v1/pending?by=workload').expect(200)).body;
      assert.deepEqual([empty.pods, empty.groups], [0, []]);
    } finally {
      await t.close();
    }
  });

  it('with --no-pending-report answers 503 saying it is off, rather than an empty report', async () => {
    const t = await createTestExtender([node('n0'), pod('waiting')], { pendingReport: false });
    try {
      const res = await t.request.get('/api/v1/pending').expect(503);
      assert.match(res.body.message, /the pending report is off \(start the extender with --pending-report\)/);
    } finally {
      await t.close();
    }
  });
});
