// Upstream volumescheduling TestVolumeBindingRescheduling (the pod becomes schedulable once the missing class, PV
// or claim appears: the decisions follow store events) and testVolumeBindingStress (many pods × 3 claims, static
// pre-bound/unbound and dynamic), through the HTTP filter and bind routes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AnyObject } from '../../src/cluster/types.ts';
import {
  Conformance,
  makeDynamicProvisionerStorageClass,
  makeNode,
  makePod,
  makePV,
  makePVC,
  makeStorageClass,
  NS,
} from './harness.ts';

const BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind";

describe('TestVolumeBindingRescheduling', () => {
  const cases: Record<string, { objects: AnyObject[]; claim: string; before: string; trigger: AnyObject[] }> = {
    'reschedule on WaitForFirstConsumer dynamic storage class add': {
      objects: [makePVC('pvc-reschedule-onclassadd-dynamic', 'local-storage')],
      claim: 'pvc-reschedule-onclassadd-dynamic',
      // No class: the claim is "immediate" and unbound until the class appears.
      before: 'pod has unbound immediate PersistentVolumeClaims',
      trigger: [makeDynamicProvisionerStorageClass('local-storage', 'WaitForFirstConsumer')],
    },
    'reschedule on WaitForFirstConsumer static storage class add': {
      objects: [makePVC('pvc-reschedule-onclassadd-static', 'local-storage')],
      claim: 'pvc-reschedule-onclassadd-static',
      before: 'pod has unbound immediate PersistentVolumeClaims',
      trigger: [
        makeStorageClass('local-storage', 'WaitForFirstConsumer'),
        makePV('pv-reschedule-onclassadd-static', 'local-storage', '', 'node-1'),
      ],
    },
    'reschedule on delay binding PVC add': {
      objects: [
        makeStorageClass('wait', 'WaitForFirstConsumer'),
        makePV('pv-reschedule-onpvcadd', 'wait', '', 'node-1'),
      ],
      claim: 'pvc-reschedule-onpvcadd',
      before: 'persistentvolumeclaim "pvc-reschedule-onpvcadd" not found',
      trigger: [makePVC('pvc-reschedule-onpvcadd', 'wait')],
    },
  };
  for (const [name, c] of Object.entries(cases)) {
    it(name, async () => {
      const pod = makePod(`pod-${c.claim}`, [c.claim]);
      const k = await Conformance.start([makeNode('node-1'), makeNode('node-2'), ...c.objects, pod]);
      try {
        const first = await k.filter(pod, ['node-1', 'node-2']);
        assert.deepEqual(first.NodeNames, []);
        assert.deepEqual(first.FailedAndUnresolvableNodes, { 'node-1': c.before, 'node-2': c.before });
        for (const obj of c.trigger) await k.t.add(obj);
        const second = await k.filter(pod, ['node-1', 'node-2']);
        assert.ok(second.NodeNames.includes('node-1'), JSON.stringify(second));
        assert.equal(await k.bind(pod, 'node-1'), '');
        await k.claimsBound([c.claim]);
      } finally {
        await k.close();
      }
    });
  }
});

describe('TestVolumeBindingStress', () => {
  const PODS = 50;
  const VOLS_PER_POD = 3;

  async function stress(dynamic: boolean): Promise<void> {
    const objects: AnyObject[] = [
      makeNode('node-1'),
      makeStorageClass('immediate', 'Immediate'),
      makeStorageClass('wait', 'WaitForFirstConsumer'),
      makeDynamicProvisionerStorageClass('dynamic', 'WaitForFirstConsumer'),
    ];
    const prebound: string[] = [];
    for (let i = 0; i < PODS * VOLS_PER_POD; i++) {
      const pvName = `pv-stress-${i}`;
      const pvcName = `pvc-stress-${i}`;
      if (dynamic) {
        objects.push(makePVC(pvcName, 'dynamic'));
      } else if (i % 2 === 0) {
        objects.push(makePV(pvName, 'wait', '', 'node-1'), makePVC(pvcName, 'wait'));
      } else {
        objects.push(makePV(pvName, 'immediate', pvcName, 'node-1'), makePVC(pvcName, 'immediate', pvName));
        prebound.push(pvcName);
      }
    }
    const pods = Array.from({ length: PODS }, (_, i) =>
      makePod(
        `pod${String(i).padStart(3, '0')}`,
        Array.from({ length: VOLS_PER_POD }, (_, j) => `pvc-stress-${i * VOLS_PER_POD + j}`),
      ),
    );
    const k = await Conformance.start([...objects, ...pods], { bindTimeoutSeconds: 30 });
    try {
      await k.claimsBound(prebound);
      for (const pod of pods)
        assert.deepEqual((await k.filter(pod, ['node-1'])).NodeNames, ['node-1'], pod.metadata.name);
      // kube-scheduler binds asynchronously: all binds overlap.
      const errors = await Promise.all(pods.map((pod) => k.bind(pod, 'node-1')));
      assert.deepEqual(
        errors.filter((e) => e !== ''),
        [],
      );
      await k.claimsBound(Array.from({ length: PODS * VOLS_PER_POD }, (_, i) => `pvc-stress-${i}`));
      const volumes = new Set<string>();
      for (let i = 0; i < PODS * VOLS_PER_POD; i++) {
        const pvc = k.claim(`pvc-stress-${i}`)!;
        assert.ok(pvc.spec.volumeName, `pvc-stress-${i} bound`);
        assert.ok(!volumes.has(pvc.spec.volumeName), `${pvc.spec.volumeName} bound once`);
        volumes.add(pvc.spec.volumeName);
        assert.equal(k.volume(pvc.spec.volumeName)?.spec.claimRef?.name, `pvc-stress-${i}`);
      }
      await k.t.waitFor(() =>
        pods.every((p) => k.t.store.get('Pod', `${NS}/${p.metadata.name}`)?.spec.nodeName === 'node-1'),
      );
      // And the node is now full for one more claim of the static class.
      if (!dynamic) {
        const extra = makePVC('pvc-extra', 'wait');
        const late = makePod('late', ['pvc-extra']);
        await k.t.add(extra);
        await k.t.add(late);
        assert.deepEqual((await k.filter(late, ['node-1'])).FailedAndUnresolvableNodes, { 'node-1': BIND_CONFLICT });
      }
    } finally {
      await k.close();
    }
  }

  it('static unbound and pre-bound PVs', () => stress(false));
  it('TestVolumeBindingDynamicStressFast', () => stress(true));
});
