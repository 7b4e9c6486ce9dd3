// After a filter that passed none of the nodes kube-scheduler asked about (its sample), the node where the pod fits is
// set as its status.nominatedNodeName, which kube-scheduler tries first in the pod's next attempt (src/extender/nominate.ts).
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { AnyObject, PersistentVolume, Pod } from '../../src/cluster/types.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { claim, localPV, node, pod, storageClass } from '../helpers/objects.ts';

const NODES = Array.from({ length: 10 }, (_, i) => node(`node-${i}`));
const ASKED = ['node-0', 'node-1', 'node-2', 'node-3'];

/** A claim bound to a local PV on `nodeName`: a StatefulSet pod's after its first run. */
function boundClaim(name: string, nodeName: string): AnyObject[] {
  const c = claim(name, { volumeName: `${name}-pv` });
  const pv = localPV(`${name}-pv`, nodeName);
  pv.spec.claimRef = {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    namespace: 'default',
    name,
    uid: c.metadata.uid,
  };
  pv.status = { phase: 'Bound' };
  return [c, pv];
}

function nominated(p: Pod, nodeName: string): Pod {
  return { ...p, status: { ...p.status, phase: 'Pending', nominatedNodeName: nodeName } };
}

let t: TestExtender | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function start(objects: AnyObject[], settings = {}, nodes = NODES): Promise<TestExtender> {
  t = await createTestExtender([...nodes, storageClass('local'), ...objects], settings, { volumeController: false });
  return t;
}

/** Asks filter about `names` and waits for the nomination that follows its answer (if any). */
async function rejectedFrom(x: TestExtender, p: Pod, names: string[]): Promise<string | undefined> {
  const before = { ...x.extender.nodeNominator!.counts };
  const res = await x.request.post('/scheduler/filter').send({ Pod: p, Nodes: null, NodeNames: names }).expect(200);
  assert.deepEqual(res.body.NodeNames, [], 'filter passed none of the nodes asked about');
  const searched = () =>
    Object.entries(x.extender.nodeNominator!.counts).some(([k, n]) => n > before[k as keyof typeof before]);
  await x.waitFor(searched);
  await x.source.state.delivered();
  return x.store.get('Pod', `default/${p.metadata.name}`)?.status?.nominatedNodeName;
}

describe('a pod kube-scheduler’s sample of nodes missed is nominated where it fits', () => {
  it("a pod whose claim is bound to a local PV on a node not asked about is nominated to the PV's node", async () => {
    const web = pod('web', { claims: ['data'] });
    const x = await start([...boundClaim('data', 'node-7'), web]);
    assert.equal(await rejectedFrom(x, web, ASKED), 'node-7');
    assert.equal(x.extender.nodeNominator!.counts.nominated, 1);
  });

  it('a nomination another made (kube-scheduler, after preempting for the pod) stands', async () => {
    const web = nominated(pod('web', { claims: ['data'] }), 'node-2');
    const x = await start([...boundClaim('data', 'node-7'), web]);
    assert.equal(await rejectedFrom(x, web, ASKED), 'node-2');
    assert.equal(x.extender.nodeNominator!.counts.kept, 1);
  });

  it('a pod asked about again with our nomination was refused there: the next node where it fits is nominated', async () => {
    const web = pod('web', { claims: ['data'] });
    const x = await start([localPV('free-5', 'node-5'), localPV('free-8', 'node-8'), claim('data'), web]);
    const first = await rejectedFrom(x, web, ASKED);
    assert.ok(first === 'node-5' || first === 'node-8', String(first));
    const again = x.store.get('Pod', 'default/web')!;
    const second = await rejectedFrom(x, again, ASKED);
    assert.equal(second, first === 'node-5' ? 'node-8' : 'node-5');
  });

  it('a node another claim pod is nominated to comes after one no pod waits for (one free PV each)', async () => {
    const a = pod('a', { claims: ['data-a'] });
    const b = pod('b', { claims: ['data-b'] });
    const x = await start([
      localPV('free-5', 'node-5'),
      localPV('free-8', 'node-8'),
      claim('data-a'),
      claim('data-b'),
      a,
      b,
    ]);
    const forA = await rejectedFrom(x, a, ASKED);
    const forB = await rejectedFrom(x, b, ASKED);
    assert.ok(forA && forB);
    assert.notEqual(forA, forB);
  });

  it("no node fits (the PV's node is gone): nothing is written", async () => {
    const web = pod('web', { claims: ['data'] });
    const x = await start([...boundClaim('data', 'node-gone'), web]);
    assert.equal(await rejectedFrom(x, web, ASKED), undefined);
    assert.equal(x.extender.nodeNominator!.counts.nowhere, 1);
  });

  it('a node the pod fits by its volumes but not by its requests is not nominated', async () => {
    const web = pod('web', { claims: ['data'], cpu: '100' });
    const x = await start([...boundClaim('data', 'node-7'), web]);
    assert.equal(await rejectedFrom(x, web, ASKED), undefined);
  });
});

