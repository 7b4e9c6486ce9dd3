// component-helpers storage/volume pv_helpers_test.go and helpers_test.go, case by case.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/cluster/types.ts';
import { isDelayBindingMode } from '../../src/volumes/claims.ts';
import { pvNodeAffinityMatches } from '../../src/volumes/node-affinity.ts';
import { claimMatchInput, findMatchingVolume } from '../../src/volumes/pv-matching.ts';
import * as build from '../helpers/objects.ts';

describe('TestDelayBindingMode', () => {
  const makePVCClass = (scName: string | undefined): PersistentVolumeClaim =>
    build.makePVC('c', { namespace: 'ns', uid: 'u', className: scName });
  const makeStorageClass = (name: string, mode: string | undefined): StorageClass => {
    const { volumeBindingMode, ...sc } = build.makeStorageClass(name, { provisioner: 'p', mode });
    return mode ? { ...sc, volumeBindingMode } : sc;
  };
  const classes = new Map(
    [
      makeStorageClass('no-mode', undefined),
      makeStorageClass('immediate-mode', 'Immediate'),
      makeStorageClass('wait-mode', 'WaitForFirstConsumer'),
    ].map((c) => [c.metadata.name, c]),
  );
  const tests: Record<string, { pvc: PersistentVolumeClaim; shouldDelay: boolean; shouldFail?: boolean }> = {
    'nil-class': { pvc: makePVCClass(undefined), shouldDelay: false },
    'class-not-found': { pvc: makePVCClass('not-here'), shouldDelay: false },
    'no-mode-class': { pvc: makePVCClass('no-mode'), shouldDelay: false, shouldFail: true },
    'immediate-mode-class': { pvc: makePVCClass('immediate-mode'), shouldDelay: false },
    'wait-mode-class': { pvc: makePVCClass('wait-mode'), shouldDelay: true },
  };
  for (const [name, t] of Object.entries(tests)) {
    it(name, () => {
      if (t.shouldFail) {
        assert.throws(
          () => isDelayBindingMode(t.pvc, (n) => classes.get(n)),
          /VolumeBindingMode not set for StorageClass "no-mode"/,
        );
        return;
      }
      assert.equal(
        isDelayBindingMode(t.pvc, (n) => classes.get(n)),
        t.shouldDelay,
      );
    });
  }
});

function makeTestVolume(
  uid: string,
  name: string,
  capacity: string,
  available: boolean,
  mod?: (pv: PersistentVolume) => void,
): PersistentVolume {
  const pv = build.makePV(name, {
    uid,
    size: capacity,
    ...(available ? { phase: 'Available' } : {}),
    spec: { local: { path: '' }, accessModes: ['ReadWriteOnce', 'ReadOnlyMany'], volumeMode: 'Filesystem' },
  });
  mod?.(pv);
  return pv;
}

function makeTestPersistentVolumeClaim(
  name: string,
  size: string,
  accessModes: string[],
  mod?: (pvc: PersistentVolumeClaim) => void,
): PersistentVolumeClaim {
  const pvc = build.makePVC(name, {
    namespace: 'myns',
    uid: '',
    className: 'wait',
    size,
    spec: { accessModes, volumeMode: 'Filesystem' },
  });
  mod?.(pvc);
  return pvc;
}

const makeNodeAffinity = (key: string, value: string) => ({
  required: { nodeSelectorTerms: [{ matchExpressions: [{ key, operator: 'In', values: [value] }] }] },
});

