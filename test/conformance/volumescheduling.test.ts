// Upstream test/integration/volumescheduling (TestVolumeBinding, TestPVAffinityConflict, TestVolumeProvision,
// TestCapacity) through the HTTP filter and bind routes, one cluster state per case. Where upstream's PV controller
// binds Immediate claims before scheduling, the state starts with that binding done (our simulated controller only
// completes pre-bound claims and provisions for selected nodes).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AnyObject, Pod } from '../../src/cluster/types.ts';
import { makeCSIDriver } from '../helpers/objects.ts';
import {
  boundPair,
  Conformance,
  makeCapacity,
  makeDynamicProvisionerStorageClass,
  makeNode,
  makePod,
  makePV,
  makePVC,
  makeStorageClass,
  PROVISIONER,
} from './harness.ts';

const NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity";
const BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind";
const NOT_ENOUGH_SPACE = 'node(s) did not have enough free storage';
const UNBOUND_IMMEDIATE = 'pod has unbound immediate PersistentVolumeClaims';

interface Case {
  pod: Pod;
  objects: AnyObject[];
  nodes: string[];
  /** Claims the PV controller binds before the pod is scheduled (pre-bound claims or PVs). */
  boundBefore?: string[];
  feasible: string[];
  unresolvable?: Record<string, string>;
  /** Claims bound after binding the pod to the first feasible node (upstream validatePVCPhase Bound). */
  boundAfter?: string[];
  /** PVs that must stay Available (upstream unboundPvs). */
  availableAfter?: string[];
}

async function run(c: Case): Promise<void> {
  const nodes = c.nodes.map((n) => makeNode(n));
  const k = await Conformance.start([...nodes, ...c.objects, c.pod]);
  try {
    if (c.boundBefore) await k.claimsBound(c.boundBefore);
    const answer = await k.filter(c.pod, c.nodes);
    assert.equal(answer.Error, '');
    assert.deepEqual(answer.NodeNames, c.feasible);
    assert.deepEqual(answer.FailedNodes, {});
    assert.deepEqual(answer.FailedAndUnresolvableNodes, c.unresolvable ?? {});
    if (c.feasible.length === 0) return;
    assert.equal(await k.bind(c.pod, c.feasible[0]), '');
    // The bind wrote both halves of each binding; the simulated PV controller completes them (upstream's
    // validatePVCPhase waits for Bound the same way).
    await k.claimsBound(c.boundAfter ?? []);
    for (const claim of c.boundAfter ?? []) {
      const pvc = k.claim(claim);
      assert.ok(pvc?.spec.volumeName, `claim ${claim} bound`);
      const pv = k.volume(pvc.spec.volumeName!);
      assert.equal(pv?.spec.claimRef?.name, claim, `PV ${pv?.metadata.name} bound to ${claim}`);
    }
    for (const name of c.availableAfter ?? [])
      assert.equal(k.volume(name)?.spec.claimRef, undefined, `PV ${name} stays free`);
    // The Binding reaches the store as a watch event would: on a later turn.
    await k.t.waitFor(
      () => k.t.store.get('Pod', `${c.pod.metadata.namespace}/${c.pod.metadata.name}`)?.spec.nodeName === c.feasible[0],
    );
  } finally {
    await k.close();
  }
}

const twoNodes = ['node-1', 'node-2'];
const immediate = makeStorageClass('immediate', 'Immediate');
const wait = makeStorageClass('wait', 'WaitForFirstConsumer');

