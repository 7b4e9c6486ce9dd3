// The preempt verb through the HTTP route, re-expressing upstream's rules on volume facts: DefaultPreemption's victim
// selection, reprieve order and PDB accounting (default_preemption_test.go), the RWOP preemption integration test
// (test/integration/scheduler/preemption TestReadWriteOncePodPreemption, volume_restrictions_test.go) and CSI attach
// limits (nodevolumelimits/csi_test.go). kube-scheduler chose the candidates and victims by CPU and memory alone.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AnyObject, PersistentVolume, Pod, PodDisruptionBudget } from '../../src/cluster/types.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { claim, localPV, makeCSINode, node, pod, storageClass } from '../helpers/objects.ts';

const DRIVER = 'csi.example.com';

/** A pod running on a node, started at minute `started` (earlier = more important among equal priorities). */
function running(
  name: string,
  nodeName: string,
  priority: number,
  opts: { claims?: string[]; labels?: Record<string, string>; started?: number } = {},
): Pod {
  const p = pod(name, { nodeName, priority, claims: opts.claims, uid: `uid-${name}` });
  if (opts.labels) p.metadata.labels = opts.labels;
  p.status = { phase: 'Running', startTime: new Date(Date.UTC(2026, 0, 1, 0, opts.started ?? 0)).toISOString() };
  return p;
}

/** A pending pod that preempted and waits for its node. */
function nominatedTo(name: string, nodeName: string, priority: number, claimName: string): Pod {
  const p = pod(name, { priority, claims: [claimName], uid: `uid-${name}` });
  p.status = { phase: 'Pending', nominatedNodeName: nodeName };
  return p;
}

/** A PV every node reaches: network storage (no node affinity), optionally a CSI volume. */
function networkPV(name: string, csi = false): PersistentVolume {
  const pv = localPV(name, 'unused');
  delete pv.spec.nodeAffinity;
  delete pv.spec.local;
  pv.spec.storageClassName = '';
  if (csi) pv.spec.csi = { driver: DRIVER, volumeHandle: name };
  return pv;
}

function bound(name: string, pvName: string, accessMode = 'ReadWriteOnce') {
  const c = claim(name, { volumeName: pvName, className: '' });
  c.spec.accessModes = [accessMode];
  return c;
}

function pdb(name: string, app: string, allowed: number, disrupted: string[] = []): PodDisruptionBudget {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name, namespace: 'default', uid: `pdb-${name}`, resourceVersion: '1' },
    spec: { selector: { matchLabels: { app } } },
    status: {
      disruptionsAllowed: allowed,
      disruptedPods: Object.fromEntries(disrupted.map((p) => [p, '2026-01-01T00:00:00Z'])),
    },
  };
}

const csiNode = (name: string, count: number): AnyObject =>
  makeCSINode(name, { drivers: [{ name: DRIVER, nodeID: name, allocatable: { count } }] });

