// Explain names, per node, the plugin that decided and why; for VolumeBinding, every PV it passed over with the rule
// of ../shared/spec/volume-binding.md that refused it, the PV it would choose, and the provisioning verdict.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AnyObject, PersistentVolume, PersistentVolumeClaim } from '../../src/cluster/types.ts';
import { filter } from '../../src/extender/filter.ts';
import { explain, type NodeExplanation } from '../../src/ops/explain.ts';
import { DEFAULT_PROFILE_PLUGINS } from '../../src/plugins/default-profile.ts';
import { VOLUME_BINDING, type VolumeBindingPlugin } from '../../src/plugins/index.ts';
import type { ClaimExplanation } from '../../src/volumes/explain.ts';
import { bindVolumeToClaim } from '../../src/volumes/pv-matching.ts';
import {
  claim,
  localPV,
  makeCSIDriver,
  makeCSINode,
  makeCSIStorageCapacity,
  makePV,
  node,
  pod,
  storageClass,
} from '../helpers/objects.ts';
import { cluster, exampleObjects } from './helpers.ts';

function claims(n: NodeExplanation): ClaimExplanation[] {
  return (n.detail.VolumeBinding as { claims: ClaimExplanation[] }).claims;
}

/** A local PV on n1 with the one change a case is about. */
function pv(name: string, change: (pv: PersistentVolume) => void = () => {}): PersistentVolume {
  const out = localPV(name, 'n1');
  change(out);
  return out;
}

