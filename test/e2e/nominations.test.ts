// End to end: nominations follow the pod watch of the real CLI against a real control plane (startSchedulerCluster:
// kube-apiserver, etcd, the extender as the chart's ServiceAccount). The test plays kube-scheduler's part: it calls the
// filter verb itself and writes status.nominatedNodeName through pods/status as kube-scheduler's preemption does. A pod
// nominated through a watch update holds its PV against an equal-priority pod and yields it to a higher-priority one;
// after a restart the nominations come back from status.nominatedNodeName.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import { kubeComponents } from '../components/components.ts';
import * as build from '../helpers/objects.ts';
import { assertExitedCleanly } from './extender-process.ts';
import {
  claim,
  clusterNode,
  LOCAL_CLASS,
  localPV,
  pendingPod,
  type SchedulerCluster,
  startSchedulerCluster,
} from './scheduler-cluster.ts';

/** No kube-scheduler serves it: only this test's calls decide about these pods. */
const SCHEDULER = 'nominations-test';
const found = await kubeComponents();

if (found.skip) {
  test('nominations follow the pod watch against a real API server', { skip: found.skip }, () => {});
} else {
  let cluster: SchedulerCluster;

  const call = async <T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${cluster.extender.url}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    assert.equal(res.status, 200, `${method} ${path}`);
    return (await res.json()) as T;
  };

  const fits = async (name: string): Promise<boolean> => {
    const Pod = await cluster.api.get('Pod', name, 'default');
    const body = await call<{ NodeNames: string[] | null }>('POST', '/scheduler/filter', {
      Pod,
      Nodes: null,
      NodeNames: ['node-n'],
    });
    return (body.NodeNames ?? []).includes('node-n');
  };

  const nominated = async () =>
    (
      await call<{ node: string; pods: { name: string; persistentVolumes: string[] }[] }[]>(
        'GET',
        '/api/v1/nominations',
      )
    ).flatMap((n) => n.pods.map((p) => `${n.node}/${p.name}:${p.persistentVolumes.join(',')}`));

  before(async () => {
    cluster = await startSchedulerCluster([
      ...clusterNode('node-n', 'zone-a'),
      created(build.makeStorageClass(LOCAL_CLASS)),
      // One local PV on the node: whoever is nominated there first holds it.
      localPV('pv-n', 'node-n'),
    ]);
    // Each priority through a PriorityClass of that value (cluster.add): the API server refuses a bare one.
    for (const [name, priority] of [
      ['waiting', 100],
      ['equal', 100],
      ['higher', 1000],
    ] as const) {
      await cluster.add(
        claim(`${name}-data`, LOCAL_CLASS),
        pendingPod(name, SCHEDULER, { claims: [`${name}-data`], priority }),
      );
    }
    // The extender has seen the pods, the claims and the PV once the filter passes the node for one of them.
    await waitFor('the extender follows the new objects', () => fits('higher'));
  });

  after(async () => {
    const extender = cluster?.extender;
    const code = await extender?.stop();
    await cluster?.stop();
    if (extender) assertExitedCleanly(extender, code);
  });

  test('a pod nominated through a watch update holds its PV against an equal-priority pod, yields it to a higher one, and is nominated again after a restart', async () => {
    assert.equal(await fits('equal'), true, 'before any nomination the PV is free');
    const waiting = (await cluster.api.get('Pod', 'waiting', 'default'))!;
    // What kube-scheduler's preemption writes: the pod's status, through the pods/status subresource.
    await cluster.api.patch(waiting, { status: { nominatedNodeName: 'node-n' } }, 'status');
    await waitFor('the nomination arrives through the watch', async () => (await nominated()).length === 1);
    assert.deepEqual(await nominated(), ['node-n/waiting:pv-n']);
    assert.equal(await fits('equal'), false, 'an equal-priority pod may not take the held PV');
    assert.equal(await fits('higher'), true, 'a higher-priority pod may');

    assert.equal(await cluster.extender.stop(), 0);
    await cluster.startExtender();
    assert.deepEqual(await nominated(), ['node-n/waiting:pv-n'], 'rebuilt from status.nominatedNodeName');
    assert.equal(await fits('equal'), false);
  });
}