describe('TestVolumeBinding', () => {
  const cases: Record<string, Case> = {
    'immediate can bind': {
      pod: makePod('pod-i-canbind', ['pvc-i-canbind']),
      objects: [immediate, wait, ...boundPair('pv-i-canbind', 'pvc-i-canbind', 'immediate', 'node-1')],
      nodes: twoNodes,
      feasible: ['node-1'],
      unresolvable: { 'node-2': NODE_CONFLICT },
      boundAfter: ['pvc-i-canbind'],
    },
    'immediate cannot bind': {
      pod: makePod('pod-i-cannotbind', ['pvc-i-cannotbind']),
      objects: [immediate, wait, makePVC('pvc-i-cannotbind', 'immediate')],
      nodes: twoNodes,
      feasible: [],
      unresolvable: { 'node-1': UNBOUND_IMMEDIATE, 'node-2': UNBOUND_IMMEDIATE },
    },
    'immediate pvc prebound': {
      pod: makePod('pod-i-pvc-prebound', ['pvc-i-prebound']),
      objects: [
        immediate,
        wait,
        makePV('pv-i-pvc-prebound', 'immediate', '', 'node-1'),
        makePVC('pvc-i-prebound', 'immediate', 'pv-i-pvc-prebound'),
      ],
      nodes: twoNodes,
      boundBefore: ['pvc-i-prebound'],
      feasible: ['node-1'],
      unresolvable: { 'node-2': NODE_CONFLICT },
      boundAfter: ['pvc-i-prebound'],
    },
    'immediate pv prebound': {
      pod: makePod('pod-i-pv-prebound', ['pvc-i-pv-prebound']),
      objects: [
        immediate,
        wait,
        makePV('pv-i-prebound', 'immediate', 'pvc-i-pv-prebound', 'node-1'),
        makePVC('pvc-i-pv-prebound', 'immediate'),
      ],
      nodes: twoNodes,
      boundBefore: ['pvc-i-pv-prebound'],
      feasible: ['node-1'],
      unresolvable: { 'node-2': NODE_CONFLICT },
      boundAfter: ['pvc-i-pv-prebound'],
    },
    'wait can bind': {
      pod: makePod('pod-w-canbind', ['pvc-w-canbind']),
      objects: [immediate, wait, makePV('pv-w-canbind', 'wait', '', 'node-1'), makePVC('pvc-w-canbind', 'wait')],
      nodes: twoNodes,
      feasible: ['node-1'],
      unresolvable: { 'node-2': BIND_CONFLICT },
      boundAfter: ['pvc-w-canbind'],
    },
    'wait cannot bind': {
      pod: makePod('pod-w-cannotbind', ['pvc-w-cannotbind']),
      objects: [immediate, wait, makePVC('pvc-w-cannotbind', 'wait')],
      nodes: twoNodes,
      feasible: [],
      unresolvable: { 'node-1': BIND_CONFLICT, 'node-2': BIND_CONFLICT },
    },
    'wait pvc prebound': {
      pod: makePod('pod-w-pvc-prebound', ['pvc-w-prebound']),
      objects: [
        immediate,
        wait,
        makePV('pv-w-pvc-prebound', 'wait', '', 'node-1'),
        makePVC('pvc-w-prebound', 'wait', 'pv-w-pvc-prebound'),
      ],
      nodes: twoNodes,
      boundBefore: ['pvc-w-prebound'],
      feasible: ['node-1'],
      unresolvable: { 'node-2': NODE_CONFLICT },
      boundAfter: ['pvc-w-prebound'],
    },
    'wait pv prebound': {
      pod: makePod('pod-w-pv-prebound', ['pvc-w-pv-prebound']),
      objects: [
        immediate,
        wait,
        makePV('pv-w-prebound', 'wait', 'pvc-w-pv-prebound', 'node-1'),
        makePVC('pvc-w-pv-prebound', 'wait'),
      ],
      nodes: twoNodes,
      boundBefore: ['pvc-w-pv-prebound'],
      feasible: ['node-1'],
      unresolvable: { 'node-2': NODE_CONFLICT },
      boundAfter: ['pvc-w-pv-prebound'],
    },
    'wait can bind two': {
      pod: makePod('pod-w-canbind-2', ['pvc-w-canbind-2', 'pvc-w-canbind-3']),
      objects: [
        immediate,
        wait,
        makePV('pv-w-canbind-2', 'wait', '', 'node-2'),
        makePV('pv-w-canbind-3', 'wait', '', 'node-2'),
        makePV('pv-w-canbind-5', 'wait', '', 'node-1'),
        makePVC('pvc-w-canbind-2', 'wait'),
        makePVC('pvc-w-canbind-3', 'wait'),
      ],
      nodes: twoNodes,
      feasible: ['node-2'],
      unresolvable: { 'node-1': BIND_CONFLICT },
      boundAfter: ['pvc-w-canbind-2', 'pvc-w-canbind-3'],
      availableAfter: ['pv-w-canbind-5'],
    },
    'wait cannot bind two': {
      pod: makePod('pod-w-cannotbind-2', ['pvc-w-cannotbind-1', 'pvc-w-cannotbind-2']),
      objects: [
        immediate,
        wait,
        makePV('pv-w-cannotbind-1', 'wait', '', 'node-2'),
        makePV('pv-w-cannotbind-2', 'wait', '', 'node-1'),
        makePVC('pvc-w-cannotbind-1', 'wait'),
        makePVC('pvc-w-cannotbind-2', 'wait'),
      ],
      nodes: twoNodes,
      feasible: [],
      unresolvable: { 'node-1': BIND_CONFLICT, 'node-2': BIND_CONFLICT },
    },
    'mix immediate and wait': {
      pod: makePod('pod-mix-bound', ['pvc-w-canbind-4', 'pvc-i-canbind-2']),
      objects: [
        immediate,
        wait,
        makePV('pv-w-canbind-4', 'wait', '', 'node-1'),
        ...boundPair('pv-i-canbind-2', 'pvc-i-canbind-2', 'immediate', 'node-1'),
        makePVC('pvc-w-canbind-4', 'wait'),
      ],
      nodes: twoNodes,
      feasible: ['node-1'],
      unresolvable: { 'node-2': `${NODE_CONFLICT}, ${BIND_CONFLICT}` },
      boundAfter: ['pvc-w-canbind-4', 'pvc-i-canbind-2'],
    },
  };
  for (const [name, c] of Object.entries(cases)) it(name, () => run(c));
});