describe('explain: static matching, one refusal per rule', () => {
  const objects: AnyObject[] = [
    node('n1', { zone: 'z1' }),
    node('n2', { zone: 'z1' }),
    storageClass('local'),
    claim('data', { size: '5Gi' }),
    claim('other', { size: '5Gi' }),
    pv('pv-claimed', (p) => {
      p.spec.claimRef = { namespace: 'default', name: 'someone-else', uid: 'u1' };
      p.status = { phase: 'Bound' };
    }),
    pv('pv-held', () => {}),
    pv('pv-small', (p) => {
      p.spec.capacity = { storage: '1Gi' };
    }),
    pv('pv-block', (p) => {
      p.spec.volumeMode = 'Block';
    }),
    pv('pv-gold', (p) => {
      p.spec.volumeAttributesClassName = 'gold';
    }),
    pv('pv-deleting', (p) => {
      p.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    }),
    pv('pv-released', (p) => {
      p.status = { phase: 'Released' };
    }),
    localPV('pv-elsewhere', 'n2'),
    {
      ...localPV('pv-claimed-elsewhere', 'n2'),
      spec: { ...localPV('x', 'n2').spec, claimRef: { namespace: 'default', name: 'someone-else' } },
      status: { phase: 'Bound' },
    },
    pv('pv-ssd-only', (p) => {
      // In n1's hostname bucket, but also requires a label n1 lacks.
      p.spec.nodeAffinity!.required!.nodeSelectorTerms[0].matchExpressions!.push({
        key: 'disk',
        operator: 'In',
        values: ['ssd'],
      });
    }),
    pv('pv-rox', (p) => {
      p.spec.accessModes = ['ReadOnlyMany'];
    }),
    pv('pv-big', (p) => {
      p.spec.capacity = { storage: '20Gi' };
    }),
    pv('pv-fit', (p) => {
      p.spec.capacity = { storage: '10Gi' };
    }),
    pod('app', { claims: ['data'] }),
  ];

  it('lists every PV passed over with its rule, and the PV the filter would choose', () => {
    const { deps } = cluster(objects);
    // Another pod's bind in flight holds pv-held back for claim "other".
    const binding = deps.framework.plugins.find((p) => p.name === VOLUME_BINDING) as VolumeBindingPlugin;
    const other = deps.store.get('PersistentVolumeClaim', 'default/other') as PersistentVolumeClaim;
    binding.binder.pvCache.assume(bindVolumeToClaim(binding.binder.pvCache.get('pv-held')!, other).pv);

    const answer = explain(deps, { namespace: 'default', name: 'app', nodes: ['n1'], maxVolumes: 50 });
    const [n1] = answer.nodes;
    assert.equal(n1.verdict, 'Fits');
    const [c] = claims(n1);
    assert.equal(c.claim, 'default/data');
    assert.equal(c.chosenVolume, 'pv-fit');
    const refused = Object.fromEntries((c.refusedVolumes ?? []).map((r) => [r.name, r.refusal]));
    assert.deepEqual(refused, {
      'pv-claimed': 'ClaimedByAnotherClaim',
      'pv-held': 'ClaimedByAnotherClaim',
      'pv-small': 'TooSmall',
      'pv-block': 'VolumeModeMismatch',
      'pv-gold': 'VolumeAttributesClassMismatch',
      'pv-deleting': 'BeingDeleted',
      'pv-released': 'NotAvailable',
      'pv-ssd-only': 'NodeAffinityMismatch',
      'pv-rox': 'AccessModesMismatch',
    });
    // PVs whose affinity admits other nodes only are counted, whatever else refuses them, never scanned one by one.
    assert.equal(c.volumesOnOtherNodes, 2);
    assert.equal(c.volumesOnOtherNodesMessage, '2 PV(s) of class "local" have node affinity for other nodes');
    const messages = Object.fromEntries((c.refusedVolumes ?? []).map((r) => [r.name, r.message]));
    assert.equal(messages['pv-claimed'], 'claimed by default/someone-else');
    assert.equal(messages['pv-held'], 'held back for claim default/other by a bind in flight');
    assert.equal(messages['pv-small'], 'capacity 1Gi is less than the 5Gi requested');
  });

  it('caps the PVs listed per claim and counts the rest', () => {
    const { deps } = cluster(objects);
    const [c] = claims(explain(deps, { namespace: 'default', name: 'app', nodes: ['n1'], maxVolumes: 3 }).nodes[0]);
    assert.equal(c.refusedVolumes?.length, 3);
    assert.equal(c.refusedVolumesOmitted, 5);
  });

  it("a claim selector the PV's labels do not match", () => {
    const selective = claim('picky');
    selective.spec.selector = { matchLabels: { tier: 'gold' } };
    const { deps } = cluster([
      node('n1'),
      storageClass('local'),
      selective,
      localPV('plain', 'n1'),
      pod('p', { claims: ['picky'] }),
    ]);
    const [n1] = explain(deps, { namespace: 'default', name: 'p' }).nodes;
    assert.equal(n1.verdict, 'UnschedulableAndUnresolvable');
    assert.equal(n1.plugin, 'VolumeBinding');
    assert.deepEqual(n1.reasons, ["node(s) didn't find available persistent volumes to bind"]);
    assert.deepEqual(
      claims(n1)[0].refusedVolumes?.map((r) => r.refusal),
      ['SelectorMismatch'],
    );
  });

  it('a PV pre-bound to the claim decides alone: its node affinity fails on another node', () => {
    const mine = claim('mine');
    const prebound = localPV('pv-mine', 'n1');
    prebound.spec.claimRef = { namespace: 'default', name: 'mine' };
    const { deps } = cluster([
      node('n1'),
      node('n2'),
      storageClass('local'),
      mine,
      prebound,
      pod('p', { claims: ['mine'] }),
    ]);
    const byName = Object.fromEntries(explain(deps, { namespace: 'default', name: 'p' }).nodes.map((n) => [n.name, n]));
    assert.equal(claims(byName.n1)[0].chosenVolume, 'pv-mine');
    assert.deepEqual(
      claims(byName.n2)[0].refusedVolumes?.map((r) => r.refusal),
      ['PreBoundNodeAffinityMismatch'],
    );
  });

  it('a PV chosen for another claim of the same pod is not offered twice', () => {
    const { deps } = cluster([
      node('n1'),
      storageClass('local'),
      claim('a'),
      claim('b'),
      localPV('only', 'n1'),
      pod('p', { claims: ['a', 'b'] }),
    ]);
    const [n1] = explain(deps, { namespace: 'default', name: 'p' }).nodes;
    const [a, b] = claims(n1);
    assert.equal(a.chosenVolume, 'only');
    assert.deepEqual(
      b.refusedVolumes?.map((r) => r.refusal),
      ['ChosenForAnotherClaim'],
    );
  });
});