describe('TestFindMatchVolumeWithNode', () => {
  const volumes: PersistentVolume[] = [
    makeTestVolume('local-small', 'local001', '5G', true),
    makeTestVolume('local-pd-very-large', 'local002', '200E', true, (pv) => {
      pv.spec.storageClassName = 'large';
    }),
    makeTestVolume('affinity-pv', 'affinity001', '100G', true, (pv) => {
      pv.spec.storageClassName = 'wait';
      pv.spec.nodeAffinity = makeNodeAffinity('key1', 'value1');
    }),
    makeTestVolume('affinity-pv2', 'affinity002', '150G', true, (pv) => {
      pv.spec.storageClassName = 'wait';
      pv.spec.nodeAffinity = makeNodeAffinity('key1', 'value1');
    }),
    makeTestVolume('affinity-prebound', 'affinity003', '100G', true, (pv) => {
      pv.spec.storageClassName = 'wait';
      pv.spec.claimRef = { name: 'claim02', namespace: 'myns' };
      pv.spec.nodeAffinity = makeNodeAffinity('key1', 'value1');
    }),
    makeTestVolume('affinity-pv3', 'affinity003', '200G', true, (pv) => {
      pv.spec.storageClassName = 'wait';
      pv.spec.nodeAffinity = makeNodeAffinity('key1', 'value3');
    }),
    makeTestVolume('affinity-pv4', 'affinity004', '200G', false, (pv) => {
      pv.spec.storageClassName = 'wait';
      pv.spec.nodeAffinity = makeNodeAffinity('key1', 'value4');
    }),
  ];
  const withVAC = (name: string, input: PersistentVolume[]) =>
    input.map((pv) => ({ ...pv, spec: { ...pv.spec, volumeAttributesClassName: name } }));
  const node = (value: string) => ({ key1: value });
  const rwo = ['ReadWriteOnce'];
  const scenarios: Record<
    string,
    {
      expectedMatch: string;
      claim: PersistentVolumeClaim;
      labels: Record<string, string>;
      volumes: PersistentVolume[];
      excluded?: string[];
    }
  > = {
    'success-match': {
      expectedMatch: 'affinity-pv',
      volumes,
      claim: makeTestPersistentVolumeClaim('claim01', '100G', rwo),
      labels: node('value1'),
    },
    'success-prebound': {
      expectedMatch: 'affinity-prebound',
      volumes,
      claim: makeTestPersistentVolumeClaim('claim02', '100G', rwo),
      labels: node('value1'),
    },
    'success-exclusion': {
      expectedMatch: 'affinity-pv2',
      volumes,
      claim: makeTestPersistentVolumeClaim('claim01', '100G', rwo),
      labels: node('value1'),
      excluded: ['affinity001'],
    },
    'fail-exclusion': {
      expectedMatch: '',
      volumes,
      claim: makeTestPersistentVolumeClaim('claim01', '100G', rwo),
      labels: node('value1'),
      excluded: ['affinity001', 'affinity002', 'affinity002-vac'],
    },
    'fail-accessmode': {
      expectedMatch: '',
      volumes,
      claim: makeTestPersistentVolumeClaim('claim01', '100G', ['ReadWriteMany']),
      labels: node('value1'),
    },
    'fail-nodeaffinity': {
      expectedMatch: '',
      volumes,
      claim: makeTestPersistentVolumeClaim('claim01', '100G', rwo),
      labels: node('value2'),
    },
    'fail-prebound-node-affinity': {
      expectedMatch: '',
      volumes,
      claim: makeTestPersistentVolumeClaim('claim02', '100G', rwo),
      labels: node('value3'),
    },
    'fail-nonavaliable': {
      expectedMatch: '',
      volumes,
      claim: makeTestPersistentVolumeClaim('claim04', '100G', rwo),
      labels: node('value4'),
    },
    'success-bad-and-good-node-affinity': {
      expectedMatch: 'affinity-pv3',
      volumes,
      claim: makeTestPersistentVolumeClaim('claim03', '100G', rwo),
      labels: node('value3'),
    },
    'success-match-with-vac': {
      expectedMatch: 'affinity-pv',
      volumes: withVAC('gold', volumes),
      claim: makeTestPersistentVolumeClaim('claim01', '100G', rwo, (pvc) => {
        pvc.spec.volumeAttributesClassName = 'gold';
      }),
      labels: node('value1'),
    },
    'fail-vac': {
      expectedMatch: '',
      volumes,
      claim: makeTestPersistentVolumeClaim('claim01', '100G', rwo, (pvc) => {
        pvc.spec.volumeAttributesClassName = 'silver';
      }),
      labels: node('value1'),
    },
    'fail-prebound-vac': {
      expectedMatch: '',
      volumes: withVAC('gold', volumes),
      claim: makeTestPersistentVolumeClaim('claim02', '100G', rwo, (pvc) => {
        pvc.spec.volumeAttributesClassName = 'silver';
      }),
      labels: node('value1'),
    },
  };
  for (const [name, s] of Object.entries(scenarios)) {
    it(`[VolumeAttributiesClass: true] ${name}`, () => {
      const pv = findMatchingVolume(claimMatchInput(s.claim), s.volumes, s.labels, new Set(s.excluded ?? []));
      assert.equal(pv?.metadata.uid ?? '', s.expectedMatch);
    });
  }
});

describe('TestCheckVolumeNodeAffinity', () => {
  const nodeLabels = { 'test-key1': 'test-value1', 'test-key2': 'test-value2' };
  const pv = (nodeAffinity: PersistentVolume['spec']['nodeAffinity']): PersistentVolume => ({
    metadata: { name: 'test-constraints', uid: 'u', resourceVersion: '1' },
    spec: nodeAffinity === undefined ? {} : { nodeAffinity },
  });
  const term = (...exprs: [string, string[]][]) => ({
    matchExpressions: exprs.map(([key, values]) => ({ key, operator: 'In', values })),
  });
  const cases: [string, boolean, PersistentVolume][] = [
    ['valid-nil', true, pv(undefined)],
    ['valid-no-constraints', true, pv({})],
    ['select-nothing', false, pv({ required: { nodeSelectorTerms: [] } })],
    ['select-nothing-empty-terms', false, pv({ required: { nodeSelectorTerms: [{ matchExpressions: [] }] } })],
    [
      'valid-multiple-terms',
      true,
      pv({
        required: {
          nodeSelectorTerms: [
            term(['test-key3', ['test-value1', 'test-value3']]),
            term(['test-key2', ['test-value0', 'test-value2']]),
          ],
        },
      }),
    ],
    [
      'valid-multiple-match-expressions',
      true,
      pv({
        required: {
          nodeSelectorTerms: [
            term(['test-key1', ['test-value1', 'test-value3']], ['test-key2', ['test-value0', 'test-value2']]),
          ],
        },
      }),
    ],
    [
      'invalid-multiple-match-expressions-key',
      false,
      pv({
        required: {
          nodeSelectorTerms: [
            term(['test-key1', ['test-value1', 'test-value3']], ['test-key3', ['test-value0', 'test-value2']]),
          ],
        },
      }),
    ],
    [
      'invalid-multiple-match-expressions-values',
      false,
      pv({
        required: {
          nodeSelectorTerms: [
            term(['test-key1', ['test-value3', 'test-value4']], ['test-key2', ['test-value0', 'test-value2']]),
          ],
        },
      }),
    ],
    [
      'invalid-multiple-terms',
      false,
      pv({
        required: {
          nodeSelectorTerms: [
            term(['test-key3', ['test-value1', 'test-value3']]),
            term(['test-key2', ['test-value0', 'test-value1']]),
          ],
        },
      }),
    ],
  ];
  for (const [name, expectSuccess, volume] of cases) {
    it(name, () => assert.equal(pvNodeAffinityMatches(volume, nodeLabels), expectSuccess));
  }
});
