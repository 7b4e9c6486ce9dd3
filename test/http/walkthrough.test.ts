// The README walk-through on the embedded default cluster: a pod with a WaitForFirstConsumer claim goes
// filter → prioritize → bind and ends with its claim bound to a PV that the chosen node can reach.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import type { AnyObject, Pod } from '../../src/cluster/types.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';

let t: TestExtender;
let items: AnyObject[];
before(async () => {
  items = parse(await readFile('examples/cluster.yaml', 'utf8')).items;
  t = await createTestExtender(items);
});
after(() => t.close());

const ALL_NODES = ['a', 'b', 'c'].flatMap((z) => [1, 2, 3].map((i) => `node-${z}${i}`));

function args(name: string) {
  const pod = items.find((o) => o.kind === 'Pod' && o.metadata.name === name) as Pod;
  return { Pod: pod, Nodes: null, NodeNames: ALL_NODES };
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
  it('db-0 (fast-ssd, 50Gi) avoids the zone without capacity and its claim is provisioned in the chosen zone', async () => {
    const { filtered, best, bind } = await schedule('db-0');
    for (const n of ['node-b1', 'node-b2', 'node-b3']) {
      assert.equal(filtered.FailedAndUnresolvableNodes[n], 'node(s) did not have enough free storage');
    }
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
    const claim = await t.request.get('/api/v1/persistentvolumeclaims/default/www-web-0');
    assert.equal(claim.body.phase, 'Bound');
    const affinity = JSON.stringify(claim.body.volume.spec.nodeAffinity);
    assert.ok(affinity.includes(best), `local PV ${claim.body.volumeName} is on ${best}: ${affinity}`);
  });
});