describe('explain: nominated pods', () => {
  it('a PV an equal-priority pod nominated to the node would take is held back, and said so', () => {
    const waiting = pod('waiting', { priority: 10, claims: ['theirs'] });
    waiting.status = { phase: 'Pending', nominatedNodeName: 'n1' };
    const { deps } = cluster([
      node('n1'),
      storageClass('local'),
      claim('theirs'),
      claim('mine'),
      localPV('only', 'n1'),
      waiting,
      pod('p', { priority: 10, claims: ['mine'] }),
    ]);
    const [n1] = explain(deps, { namespace: 'default', name: 'p' }).nodes;
    assert.equal(n1.verdict, 'UnschedulableAndUnresolvable');
    const [mine] = claims(n1);
    assert.deepEqual(
      mine.refusedVolumes?.map((r) => [r.name, r.refusal, r.message]),
      [['only', 'HeldForNominatedPod', 'held back for a pod nominated to a node (preemption)']],
    );
  });
});

describe('explain: bound claims', () => {
  it("a bound claim's PV whose node affinity fails; one that does not exist fails VolumeZone's preFilter", () => {
    const boundHere = claim('here', { volumeName: 'pv-n1' });
    const missing = claim('gone', { volumeName: 'pv-gone' });
    const { deps } = cluster([
      node('n1'),
      node('n2'),
      storageClass('local'),
      boundHere,
      missing,
      localPV('pv-n1', 'n1'),
      pod('p', { claims: ['here'] }),
      pod('q', { claims: ['gone'] }),
    ]);
    const p = Object.fromEntries(explain(deps, { namespace: 'default', name: 'p' }).nodes.map((n) => [n.name, n]));
    assert.deepEqual(claims(p.n1)[0].volume, { name: 'pv-n1', found: true, nodeAffinityMatches: true });
    assert.deepEqual(claims(p.n2)[0].volume, { name: 'pv-n1', found: true, nodeAffinityMatches: false });
    assert.deepEqual(p.n2.reasons, ["node(s) didn't match PersistentVolume's node affinity"]);
    // preFilter rejected the pod: its message alone, as upstream's FitError, and no per-node detail. DynamicResources'
    // PostFilter then fails to read the state its preFilter, never reached, would have written: "not found" ends it.
    const q = explain(deps, { namespace: 'default', name: 'q' });
    assert.equal(q.summary, '0/2 nodes are available: persistentvolume "pv-gone" not found. not found');
    assert.deepEqual(
      q.nodes.map((n) => [n.plugin, n.verdict, n.detail]),
      [
        ['VolumeZone', 'UnschedulableAndUnresolvable', {}],
        ['VolumeZone', 'UnschedulableAndUnresolvable', {}],
      ],
    );
  });
});

