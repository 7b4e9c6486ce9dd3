// Simulate places replicas as kube-scheduler would, on a private copy: StatefulSet claims from volumeClaimTemplates,
// each placement's PVs bound and claims provisioned there, the first replica that does not fit explained; the
// cluster and the verbs' state never change, and the same state gives the same answer.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AnyObject, KINDS } from '../../src/cluster/types.ts';
import { defaultSettings } from '../../src/config.ts';
import { filter } from '../../src/extender/filter.ts';
import { type StatefulSetTemplate, simulate } from '../../src/ops/simulate.ts';
import type { ClaimExplanation } from '../../src/volumes/explain.ts';
import { cluster, exampleObjects } from './helpers.ts';

const objects = exampleObjects();

function statefulSet(
  name: string,
  replicas: number,
  claim: { name: string; className: string; size: string },
): StatefulSetTemplate {
  return {
    kind: 'StatefulSet',
    metadata: { name, namespace: 'default' },
    spec: {
      replicas,
      template: { spec: { containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: '100m' } } }] } },
      volumeClaimTemplates: [
        {
          metadata: { name: claim.name },
          spec: {
            accessModes: ['ReadWriteOnce'],
            storageClassName: claim.className,
            resources: { requests: { storage: claim.size } },
          },
        },
      ],
    },
  };
}

const WEB = statefulSet('web', 5, { name: 'www', className: 'local-storage', size: '20Gi' });

describe('simulate on the example cluster', () => {
  it('a 5-replica StatefulSet with local-PV templates: 4 fit, one PV each, and the 5th is explained', () => {
    const { deps } = cluster(objects);
    const answer = simulate(deps, defaultSettings(), { statefulSet: WEB });
    assert.equal(answer.requested, 5);
    assert.equal(answer.placed, 4);
    assert.deepEqual(
      answer.placements.map((p) => [p.pod, p.boundVolumes.map((b) => b.claim)]),
      [0, 1, 2, 3].map((i) => [`default/web-${i}`, [`default/www-web-${i}`]]),
    );
    const volumes = answer.placements.flatMap((p) => p.boundVolumes.map((b) => b.volume));
    assert.equal(new Set(volumes).size, 4, 'never one PV twice');
    for (const p of answer.placements) {
      const pv = deps.store.get('PersistentVolume', p.boundVolumes[0].volume)!;
      const hostname = pv.spec.nodeAffinity?.required?.nodeSelectorTerms[0].matchExpressions?.[0].values?.[0];
      assert.equal(hostname, p.node, `${p.pod}: its PV is local to its node`);
    }
    assert.equal(answer.unplaced?.pod, 'default/web-4');
    assert.equal(
      answer.unplaced?.explanation.summary,
      "0/9 nodes are available: 9 node(s) didn't find available persistent volumes to bind. preemption: 0/9 nodes are available: 9 Preemption is not helpful for scheduling.",
    );
    // On the node of web-0, the PV it took is now refused to web-4 as claimed by web-0's claim.
    const first = answer.placements[0];
    const there = answer.unplaced?.explanation.nodes.find((n) => n.name === first.node);
    assert.ok(there);
    const claims = (there.detail.VolumeBinding as { claims: ClaimExplanation[] }).claims;
    const refusal = claims[0].refusedVolumes?.find((r) => r.name === first.boundVolumes[0].volume);
    assert.equal(refusal?.message, 'claimed by default/www-web-0');
  });

  it('provisioning uses up CSIStorageCapacity: replicas stop when no zone has room', () => {
    const { deps } = cluster(objects);
    const answer = simulate(deps, defaultSettings(), {
      statefulSet: statefulSet('db', 40, { name: 'data', className: 'fast-ssd', size: '50Gi' }),
    });
    assert.ok(answer.placed > 0 && answer.placed < 40, `placed ${answer.placed}`);
    for (const p of answer.placements) {
      assert.deepEqual(p.boundVolumes, []);
      assert.match(p.provisionedClaims[0].capacity ?? '', /^kube-system\/csisc-fast-ssd-eu-west-1[ac]$/);
    }
    assert.match(answer.unplaced?.explanation.summary ?? '', /did not have enough free storage/);
  });

  it('nothing in the cluster or the verbs changes, and the same state gives the same answer', () => {
    const { deps } = cluster(objects);
    const snapshot = () => JSON.stringify(KINDS.map((k) => [...deps.store.list(k)]));
    const web0 = deps.store.get('Pod', 'default/web-0')!;
    const args = { Pod: web0 as never, Nodes: null, NodeNames: deps.cache.nodeNames() };
    const before = { objects: snapshot(), filter: filter(args, deps), pods: deps.cache.podCount() };
    const one = simulate(deps, defaultSettings(), { statefulSet: WEB });
    const two = simulate(deps, defaultSettings(), { statefulSet: WEB });
    assert.deepEqual(one, two);
    assert.equal(snapshot(), before.objects);
    assert.deepEqual(filter(args, deps), before.filter);
    assert.equal(deps.cache.podCount(), before.pods);
    assert.deepEqual(deps.cache.assumedPods(), []);
  });

  it('replicas of a cached pod: named <pod>-<i>; with no template at all a 400 names what is missing', () => {
    const { deps } = cluster(objects);
    const answer = simulate(deps, defaultSettings(), { namespace: 'default', name: 'db-0', replicas: 2 });
    assert.deepEqual(
      answer.placements.map((p) => p.pod),
      ['default/db-0-0', 'default/db-0-1'],
    );
    assert.throws(() => simulate(deps, defaultSettings(), {}), /one of statefulSet, pod/);
  });
});

