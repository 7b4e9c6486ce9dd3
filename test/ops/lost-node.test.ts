// A pod whose claim is bound to a local PV whose node is gone or NotReady can run nowhere: explain (and so the pending
// report and the CLI, which carry its notes) names the node, since when, and the operator's two ways out.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AnyObject, Node } from '../../src/cluster/types.ts';
import { explain } from '../../src/ops/explain.ts';
import { claim, localPV, node, pod, storageClass } from '../helpers/objects.ts';
import { cluster } from './helpers.ts';

const WAYS_OUT =
  'bring the node back, or delete the claim and then the pod (the data on that volume is lost) so that its workload makes a new claim';

function boundTo(nodeName: string): AnyObject[] {
  const data = claim('data', { volumeName: 'pv-data' });
  const pv = localPV('pv-data', nodeName);
  pv.spec.claimRef = { namespace: 'default', name: 'data', uid: data.metadata.uid };
  pv.status = { phase: 'Bound' };
  return [storageClass('local'), data, pv, pod('web-0', { claims: ['data'] }), node('node-a')];
}

function unreachable(name: string): Node {
  const n = node(name);
  n.spec = { taints: [{ key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' }] };
  n.status = {
    ...n.status,
    conditions: [{ type: 'Ready', status: 'Unknown', lastTransitionTime: '2026-12-06T08:00:00Z' }],
  };
  return n;
}

const notesOf = (objects: AnyObject[]) =>
  explain(cluster(objects).deps, { namespace: 'default', name: 'web-0' }).notes ?? [];

describe("explain names the lost node of a pod's bound local volume", () => {
  it('a node that stopped reporting: its name, since when, its taint and the ways out', () => {
    const notes = notesOf([...boundTo('node-b'), unreachable('node-b')]);
    assert.deepEqual(notes, [
      `claim "default/data" is bound to PersistentVolume "pv-data", whose node affinity admits only node "node-b", which stopped reporting since 2026-12-06T08:00:00Z (taint node.kubernetes.io/unreachable): ${WAYS_OUT}`,
    ]);
  });

  it('a node no longer in the cluster: its name from the affinity', () => {
    const notes = notesOf(boundTo('node-b'));
    assert.deepEqual(notes, [
      `claim "default/data" is bound to PersistentVolume "pv-data", whose node affinity admits only node "node-b", not in the cluster: ${WAYS_OUT}`,
    ]);
  });

  it('a Ready node: no note (the pod waits for something else)', () => {
    const ready = node('node-b');
    ready.status = { ...ready.status, conditions: [{ type: 'Ready', status: 'True' }] };
    assert.deepEqual(notesOf([...boundTo('node-b'), ready]), []);
  });
});