describe('explain: provisioning', () => {
  it('no provisioner, allowedTopologies, capacity: the class verdict and the CSIStorageCapacity consulted', () => {
    const dyn = storageClass('dyn', { provisioner: 'disk.csi.example.com' });
    dyn.allowedTopologies = [{ matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['z1', 'z2'] }] }];
    const objects: AnyObject[] = [
      node('n1', { zone: 'z1' }),
      node('n2', { zone: 'z2' }),
      node('n3', { zone: 'z3' }),
      storageClass('local'),
      dyn,
      makeCSIDriver('disk.csi.example.com', { storageCapacity: true }),
      ...['z1', 'z2'].map((z) =>
        makeCSIStorageCapacity(`cap-${z}`, {
          namespace: 'kube-system',
          className: 'dyn',
          nodeTopology: { matchLabels: { 'topology.kubernetes.io/zone': z } },
          capacity: z === 'z1' ? '100Gi' : '1Gi',
        }),
      ),
      claim('fast', { className: 'dyn', size: '10Gi' }),
      claim('static', { className: 'local' }),
      pod('p', { claims: ['fast'] }),
      pod('s', { claims: ['static'] }),
    ];
    const { deps } = cluster(objects);
    const answer = explain(deps, { namespace: 'default', name: 'p' });
    const by = Object.fromEntries(answer.nodes.map((n) => [n.name, claims(n)[0].provisioning]));
    assert.equal(by.n1?.verdict, 'Provisionable');
    assert.equal(by.n1?.allowedTopologies, true);
    assert.deepEqual(by.n1?.capacity, {
      namespace: 'kube-system',
      name: 'cap-z1',
      capacity: '100Gi',
      maximumVolumeSize: null,
    });
    assert.equal(by.n2?.verdict, 'InsufficientCapacity');
    assert.deepEqual(
      by.n2?.capacitiesReachingNode?.map((c) => [c.name, c.capacity]),
      [['cap-z2', '1Gi']],
    );
    assert.equal(by.n3?.verdict, 'AllowedTopologiesMismatch');
    assert.equal(by.n3?.allowedTopologies, false);
    assert.equal(
      explain(deps, { namespace: 'default', name: 'p', nodes: ['n2', 'n3'] }).summary,
      "0/2 nodes are available: 1 node(s) did not have enough free storage, 1 node(s) didn't find available persistent volumes to bind. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
    );
    // A class without a provisioner cannot provision the claim no static PV satisfied.
    const [s1] = explain(deps, { namespace: 'default', name: 's', nodes: ['n1'] }).nodes;
    assert.equal(claims(s1)[0].provisioning?.verdict, 'NoProvisioner');
    assert.equal(claims(s1)[0].provisioning?.storageClass, 'local');
  });
});

describe('explain: neighbouring volume plugins', () => {
  it('ReadWriteOncePod: the pod holding the claim', () => {
    const rwop = claim('exclusive', { volumeName: 'pv-x' });
    rwop.spec.accessModes = ['ReadWriteOncePod'];
    const pvx = localPV('pv-x', 'n1');
    pvx.spec.accessModes = ['ReadWriteOncePod'];
    const { deps } = cluster([
      node('n1'),
      storageClass('local'),
      rwop,
      pvx,
      pod('holder', { claims: ['exclusive'], nodeName: 'n1' }),
      pod('p', { claims: ['exclusive'] }),
    ]);
    const [n1] = explain(deps, { namespace: 'default', name: 'p' }).nodes;
    assert.equal(n1.plugin, 'VolumeRestrictions');
    assert.equal(n1.verdict, 'Unschedulable');
    assert.deepEqual(n1.detail.VolumeRestrictions, {
      readWriteOncePod: [{ claim: 'default/exclusive', heldBy: ['default/holder'] }],
    });
  });

  it('attach limits: the count, the limit and the pods holding the slots', () => {
    const driver = 'disk.csi.example.com';
    const csiClass = storageClass('csi', { provisioner: driver });
    const csiPV = (name: string): PersistentVolume =>
      makePV(name, {
        className: 'csi',
        size: '5Gi',
        phase: 'Bound',
        spec: { accessModes: ['ReadWriteOnce'], csi: { driver, volumeHandle: name } },
      });
    const { deps } = cluster([
      node('n1'),
      makeCSINode('n1', { drivers: [{ name: driver, nodeID: 'n1', allocatable: { count: 1 } }] }),
      csiClass,
      csiPV('vol-a'),
      csiPV('vol-b'),
      claim('a', { className: 'csi', volumeName: 'vol-a' }),
      claim('b', { className: 'csi', volumeName: 'vol-b' }),
      pod('holder', { claims: ['a'], nodeName: 'n1' }),
      pod('p', { claims: ['b'] }),
    ]);
    const [n1] = explain(deps, { namespace: 'default', name: 'p' }).nodes;
    assert.equal(n1.plugin, 'NodeVolumeLimits');
    assert.deepEqual(n1.reasons, ['node(s) exceed max volume count']);
    assert.deepEqual(n1.detail.NodeVolumeLimits, {
      attachLimits: [{ driver, limit: 1, attached: 1, adding: 1, heldBy: ['default/holder'] }],
    });
  });
});