describe('TestPVAffinityConflict', () => {
  it('a bound local PV keeps the pod off other nodes, with the v1.33+ reason', () =>
    run({
      pod: makePod('local-pod-1', ['local-pvc']),
      objects: [immediate, ...boundPair('local-pv', 'local-pvc', 'immediate', 'node-1')],
      nodes: ['node-2', 'node-3'],
      feasible: [],
      unresolvable: { 'node-2': NODE_CONFLICT, 'node-3': NODE_CONFLICT },
    }));
});

describe('TestVolumeProvision', () => {
  const dynImmediate = makeDynamicProvisionerStorageClass('immediate', 'Immediate');
  const dynWait = makeDynamicProvisionerStorageClass('wait', 'WaitForFirstConsumer');
  const topoMismatch = makeDynamicProvisionerStorageClass('topomismatch', 'WaitForFirstConsumer', [
    { matchLabelExpressions: [{ key: 'kubernetes.io/hostname', values: ['node-2'] }] },
  ]);
  const classes = [dynImmediate, dynWait, topoMismatch];
  const cases: Record<string, Case> = {
    'wait provisioned': {
      pod: makePod('pod-pvc-canprovision', ['pvc-canprovision']),
      objects: [...classes, makePVC('pvc-canprovision', 'wait')],
      nodes: ['node-1'],
      feasible: ['node-1'],
      boundAfter: ['pvc-canprovision'],
    },
    'topolgy unsatisfied': {
      pod: makePod('pod-pvc-topomismatch', ['pvc-topomismatch']),
      objects: [...classes, makePVC('pvc-topomismatch', 'topomismatch')],
      nodes: ['node-1'],
      feasible: [],
      unresolvable: { 'node-1': BIND_CONFLICT },
    },
    'wait one bound, one provisioned': {
      pod: makePod('pod-pvc-canbind-or-provision', ['pvc-w-canbind', 'pvc-canprovision']),
      objects: [
        ...classes,
        makePV('pv-w-canbind', 'wait', '', 'node-1'),
        makePVC('pvc-w-canbind', 'wait'),
        makePVC('pvc-canprovision', 'wait'),
      ],
      nodes: ['node-1'],
      feasible: ['node-1'],
      boundAfter: ['pvc-w-canbind', 'pvc-canprovision'],
    },
    'one immediate pv prebound, one wait provisioned': {
      pod: makePod('pod-i-pv-prebound-w-provisioned', ['pvc-i-pv-prebound', 'pvc-canprovision']),
      objects: [
        ...classes,
        makePV('pv-i-prebound', 'immediate', 'pvc-i-pv-prebound', 'node-1'),
        makePVC('pvc-i-pv-prebound', 'immediate'),
        makePVC('pvc-canprovision', 'wait'),
      ],
      nodes: ['node-1'],
      boundBefore: ['pvc-i-pv-prebound'],
      feasible: ['node-1'],
      boundAfter: ['pvc-i-pv-prebound', 'pvc-canprovision'],
    },
    'wait one pv prebound, one provisioned': {
      pod: makePod('pod-w-pv-prebound-w-provisioned', ['pvc-w-pv-prebound', 'pvc-canprovision']),
      objects: [
        ...classes,
        makePV('pv-w-prebound', 'wait', 'pvc-w-pv-prebound', 'node-1'),
        makePVC('pvc-w-pv-prebound', 'wait'),
        makePVC('pvc-canprovision', 'wait'),
      ],
      nodes: ['node-1'],
      boundBefore: ['pvc-w-pv-prebound'],
      feasible: ['node-1'],
      boundAfter: ['pvc-w-pv-prebound', 'pvc-canprovision'],
    },
    'immediate provisioned by controller': {
      pod: makePod('pod-i-unbound', ['pvc-controller-provisioned']),
      objects: [...classes, ...boundPair('pv-controller-provisioned', 'pvc-controller-provisioned', 'immediate', '')],
      nodes: ['node-1'],
      feasible: ['node-1'],
      boundAfter: ['pvc-controller-provisioned'],
    },
  };
  for (const [name, c] of Object.entries(cases)) it(name, () => run(c));
});