describe('a new pod whose bound claims allow few nodes is nominated before kube-scheduler asks', () => {
  // More nodes than kube-scheduler's smallest sample (100): its sample may miss the PV's node.
  const MANY = Array.from({ length: 120 }, (_, i) => node(`node-${i}`));
  const startMany = (objects: AnyObject[]) => start(objects, {}, MANY);

  /** Adds the pod as the watch would deliver a new one, and waits until the early search is done. */
  async function created(x: TestExtender, p: Pod): Promise<string | undefined> {
    await x.add(p);
    await x.extender.nodeNominator!.earlySettled();
    await x.source.state.delivered();
    return x.store.get('Pod', `default/${p.metadata.name}`)?.status?.nominatedNodeName;
  }

  it("a pod whose claim is bound to a local PV is nominated to the PV's node as soon as it is seen", async () => {
    const x = await startMany(boundClaim('data', 'node-77'));
    assert.equal(await created(x, pod('web', { claims: ['data'] })), 'node-77');
    assert.equal(x.extender.nodeNominator!.counts.nominated, 1);
  });

  it('its first attempt, asked before its nomination showed, is answered without a second search or write', async () => {
    const x = await startMany(boundClaim('data', 'node-77'));
    const web = pod('web', { claims: ['data'] });
    assert.equal(await created(x, web), 'node-77');
    assert.equal(await rejectedFrom(x, web, ASKED), 'node-77');
    assert.deepEqual(x.extender.nodeNominator!.counts, { nominated: 1, kept: 1, nowhere: 0, failed: 0 });
  });

  it('not in a cluster of at most 100 nodes: kube-scheduler examines every node there', async () => {
    const x = await start(boundClaim('data', 'node-77'), {}, MANY.slice(0, 100));
    assert.equal(await created(x, pod('web', { claims: ['data'] })), undefined);
  });

  it("not a pod whose bound PV allows as many nodes as kube-scheduler's smallest sample (100): it finds one", async () => {
    const [c, pv] = boundClaim('data', 'node-0') as [AnyObject, PersistentVolume];
    const hosts = (count: number) => MANY.slice(0, count).map((n) => n.metadata.name);
    const allow = (names: string[]) => {
      pv.spec.nodeAffinity = {
        required: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: names }] }],
        },
      };
    };
    allow(hosts(100));
    const x = await startMany([c, pv]);
    assert.equal(await created(x, pod('wide', { claims: ['data'] })), undefined);
    allow(hosts(99));
    await x.add(pv);
    assert.ok(await created(x, pod('narrow', { claims: ['data'] })));
  });

  it('not a pod of another scheduler, nor one whose claim is not bound yet', async () => {
    const x = await startMany([...boundClaim('data', 'node-77'), localPV('free', 'node-5'), claim('fresh')]);
    const other = pod('other', { claims: ['data'] });
    other.spec.schedulerName = 'someone-else';
    assert.equal(await created(x, other), undefined);
    assert.equal(await created(x, pod('fresh-pod', { claims: ['fresh'] })), undefined);
    assert.equal(x.extender.nodeNominator!.counts.nominated, 0);
  });

  it('not a pod bound before its search ran', async () => {
    const x = await startMany(boundClaim('data', 'node-77'));
    const web = pod('web', { claims: ['data'] });
    x.source.state.commit('Pod', web);
    x.source.state.commit('Pod', { ...web, spec: { ...web.spec, nodeName: 'node-77' } });
    await x.source.state.delivered();
    await x.extender.nodeNominator!.earlySettled();
    assert.equal(x.store.get('Pod', 'default/web')?.status?.nominatedNodeName, undefined);
    assert.deepEqual(x.extender.nodeNominator!.counts, { nominated: 0, kept: 0, nowhere: 0, failed: 0 });
  });
});

describe('what is never nominated', () => {
  it('a pod without claims: its rejection is not about volumes', async () => {
    const x = await start([]);
    const plain = pod('plain');
    await x.add(plain);
    const res = await x.request
      .post('/scheduler/filter')
      .send({ Pod: plain, Nodes: null, NodeNames: ['node-gone'] })
      .expect(200);
    assert.deepEqual(res.body.NodeNames, []);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(x.extender.nodeNominator!.counts, { nominated: 0, kept: 0, nowhere: 0, failed: 0 });
  });

  it('nothing with nominateNodes off', async () => {
    const web = pod('web', { claims: ['data'] });
    const x = await start([...boundClaim('data', 'node-7'), web], { nominateNodes: false });
    assert.equal(x.extender.nodeNominator, undefined);
    const res = await x.request.post('/scheduler/filter').send({ Pod: web, Nodes: null, NodeNames: ASKED }).expect(200);
    assert.deepEqual(res.body.NodeNames, []);
  });
});
