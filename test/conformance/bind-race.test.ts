// Many binds racing through the HTTP bind route for fewer local PVs (and a provisioner whose capacity runs out):
// no PV is ever bound twice, every bound volume sits on its pod's node, and failed binds leave no assumption
// behind — a probe filter answers exactly as a fresh extender built from the final cluster state does.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { AnyObject, Kind } from '../../src/cluster/types.ts';
import { KINDS } from '../../src/cluster/types.ts';
import { makeCSIDriver } from '../helpers/objects.ts';
import {
  Conformance,
  makeCapacity,
  makeDynamicProvisionerStorageClass,
  makeNode,
  makePod,
  makePV,
  makePVC,
  makeStorageClass,
  NS,
} from './harness.ts';

const DRIVER = 'dyn.csi.example.com';

function clusterObjects(): { objects: AnyObject[]; pods: ReturnType<typeof makePod>[]; targets: string[] } {
  const nodes = [
    makeNode('node-a', { 'topology.kubernetes.io/zone': 'za' }),
    makeNode('node-b', { 'topology.kubernetes.io/zone': 'zb' }),
  ];
  const objects: AnyObject[] = [
    ...nodes,
    makeStorageClass('local', 'WaitForFirstConsumer'),
    { ...makeDynamicProvisionerStorageClass('dyn', 'WaitForFirstConsumer'), provisioner: DRIVER },
    makeCSIDriver(DRIVER, { storageCapacity: true }),
    // Room for two 4Gi volumes per zone: the third provisioning in a zone fails and the scheduler must retry.
    makeCapacity('cap-za', 'dyn', '9Gi', { matchLabels: { 'topology.kubernetes.io/zone': 'za' } }),
    makeCapacity('cap-zb', 'dyn', '9Gi', { matchLabels: { 'topology.kubernetes.io/zone': 'zb' } }),
    ...Array.from({ length: 6 }, (_, i) => makePV(`pv-a-${i}`, 'local', '', 'node-a', { size: '10Gi' })),
    makePV('pv-b-0', 'local', '', 'node-b', { size: '10Gi' }),
    makePV('pv-b-1', 'local', '', 'node-b', { size: '10Gi' }),
  ];
  const pods = [];
  const targets = [];
  for (let i = 0; i < 14; i++) {
    const claims = [`data-${i}`];
    objects.push(makePVC(`data-${i}`, 'local', '', { size: '5Gi' }));
    if (i % 2 === 0) {
      claims.push(`scratch-${i}`);
      objects.push(makePVC(`scratch-${i}`, 'dyn', '', { size: '4Gi' }));
    }
    const pod = makePod(`racer-${i}`, claims);
    pods.push(pod);
    objects.push(pod);
    targets.push(i % 4 === 3 ? 'node-b' : 'node-a');
  }
  // These get as far as writing their PV and annotating their claim, then the provisioner gives up (the claim asks
  // for no size): the bind fails after assuming, and must revert everything it assumed.
  for (let i = 14; i < 17; i++) {
    const unsized = makePVC(`unsized-${i}`, 'dyn');
    delete unsized.spec.resources;
    objects.push(makePVC(`data-${i}`, 'local', '', { size: '5Gi' }), unsized);
    const pod = makePod(`racer-${i}`, [`data-${i}`, `unsized-${i}`]);
    pods.unshift(pod);
    objects.push(pod);
    targets.unshift('node-a');
  }
  return { objects, pods, targets };
}

function clusterStateOf(k: Conformance): AnyObject[] {
  const out: AnyObject[] = [];
  for (const kind of KINDS as readonly Kind[]) {
    for (const obj of k.t.store.list(kind)) out.push({ ...obj, kind } as AnyObject);
  }
  return out;
}

it('racing binds never book a PV twice and leave no assumption behind', async () => {
  const { objects, pods, targets } = clusterObjects();
  const k = await Conformance.start(objects, { bindTimeoutSeconds: 5 });
  let fresh: Conformance | undefined;
  try {
    // kube-scheduler filtered each pod before binding: every racer saw both nodes as feasible.
    for (const pod of pods)
      assert.deepEqual((await k.filter(pod, ['node-a', 'node-b'])).NodeNames, ['node-a', 'node-b']);

    const results = await Promise.all(pods.map((pod, i) => k.bind(pod, targets[i])));
    const succeeded = pods.filter((_, i) => results[i] === '');
    assert.ok(
      results.some((r) => r.includes('binding volumes:')),
      'some binds fail after assuming (provisioning gave up)',
    );
    assert.ok(
      succeeded.length > 0 && succeeded.length < pods.length,
      `some binds win, some lose: ${results.join(' | ')}`,
    );
    await k.t.waitFor(() => succeeded.every((p) => !!k.t.store.get('Pod', `${NS}/${p.metadata.name}`)?.spec.nodeName));

    // No PV is bound (or pre-bound) to two claims; each claim points at the PV that points back at it.
    const owners = new Map<string, string>();
    for (const pv of k.t.store.list('PersistentVolume')) {
      const ref = pv.spec.claimRef;
      if (!ref?.name) continue;
      const key = `${ref.namespace}/${ref.name}`;
      assert.ok(![...owners.values()].includes(key), `${key} owns one PV only`);
      owners.set(pv.metadata.name, key);
      const pvc = k.t.store.get('PersistentVolumeClaim', key);
      if (pvc?.spec.volumeName) assert.equal(pvc.spec.volumeName, pv.metadata.name);
    }
    // A bound pod's volumes sit on its node; a pod whose bind failed is not bound.
    for (const [i, pod] of pods.entries()) {
      const stored = k.t.store.get('Pod', `${NS}/${pod.metadata.name}`)!;
      if (results[i] !== '') {
        assert.equal(stored.spec.nodeName, undefined, `${pod.metadata.name} lost: ${results[i]}`);
        continue;
      }
      assert.equal(stored.spec.nodeName, targets[i]);
      for (const v of pod.spec.volumes ?? []) {
        const pvc = k.claim(v.persistentVolumeClaim!.claimName)!;
        const pv = k.volume(pvc.spec.volumeName!)!;
        const terms = pv.spec.nodeAffinity?.required?.nodeSelectorTerms ?? [];
        const values = terms.flatMap((t) => (t.matchExpressions ?? []).flatMap((e) => e.values ?? []));
        assert.ok(
          values.includes(targets[i]) || values.includes(targets[i] === 'node-a' ? 'za' : 'zb'),
          `${pv.metadata.name} is reachable from ${targets[i]}`,
        );
      }
    }

    // No assumption left behind: the same probe gets the same answer from an extender that never assumed anything.
    const probeClaims = [
      makePVC('probe-data', 'local', '', { size: '1Gi' }),
      makePVC('probe-scratch', 'dyn', '', { size: '1Gi' }),
    ];
    const probe = makePod('probe', ['probe-data', 'probe-scratch']);
    for (const obj of [...probeClaims, probe]) await k.t.add(obj);
    fresh = new Conformance(
      await (await import('../helpers/extender.ts')).createTestExtender(
        clusterStateOf(k),
        {},
        { volumeController: false },
      ),
    );
    const here = await k.filter(probe, ['node-a', 'node-b']);
    const there = await fresh.filter(probe, ['node-a', 'node-b']);
    assert.deepEqual(here, there);
  } finally {
    await fresh?.close();
    await k.close();
  }
});
