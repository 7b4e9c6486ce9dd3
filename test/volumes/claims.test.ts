// Claim classification and the pod-level verdicts (upstream podHasPVCs / GetPodVolumeClaims), word for word.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ephemeralClaimName } from '../../src/cache/pod-usage.ts';
import type { PersistentVolumeClaim } from '../../src/cluster/types.ts';
import { podClaimRefs } from '../../src/volumes/claims.ts';
import {
  boundPVC,
  conflictingGenericPVC,
  correctGenericPVC,
  immediateUnboundPVC,
  makePod,
  preboundPVC,
  provisionedPVC,
  selectedNodePVC,
  storageClasses,
  TestCluster,
  unboundPVC,
} from './fixtures.ts';

function binderWith(pvcs: PersistentVolumeClaim[]) {
  return new TestCluster([...storageClasses(), ...pvcs]).binder();
}

describe('pod-level claim verdicts', () => {
  const cases: [
    string,
    () => { pvcs: PersistentVolumeClaim[]; pod: ReturnType<typeof makePod> },
    string | undefined,
  ][] = [
    ['no claims', () => ({ pvcs: [], pod: makePod('test-pod') }), undefined],
    [
      'claim not found',
      () => ({ pvcs: [], pod: makePod('test-pod', { claims: [boundPVC] }) }),
      'persistentvolumeclaim "bound-pvc" not found',
    ],
    [
      'ephemeral claim not created yet',
      () => ({ pvcs: [], pod: makePod('test-pod', { ephemeral: ['data'] }) }),
      'waiting for ephemeral volume controller to create the persistentvolumeclaim "test-pod-data"',
    ],
    [
      'claim lost',
      () => {
        const lost = { ...boundPVC, status: { phase: 'Lost' } };
        return { pvcs: [lost], pod: makePod('test-pod', { claims: [lost] }) };
      },
      'persistentvolumeclaim "bound-pvc" bound to non-existent persistentvolume "pv-bound"',
    ],
    [
      'claim being deleted',
      () => {
        const deleting = {
          ...unboundPVC,
          metadata: { ...unboundPVC.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' },
        };
        return { pvcs: [deleting], pod: makePod('test-pod', { claims: [deleting] }) };
      },
      'persistentvolumeclaim "unbound-pvc" is being deleted',
    ],
    [
      'ephemeral claim not owned by the pod',
      () => ({ pvcs: [conflictingGenericPVC], pod: makePod('test-pod', { ephemeral: ['test-volume'] }) }),
      'PVC testns/test-pod-test-volume was not created for pod testns/test-pod (pod is not owner)',
    ],
    [
      'ephemeral claim owned by the pod',
      () => ({ pvcs: [correctGenericPVC], pod: makePod('test-pod', { ephemeral: ['test-volume'] }) }),
      undefined,
    ],
  ];
  for (const [name, build, want] of cases) {
    it(name, () => {
      const { pvcs, pod } = build();
      assert.equal(binderWith(pvcs).podClaimsError(pod), want);
    });
  }
});

describe('GetPodVolumeClaims classification', () => {
  it('bound, delayed and immediate (pre-bound claims count as immediate)', () => {
    const pvcs = [boundPVC, unboundPVC, preboundPVC, immediateUnboundPVC, selectedNodePVC];
    const binder = binderWith(pvcs);
    const claims = binder.getPodVolumeClaims(makePod('test-pod', { claims: pvcs }));
    const names = (l: PersistentVolumeClaim[]) => l.map((c) => c.metadata.name);
    assert.deepEqual(names(claims.boundClaims), ['bound-pvc']);
    assert.deepEqual(names(claims.unboundClaimsDelayBinding), ['unbound-pvc', 'provisioned-pvc']);
    assert.deepEqual(names(claims.unboundClaimsImmediate), ['prebound-pvc', 'immediate-unbound-pvc']);
  });

  it('a class without volumeBindingMode is an error', () => {
    const claim = { ...provisionedPVC, spec: { ...provisionedPVC.spec, storageClassName: 'no-mode' } };
    const cluster = new TestCluster([
      { kind: 'StorageClass', metadata: { name: 'no-mode', uid: 'x', resourceVersion: '1' }, provisioner: 'p' },
      claim,
    ]);
    assert.throws(() => cluster.binder().getPodVolumeClaims(makePod('test-pod', { claims: [claim] })), {
      message: 'VolumeBindingMode not set for StorageClass "no-mode"',
    });
  });

  it('the beta storage-class annotation wins over spec.storageClassName', () => {
    const claim: PersistentVolumeClaim = {
      ...unboundPVC,
      metadata: {
        ...unboundPVC.metadata,
        annotations: { 'volume.beta.kubernetes.io/storage-class': 'immediateClass' },
      },
    };
    const claims = binderWith([claim]).getPodVolumeClaims(makePod('test-pod', { claims: [claim] }));
    assert.equal(claims.unboundClaimsImmediate.length, 1);
  });

  it('ephemeral claim names are <pod>-<volume>', () => {
    const pod = makePod('web-0', { ephemeral: ['scratch'], claims: [boundPVC] });
    assert.equal(ephemeralClaimName(pod, pod.spec.volumes![1].name), 'web-0-scratch');
    assert.deepEqual(podClaimRefs(pod), [
      { name: 'bound-pvc', ephemeral: false },
      { name: 'web-0-scratch', ephemeral: true },
    ]);
  });
});