const objects: AnyObject[] = [
  storageClass('local'),
  // WaitForFirstConsumer local storage: only node-a has a PV for the claim.
  node('node-a'),
  node('node-b'),
  localPV('pv-a1', 'node-a'),
  claim('wffc'),
  running('low-a', 'node-a', 10),
  running('low-b', 'node-b', 10),
  // ReadWriteOncePod claims, held by running pods.
  node('r1'),
  node('r2'),
  node('r3'),
  node('r4'),
  ...['rwop-1', 'rwop-2', 'rwop-3', 'rwop-4', 'rwop-5', 'rwop-6'].flatMap((c) => [
    networkPV(`pv-${c}`),
    bound(c, `pv-${c}`, 'ReadWriteOncePod'),
  ]),
  running('holder-1', 'r1', 10, { claims: ['rwop-1'] }),
  running('cpu-hog', 'r1', 10, { started: 5 }),
  running('other-r2', 'r2', 10),
  running('holder-2', 'r3', 20, { claims: ['rwop-2'] }),
  running('holder-3', 'r3', 30, { claims: ['rwop-3'] }),
  running('holder-45', 'r3', 20, { claims: ['rwop-4', 'rwop-5'] }),
  running('cpu-r3', 'r3', 1),
  running('vip', 'r4', 5000, { claims: ['rwop-6'] }),
  running('cpu-r4', 'r4', 1),
  // CSI attach limits: two slots per node, both taken.
  node('c1'),
  node('c2'),
  csiNode('c1', 2),
  csiNode('c2', 2),
  ...['c-1', 'c-2', 'c-3', 'c-4', 'c-5'].flatMap((c) => [networkPV(`pv-${c}`, true), bound(c, `pv-${c}`)]),
  running('att-low', 'c1', 5, { claims: ['c-1'] }),
  running('att-mid', 'c1', 50, { claims: ['c-2'] }),
  running('cpu-c1', 'c1', 1),
  running('pdb-low', 'c2', 5, { claims: ['c-4'], labels: { app: 'protected' } }),
  running('pdb-mid', 'c2', 50, { claims: ['c-5'] }),
  running('cpu-c2', 'c2', 1),
  pdb('protected', 'protected', 0),
  // Nominated pods: l1's only PV is waited for by a lower-priority pod, l2's by a higher-priority one.
  node('l1'),
  node('l2'),
  localPV('pv-l1', 'l1'),
  localPV('pv-l2', 'l2'),
  claim('low-nominated-data'),
  claim('high-nominated-data'),
  claim('l-data'),
  nominatedTo('low-nominated', 'l1', 10, 'low-nominated-data'),
  nominatedTo('high-nominated', 'l2', 2000, 'high-nominated-data'),
  running('cpu-l1', 'l1', 1),
  running('cpu-l2', 'l2', 1),
  // PDB accounting over the scheduler's victims.
  node('p1'),
  networkPV('pv-net'),
  bound('net', 'pv-net'),
  running('db1-0', 'p1', 10, { labels: { app: 'db1' }, started: 1 }),
  running('db1-1', 'p1', 10, { labels: { app: 'db1' }, started: 2 }),
  running('db2-0', 'p1', 10, { labels: { app: 'db2' }, started: 3 }),
  running('db2-1', 'p1', 10, { labels: { app: 'db2' }, started: 4 }),
  running('unlabelled', 'p1', 10, { started: 5 }),
  running('important', 'p1', 100, { started: 6 }),
  pdb('db1', 'db1', 1),
  pdb('db2', 'db2', 0, ['db2-0']),
];

let t: TestExtender;
before(async () => {
  t = await createTestExtender(objects, {}, { volumeController: false });
});
after(() => t.close());

type Answer = Record<string, { Pods: { UID: string }[]; NumPDBViolations: number }>;

async function preempt(preemptor: Pod, candidates: Record<string, string[]>, numPDBViolations = 0): Promise<Answer> {
  const NodeNameToMetaVictims = Object.fromEntries(
    Object.entries(candidates).map(([n, victims]) => [
      n,
      { Pods: victims.map((v) => ({ UID: `uid-${v}` })), NumPDBViolations: numPDBViolations },
    ]),
  );
  const res = await t.request
    .post('/scheduler/preempt')
    .send({ Pod: preemptor, NodeNameToVictims: null, NodeNameToMetaVictims })
    .expect(200);
  return res.body.NodeNameToMetaVictims;
}

const uids = (...names: string[]) => names.map((n) => ({ UID: `uid-${n}` }));
const preemptor = (claims: string[], priority = 1000) => pod('preemptor', { priority, claims, uid: 'uid-preemptor' });

describe('preempt: nodes no eviction can fix are dropped', () => {
  it('a WaitForFirstConsumer claim that only fits local PVs on node-a is never offered victims on node-b', async () => {
    const answer = await preempt(preemptor(['wffc']), { 'node-a': ['low-a'], 'node-b': ['low-b'] });
    assert.deepEqual(answer, { 'node-a': { Pods: uids('low-a'), NumPDBViolations: 0 } });
  });

  it('RWOP "preempt single pod" on another node: a claim held on r1 cannot be freed by evicting on r2', async () => {
    const answer = await preempt(preemptor(['rwop-1']), { r2: ['other-r2'] });
    assert.deepEqual(answer, {});
  });

  it('"a pod that would fit, but the pods holding what it needs are higher priority": the node is dropped', async () => {
    // vip (priority 5000) holds rwop-6 on r4: nothing on r4 can be evicted for it.
    const answer = await preempt(preemptor(['rwop-6']), { r4: ['cpu-r4'] });
    assert.deepEqual(answer, {});
  });
});