describe('explain on the example cluster', () => {
  const objects = exampleObjects();

  it("db-0: zone eu-west-1b's capacity is too small, node-b2 lacks the CPU too, and the summary is kube-scheduler's message", () => {
    const { deps } = cluster(objects);
    const answer = explain(deps, { namespace: 'default', name: 'db-0', nodes: ['node-b1', 'node-b2', 'node-b3'] });
    assert.equal(
      answer.summary,
      '0/3 nodes are available: 1 Insufficient cpu, 2 node(s) did not have enough free storage. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.',
    );
    const b2 = answer.nodes.find((n) => n.name === 'node-b2')!;
    assert.deepEqual(
      b2.failures.map((f) => [f.plugin, f.reasons]),
      [
        ['NodeResourcesFit', ['Insufficient cpu']],
        ['VolumeBinding', ['node(s) did not have enough free storage']],
      ],
      'every rejecting plugin, the deciding one first',
    );
    for (const n of answer.nodes) {
      const p = claims(n)[0].provisioning;
      assert.equal(p?.verdict, 'InsufficientCapacity');
      assert.deepEqual(
        p?.capacitiesReachingNode?.map((c) => c.name),
        ['csisc-fast-ssd-eu-west-1b'],
      );
    }
    // The verbs run the volume plugins only: so does explain with the rest of the profile disabled.
    const all = explain(deps, { namespace: 'default', name: 'db-0', disabledPlugins: [...DEFAULT_PROFILE_PLUGINS] });
    assert.equal(all.summary, '6/9 nodes are available');
    assert.equal(explain(deps, { namespace: 'default', name: 'db-0' }).summary, '3/9 nodes are available');
    const verdicts = filter(
      { Pod: deps.store.get('Pod', 'default/db-0') as never, Nodes: null, NodeNames: deps.cache.nodeNames() },
      deps,
    );
    assert.deepEqual(
      all.nodes.filter((n) => n.verdict === 'Fits').map((n) => n.name),
      verdicts.NodeNames,
    );
  });

  it('a pod neither sent nor in the cache is a 404-style error naming it', () => {
    const { deps } = cluster(objects);
    assert.throws(
      () => explain(deps, { namespace: 'default', name: 'nope' }),
      /pod default\/nope is not in the extender's cache/,
    );
    assert.throws(() => explain(deps, {}), /one of pod/);
  });

  it('limit lists the first nodes and counts the others; the summary still covers all', () => {
    const { deps } = cluster(objects);
    const answer = explain(deps, { namespace: 'default', name: 'db-0', limit: 2 });
    assert.equal(answer.nodes.length, 2);
    assert.equal(answer.nodesOmitted, 7);
    assert.equal(answer.totalNodes, 9);
  });
});

