// The README walk-through on the embedded default cluster: a pod with a WaitForFirstConsumer claim goes
// filter → prioritize → bind and ends with its claim bound to a PV that the chosen node can reach.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { podResource } from '../../src/cache/resources.ts';
import type { AnyObject, Pod } from '../../src/cluster/types.ts';
import { waitFor } from '../cluster/kube/helpers.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';

let t: TestExtender;
let items: AnyObject[];
before(async () => {
  items = parse(await readFile('examples/cluster.yaml', 'utf8')).items;
  t = await createTestExtender(items);
});
after(() => t.close());

const ALL_NODES = ['a', 'b', 'c'].flatMap((z) => [1, 2, 3].map((i) => `node-${z}${i}`));

const podNamed = (name: string) => items.find((o) => o.kind === 'Pod' && o.metadata.name === name) as Pod;

/** What kube-scheduler's NodeResourcesFit lets through before it calls us: the nodes with room for the requests. */
function fittingNodes(pod: Pod): string[] {
  const { requests } = podResource(pod);
  return ALL_NODES.filter((name) => {
    const { allocatable, requested } = t.cache.nodeInfo(name)!;
    return (
      requested.milliCPU + requests.milliCPU <= allocatable.milliCPU &&
      requested.memory + requests.memory <= allocatable.memory
    );
  });
}

/** The request kube-scheduler sends: only the nodes its own filters passed. */
function args(name: string) {
  const pod = podNamed(name);
  return { Pod: pod, Nodes: null, NodeNames: fittingNodes(pod) };
}

async function schedule(name: string) {
  const filtered = await t.request.post('/scheduler/filter').send(args(name));
  assert.equal(filtered.status, 200);
  const feasible: string[] = filtered.body.NodeNames;
  const scores = await t.request.post('/scheduler/prioritize').send({ ...args(name), NodeNames: feasible });
  const best = [...scores.body].sort((a, b) => b.Score - a.Score)[0].Host as string;
  const pod = args(name).Pod;
  const bound = await t.request
    .post('/scheduler/bind')
    .send({ PodName: name, PodNamespace: 'default', PodUID: pod.metadata.uid, Node: best });
  return { filtered: filtered.body, best, bind: bound.body };
}

function zoneOf(nodeName: string): string {
  const node = t.store.get('Node', nodeName)!;
  return node.metadata.labels!['topology.kubernetes.io/zone'];
}

describe('walk-through on examples/cluster.yaml', () => {
  it("the README's db-0 request lists exactly the nodes with room for db-0's CPU and memory", async () => {
    const readme = await readFile('README.md', 'utf8');
    const request = /cat > \/tmp\/db-0\.json <<'JSON'\n([\s\S]*?)\nJSON/.exec(readme);
    assert.ok(request, 'README has the db-0 request');
    assert.deepEqual(JSON.parse(request[1]).NodeNames, fittingNodes(podNamed('db-0')));
  });

  it('db-0 (fast-ssd, 50Gi) avoids the zone without capacity and its claim is provisioned in the chosen zone', async () => {
    const { filtered, best, bind } = await schedule('db-0');
    // node-b2 has no room for db-0's CPU: kube-scheduler never asks about it.
    for (const n of ['node-b1', 'node-b3']) {
      assert.equal(filtered.FailedAndUnresolvableNodes[n], 'node(s) did not have enough free storage');
    }
    assert.deepEqual(filtered.NodeNames, ['node-a1', 'node-a2', 'node-a3']);
    assert.deepEqual(bind, { Error: '' });
    const claim = await t.request.get('/api/v1/persistentvolumeclaims/default/data-db-0');
    assert.equal(claim.body.phase, 'Bound');
    assert.equal(claim.body.selectedNode, best);
    const terms = claim.body.volume.spec.nodeAffinity.required.nodeSelectorTerms;
    assert.ok(
      JSON.stringify(terms).includes(zoneOf(best)),
      `PV affinity ${JSON.stringify(terms)} names ${zoneOf(best)}`,
    );
    assert.equal(t.store.get('Pod', 'default/db-0')!.spec.nodeName, best);
  });

  it('web-0 (local-storage) lands on a node with a free local PV and its claim is bound to that PV', async () => {
    const { filtered, best, bind } = await schedule('web-0');
    assert.ok(filtered.NodeNames.length > 0);
    for (const reason of Object.values(filtered.FailedAndUnresolvableNodes)) {
      assert.equal(reason, "node(s) didn't find available persistent volumes to bind");
    }
    assert.deepEqual(bind, { Error: '' });
    // The bind wrote both halves of the binding; the (simulated) PV controller then marks the claim Bound.
    const claim = await waitFor('the claim is Bound', async () => {
      const res = await t.request.get('/api/v1/persistentvolumeclaims/default/www-web-0');
      return res.body.phase === 'Bound' ? res : undefined;
    });
    const affinity = JSON.stringify(claim.body.volume.spec.nodeAffinity);
    assert.ok(affinity.includes(best), `local PV ${claim.body.volumeName} is on ${best}: ${affinity}`);
  });
});