// kube-scheduler spreads a Deployment's or StatefulSet's replicas by its default constraints (ScheduleAnyway, hostname
// and zone, over the pods its Services and controller select): a big node already holding four replicas loses to a
// small busy one until the counts even out. Without them, every replica goes to the node with the most room.
describe('simulate with kube-scheduler default topology spread constraints', () => {
  const ZONE = 'topology.kubernetes.io/zone';
  const labels = { app: 'web', 'pod-template-hash': '7d9f8' };
  const node = (name: string, cpu: string, zone: string): AnyObject =>
    ({
      kind: 'Node',
      metadata: {
        name,
        uid: `uid-${name}`,
        resourceVersion: '1',
        labels: { 'kubernetes.io/hostname': name, [ZONE]: zone },
      },
      spec: {},
      status: { allocatable: { cpu, memory: '16Gi', pods: '110' } },
    }) as AnyObject;
  const owner = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d9f8', uid: 'uid-rs', controller: true }];
  const pod = (name: string, nodeName?: string, o: { cpu?: string; owned?: boolean; app?: string } = {}): AnyObject =>
    ({
      kind: 'Pod',
      metadata: {
        name,
        namespace: 'default',
        uid: `uid-${name}`,
        resourceVersion: '1',
        labels: o.app ? { app: o.app } : labels,
        ...(o.owned === false ? {} : { ownerReferences: owner }),
      },
      spec: {
        containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: o.cpu ?? '100m', memory: '64Mi' } } }],
        ...(nodeName ? { nodeName } : {}),
      },
      status: { phase: nodeName ? 'Running' : 'Pending' },
    }) as AnyObject;
  const replicaSet = {
    kind: 'ReplicaSet',
    metadata: { name: 'web-7d9f8', namespace: 'default', uid: 'uid-rs', resourceVersion: '1' },
    spec: { selector: { matchLabels: labels } },
  } as AnyObject;
  const service = {
    kind: 'Service',
    metadata: { name: 'web', namespace: 'default', uid: 'uid-svc', resourceVersion: '1' },
    spec: { selector: { app: 'web' } },
  } as AnyObject;
  const base = [
    node('big', '32', 'a'),
    node('small', '4', 'b'),
    ...[0, 1, 2, 3].map((i) => pod(`web-7d9f8-${i}`, 'big')),
    pod('hog', 'small', { cpu: '2', owned: false, app: 'hog' }),
    pod('web-7d9f8-new'),
  ];
  const placements = (objects: AnyObject[], req: Parameters<typeof simulate>[2]) => {
    const answer = simulate(cluster(objects).deps, defaultSettings(), req);
    return answer.placements.map((p) => p.node);
  };
  const replicas = { namespace: 'default', name: 'web-7d9f8-new', replicas: 4 };

  it("a ReplicaSet's replicas go to the emptier node first, as kube-scheduler places them", () => {
    assert.deepEqual(placements([...base, replicaSet], replicas), ['small', 'small', 'small', 'big']);
  });

  it('a Service that selects the replicas spreads them the same way', () => {
    assert.deepEqual(placements([...base, service], replicas), ['small', 'small', 'small', 'big']);
  });

  it('without a Service or an existing controller selecting them, the node with the most room takes them all', () => {
    assert.deepEqual(placements(base, replicas), ['big', 'big', 'big', 'big']);
  });

  it("a StatefulSet's replicas spread by its selector, the set existing before its pods", () => {
    const template = { metadata: { labels }, spec: (pod('t') as { spec: Record<string, unknown> }).spec };
    const set = (selector?: object): StatefulSetTemplate => ({
      kind: 'StatefulSet',
      metadata: { name: 'web', namespace: 'default' },
      spec: { replicas: 4, ...(selector ? { selector } : {}), template },
    });
    assert.deepEqual(placements(base, { statefulSet: set({ matchLabels: labels }) }), [
      'small',
      'small',
      'small',
      'big',
    ]);
    assert.deepEqual(placements(base, { statefulSet: set() }), ['big', 'big', 'big', 'big']);
  });
});