describe('explain: the capacity arithmetic of joint accounting', () => {
  const GI = 2 ** 30;
  const inFlight = claim('provisioning', { className: 'lvm', size: '30Gi' });
  inFlight.metadata.annotations = { 'volume.kubernetes.io/selected-node': 'n1' };
  const objects: AnyObject[] = [
    node('n1', { zone: 'z1' }),
    storageClass('lvm', { provisioner: 'lvm.csi.example.com' }),
    makeCSIDriver('lvm.csi.example.com', { storageCapacity: true }),
    makeCSIStorageCapacity('lvm-n1', {
      namespace: 'kube-system',
      className: 'lvm',
      nodeTopology: { matchLabels: { 'kubernetes.io/hostname': 'n1' } },
      capacity: '100Gi',
    }),
    inFlight,
    claim('a', { className: 'lvm', size: '40Gi' }),
    claim('b', { className: 'lvm', size: '40Gi' }),
    pod('p', { claims: ['a', 'b'] }),
  ];

  it('capacity published, in flight subtracted (with the claims), the pod’s earlier claims, what is left', () => {
    const { deps } = cluster(objects);
    const [n1] = explain(deps, { namespace: 'default', name: 'p' }).nodes;
    assert.deepEqual(n1.reasons, ['node(s) did not have enough free storage']);
    const [a, b] = claims(n1);
    assert.equal(a.provisioning?.verdict, 'Provisionable');
    assert.deepEqual(a.provisioning?.capacityArithmetic, {
      accounting: 'joint',
      capacity: { namespace: 'kube-system', name: 'lvm-n1', capacity: '100Gi', maximumVolumeSize: null },
      published: 100 * GI,
      maximumVolumeSize: null,
      nominated: 0,
      inFlight: 30 * GI,
      inFlightClaims: [{ claim: 'default/provisioning', selectedNode: 'n1', bytes: 30 * GI, bound: false }],
      podBefore: 0,
      requested: 40 * GI,
      free: 70 * GI,
    });
    assert.equal(b.provisioning?.verdict, 'InsufficientCapacity');
    assert.equal(b.provisioning?.capacityArithmetic?.podBefore, 40 * GI);
    assert.equal(b.provisioning?.capacityArithmetic?.free, 30 * GI);
    assert.equal(b.provisioning?.capacityArithmetic?.requested, 40 * GI);
  });
});

describe("explain names the cluster's kube-scheduler minor", () => {
  const objects = [node('n1'), pod('p')];

  it('the minor of the API server it reads, with no note while it is one explain follows', () => {
    const { deps } = cluster(objects);
    const answer = explain({ ...deps, clusterVersion: () => 'v1.36.3' }, { namespace: 'default', name: 'p' });
    assert.equal(answer.kubeSchedulerVersion, 'v1.36');
    assert.equal(answer.notes, undefined);
  });

  it('an older minor with a note that its reasons may be worded differently', () => {
    const { deps } = cluster(objects);
    const answer = explain({ ...deps, clusterVersion: () => 'v1.34.7' }, { namespace: 'default', name: 'p' });
    assert.equal(answer.kubeSchedulerVersion, 'v1.34');
    assert.deepEqual(answer.notes, [
      "this cluster runs v1.34: the reasons are kube-scheduler v1.35–v1.37's, an older or newer one may word some differently",
    ]);
  });

  it("the message tail of that minor's PostFilter: v1.36 names DynamicResources' no-op, v1.37 only logs it", () => {
    const { deps } = cluster([node('n1', { cpu: '1' }), pod('big', { cpu: '2' })]);
    const summary = (version: string) =>
      explain({ ...deps, clusterVersion: () => version }, { namespace: 'default', name: 'big' }).summary;
    const line = '0/1 nodes are available: 1 Insufficient cpu.';
    const tail = 'preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.';
    assert.equal(summary('v1.36.3'), `${line} no new claims to deallocate, ${tail}`);
    assert.equal(summary('v1.37.2'), `${line} ${tail}`);
  });

  it('the newest minor it follows without a cluster (a cluster-state file)', () => {
    const { deps } = cluster(objects);
    assert.equal(explain(deps, { namespace: 'default', name: 'p' }).kubeSchedulerVersion, 'v1.37');
  });
});