describe('preempt: nominated pods', () => {
  it('PVs reserved only for lower-priority nominated pods count as free for the preemptor', async () => {
    const answer = await preempt(preemptor(['l-data']), { l1: ['cpu-l1'], l2: ['cpu-l2'] });
    // l2's only PV waits for a pod above the preemptor: no eviction on l2 frees it.
    assert.deepEqual(answer, { l1: { Pods: uids('cpu-l1'), NumPDBViolations: 0 } });
  });
});

describe('preempt: the pods volumes require are added (TestReadWriteOncePodPreemption)', () => {
  it("preempt single pod: the holder of the needed RWOP claim becomes a victim beside the scheduler's", async () => {
    const answer = await preempt(preemptor(['rwop-1']), { r1: ['cpu-hog'] });
    // Equal priorities: the earlier start (holder-1, minute 0) is the more important and comes first.
    assert.deepEqual(answer, { r1: { Pods: uids('holder-1', 'cpu-hog'), NumPDBViolations: 0 } });
  });

  it('preempt two pods: two RWOP claims held by two pods add both, most important first', async () => {
    const answer = await preempt(preemptor(['rwop-2', 'rwop-3']), { r3: ['cpu-r3'] });
    assert.deepEqual(answer, { r3: { Pods: uids('holder-3', 'holder-2', 'cpu-r3'), NumPDBViolations: 0 } });
  });

  it('preempt single pod with two volumes: one holder of both claims is enough', async () => {
    const answer = await preempt(preemptor(['rwop-4', 'rwop-5']), { r3: ['cpu-r3'] });
    assert.deepEqual(answer, { r3: { Pods: uids('holder-45', 'cpu-r3'), NumPDBViolations: 0 } });
  });

  it('a candidate that arrived with an empty victim list is filled with the pods it needs', async () => {
    const answer = await preempt(preemptor(['rwop-4']), { r3: [] });
    assert.deepEqual(answer, { r3: { Pods: uids('holder-45'), NumPDBViolations: 0 } });
  });
});

describe('preempt: CSI attach limits (csi_test.go) and upstream reprieve order', () => {
  it('a full attach limit gets the smallest sufficient set of the least important lower-priority volume holders', async () => {
    const answer = await preempt(preemptor(['c-3']), { c1: ['cpu-c1'] });
    // One slot is needed: att-mid (more important) is reprieved first and fits; att-low stays a victim.
    assert.deepEqual(answer, { c1: { Pods: uids('att-low', 'cpu-c1'), NumPDBViolations: 0 } });
  });

  it('PDB-violating pods are reprieved before the others', async () => {
    const answer = await preempt(preemptor(['c-3']), { c2: ['cpu-c2'] });
    // pdb-low is the least important but its eviction breaks its budget: pdb-mid goes instead.
    assert.deepEqual(answer, { c2: { Pods: uids('pdb-mid', 'cpu-c2'), NumPDBViolations: 0 } });
  });

  it('no lower-priority holder to evict: the node is dropped', async () => {
    const answer = await preempt(preemptor(['c-3'], 3), { c1: ['cpu-c1'] });
    assert.deepEqual(answer, {});
  });
});