describe('TestCapacity', () => {
  const classes = [
    makeDynamicProvisionerStorageClass('immediate', 'Immediate'),
    makeDynamicProvisionerStorageClass('wait', 'WaitForFirstConsumer'),
  ];
  const pod = () => makePod('pod-pvc-canprovision', ['pvc-canprovision']);
  const cases: Record<string, { capacitySupported: boolean; haveCapacity: boolean }> = {
    baseline: { capacitySupported: false, haveCapacity: false },
    'out of space': { capacitySupported: true, haveCapacity: false },
    'with space': { capacitySupported: true, haveCapacity: true },
    ignored: { capacitySupported: false, haveCapacity: true },
  };
  for (const [name, c] of Object.entries(cases)) {
    it(name, () => {
      const shouldFail = c.capacitySupported && !c.haveCapacity;
      return run({
        pod: pod(),
        objects: [
          ...classes,
          makePVC('pvc-canprovision', 'wait'),
          ...(c.capacitySupported ? [makeCSIDriver(PROVISIONER, { storageCapacity: true })] : []),
          // More than the 5Gi the claim asks for.
          ...(c.haveCapacity ? [makeCapacity('foo-1', 'wait', '6Gi')] : []),
        ],
        nodes: ['node-1'],
        feasible: shouldFail ? [] : ['node-1'],
        ...(shouldFail ? { unresolvable: { 'node-1': NOT_ENOUGH_SPACE } } : { boundAfter: ['pvc-canprovision'] }),
      });
    });
  }
});