// Fully delegated (setting delegatedVolumeBinding), kube-scheduler runs its profile without the volume plugins and
// counts this extender's filter answer (one message per node) for the nodes that passed its own filters; its
// preemption dry run knows no volume plugin and asks the extender's preempt verb about the candidates it found. The
// lines are those test/e2e/pending-report.test.ts read from kube-schedulers v1.35.4 to v1.37.2 in both registrations.
describe('explain behind a fully delegated kube-scheduler', () => {
  const tainted = node('n0');
  tainted.spec = { taints: [{ key: 'dedicated', value: 'infra', effect: 'NoSchedule' }] };
  /** A local PV on n1, bound to `claimName`. */
  const boundPV = (claimName: string): PersistentVolume => {
    const out = localPV(`pv-${claimName}`, 'n1');
    out.spec.claimRef = { namespace: 'default', name: claimName, uid: `uid-${claimName}` };
    out.status = { phase: 'Bound' };
    return out;
  };
  /** Nodes n1 and n2, and claim `here` bound to a local PV on n1; then `more`. */
  const boundOnN1 = (...more: AnyObject[]): AnyObject[] => [
    node('n1'),
    node('n2'),
    storageClass('local'),
    boundPV('here'),
    claim('here', { volumeName: 'pv-here' }),
    ...more,
  ];
  const summaries = (objects: AnyObject[], name: string) => {
    const { deps } = cluster(objects);
    const summary = (delegatedVolumeBinding: boolean) =>
      explain({ ...deps, delegatedVolumeBinding }, { namespace: 'default', name }).summary;
    return { alone: summary(false), delegated: summary(true) };
  };
  const notHelpful = (n: number) =>
    `preemption: 0/${n} nodes are available: ${n} Preemption is not helpful for scheduling.`;

  it("a volume preFilter's rejection counts once per node that passed kube-scheduler's own filters", () => {
    const { alone, delegated } = summaries(
      [
        tainted,
        node('n1'),
        node('n2'),
        storageClass('immediate', { mode: 'Immediate' }),
        claim('data', { className: 'immediate' }),
        pod('p', { claims: ['data'] }),
      ],
      'p',
    );
    assert.equal(alone, '0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found');
    assert.equal(
      delegated,
      `0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 pod has unbound immediate PersistentVolumeClaims. ${notHelpful(3)}`,
    );
  });

  it("a plugin's reasons on one node are one message, counted as one reason", () => {
    const { alone, delegated } = summaries(
      boundOnN1(claim('large', { size: '50Gi' }), pod('p', { claims: ['here', 'large'] })),
      'p',
    );
    const pvAffinity = "node(s) didn't match PersistentVolume's node affinity";
    const noPV = "node(s) didn't find available persistent volumes to bind";
    assert.equal(alone, `0/2 nodes are available: 1 ${pvAffinity}, 2 ${noPV}. ${notHelpful(2)}`);
    assert.equal(delegated, `0/2 nodes are available: 1 ${noPV}, 1 ${pvAffinity}, ${noPV}. ${notHelpful(2)}`);
  });

  it("kube-scheduler's own filters come first, InterPodAffinity's included, and its dry run without volume plugins", () => {
    const guard = pod('guard', { nodeName: 'n2' });
    guard.metadata.labels = { app: 'guard' };
    const p = pod('p', { claims: ['here'] });
    p.spec.affinity = {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          { labelSelector: { matchLabels: { app: 'guard' } }, topologyKey: 'kubernetes.io/hostname' },
        ],
      },
    };
    p.spec.nodeSelector = { 'kubernetes.io/hostname': 'n2' };
    const { alone, delegated } = summaries(boundOnN1(guard, p), 'p');
    const selector = "1 node(s) didn't match Pod's node affinity/selector";
    assert.equal(
      alone,
      `0/2 nodes are available: 1 node(s) didn't match PersistentVolume's node affinity, ${selector}. ${notHelpful(2)}`,
    );
    // Anti-affinity is Unschedulable: the dry run looks for victims (there are none of lower priority).
    assert.equal(
      delegated,
      `0/2 nodes are available: ${selector}, 1 node(s) didn't match pod anti-affinity rules. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.`,
    );
  });

  it("a candidate the extender's preempt verb drops (its volume cannot follow): no candidate node for preemption", () => {
    const p = pod('p', { claims: ['here'], cpu: '3', priority: 100 });
    p.spec.nodeSelector = { 'kubernetes.io/hostname': 'n2' };
    const { alone, delegated } = summaries(boundOnN1(pod('low', { nodeName: 'n2', cpu: '2' }), p), 'p');
    const line = "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector.";
    assert.equal(
      alone,
      `${line} preemption: 0/2 nodes are available: 1 Preemption is not helpful for scheduling, 1 node(s) didn't match PersistentVolume's node affinity.`,
    );
    assert.equal(delegated, `${line} preemption: no candidate node for preemption`);
  });
});