describe("preempt: the scheduler's victims and PDB violations (default_preemption_test.go)", () => {
  it('never removes a victim the scheduler chose, and orders victims most important first', async () => {
    const answer = await preempt(preemptor(['net']), { p1: ['unlabelled', 'important', 'db1-0'] });
    assert.deepEqual(answer, { p1: { Pods: uids('important', 'db1-0', 'unlabelled'), NumPDBViolations: 0 } });
  });

  it('preemption with violation of same pdb: the second victim under a budget of one is a violation', async () => {
    const answer = await preempt(preemptor(['net']), { p1: ['db1-0', 'db1-1'] }, 7);
    assert.deepEqual(answer, { p1: { Pods: uids('db1-0', 'db1-1'), NumPDBViolations: 1 } });
  });

  it('preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to DisruptedPods', async () => {
    const answer = await preempt(preemptor(['net']), { p1: ['db2-0'] }, 1);
    assert.deepEqual(answer, { p1: { Pods: uids('db2-0'), NumPDBViolations: 0 } });
  });

  it("preemption with violation of the pdb with pod whose eviction was processed, the victim doesn't belong to DisruptedPods", async () => {
    const answer = await preempt(preemptor(['net']), { p1: ['db2-0', 'db2-1'] });
    assert.deepEqual(answer, { p1: { Pods: uids('db2-0', 'db2-1'), NumPDBViolations: 1 } });
  });

  it('a victim UID the cache does not know stays in the answer, after the known ones', async () => {
    const answer = await preempt(preemptor(['net']), { p1: ['not-yet-seen', 'unlabelled'] });
    assert.deepEqual(answer, { p1: { Pods: uids('unlabelled', 'not-yet-seen'), NumPDBViolations: 0 } });
  });

  it('a victim named twice is answered once', async () => {
    const answer = await preempt(preemptor(['net']), { p1: ['unlabelled', 'unlabelled'] });
    assert.deepEqual(answer, { p1: { Pods: uids('unlabelled'), NumPDBViolations: 0 } });
  });

  it('an empty victim list that arrived empty stays empty when the pod fits', async () => {
    const answer = await preempt(preemptor(['net']), { p1: [] });
    assert.deepEqual(answer, { p1: { Pods: [], NumPDBViolations: 0 } });
  });

  it('Pod with PreemptNever preemption policy: no candidate at all', async () => {
    const p = preemptor(['net']);
    p.spec.preemptionPolicy = 'Never';
    assert.deepEqual(await preempt(p, { p1: ['unlabelled'] }), {});
  });

  it('a pod without volume claims keeps the victims as sent, with NumPDBViolations counted as for any preemptor', async () => {
    const answer = await preempt(preemptor([]), { p1: ['unlabelled', 'important'], 'node-b': ['low-b'] }, 3);
    assert.deepEqual(answer, {
      p1: { Pods: uids('unlabelled', 'important'), NumPDBViolations: 0 },
      'node-b': { Pods: uids('low-b'), NumPDBViolations: 0 },
    });
    // The same victims under a budget of one: one violation, whether the preemptor has claims or not.
    const withoutClaims = await preempt(preemptor([]), { p1: ['db1-0', 'db1-1'] }, 0);
    const withClaims = await preempt(preemptor(['net']), { p1: ['db1-0', 'db1-1'] }, 0);
    assert.equal(withoutClaims.p1.NumPDBViolations, 1);
    assert.equal(withClaims.p1.NumPDBViolations, 1);
  });

  it('full victim pods (nodeCacheCapable: false) are answered by UID', async () => {
    const victims = ['db1-1', 'db1-0'].map((n) => t.store.get('Pod', `default/${n}`)!);
    const res = await t.request
      .post('/scheduler/preempt')
      .send({
        Pod: preemptor(['net']),
        NodeNameToVictims: { p1: { Pods: victims, NumPDBViolations: 0 } },
        NodeNameToMetaVictims: null,
      })
      .expect(200);
    assert.deepEqual(res.body, {
      NodeNameToMetaVictims: { p1: { Pods: uids('db1-0', 'db1-1'), NumPDBViolations: 1 } },
    });
  });
});

describe('preempt: metrics', () => {
  it('counts candidates kept, dropped by reason, and victims added', async () => {
    const before = await t.request.get('/metrics').expect(200);
    const value = (text: string, series: string) => {
      const line = text.split('\n').find((l) => l.startsWith(series));
      return line ? Number(line.slice(series.length).trim()) : 0;
    };
    const kept = 'topology_extender_preempt_nodes_total{result="kept",reason=""}';
    const dropped = `topology_extender_preempt_nodes_total{result="dropped",reason="node(s) didn't find available persistent volumes to bind"}`;
    const added = 'topology_extender_preempt_victims_added_total';
    await preempt(preemptor(['wffc']), { 'node-a': ['low-a'], 'node-b': ['low-b'] });
    await preempt(preemptor(['rwop-1']), { r1: ['cpu-hog'] });
    await preempt(pod('claimless', { priority: 1000, claims: ['no-such-claim'] }), { p1: ['unlabelled'] });
    const after = await t.request.get('/metrics').expect(200);
    assert.equal(value(after.text, kept) - value(before.text, kept), 2);
    assert.equal(value(after.text, dropped) - value(before.text, dropped), 1);
    assert.equal(value(after.text, added) - value(before.text, added), 1);
    // A reason naming a claim would make a label per claim: it is counted as "other".
    const other = 'topology_extender_preempt_nodes_total{result="dropped",reason="other"}';
    assert.equal(value(after.text, other) - value(before.text, other), 1);
  });
});
