// The store delivers changes as a watch would, and keeps only what scheduling reads.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClusterStore, type StoreEvent } from '../../src/cluster/store.ts';
import { trimObject } from '../../src/cluster/trim.ts';
import type { Node, PersistentVolume, PersistentVolumeClaim, Pod } from '../../src/cluster/types.ts';
import { claim, localPV, node, pod } from '../helpers/objects.ts';

function recorder(store: ClusterStore) {
  const events: string[] = [];
  store.on('Node', (e: StoreEvent<'Node'>) =>
    events.push(`${e.type} ${e.obj.metadata.name}@${e.obj.metadata.resourceVersion}`),
  );
  return events;
}

const withRV = (n: Node, rv: string): Node => ({ ...n, metadata: { ...n.metadata, resourceVersion: rv } });

describe('store events', () => {
  it('emits add, then update with the old object, then delete with the last state', () => {
    const store = new ClusterStore();
    const seen: StoreEvent<'Node'>[] = [];
    store.on('Node', (e) => seen.push(e));
    const a = node('a');
    store.upsert('Node', a);
    store.upsert('Node', withRV(a, '2'));
    store.delete('Node', a);
    assert.deepEqual(
      seen.map((e) => e.type),
      ['add', 'update', 'delete'],
    );
    assert.equal(seen[1].type === 'update' && seen[1].old.metadata.resourceVersion, '1');
    assert.equal(seen[2].obj.metadata.resourceVersion, '2');
    assert.equal(store.get('Node', 'a'), undefined);
  });

  it('treats an unchanged resourceVersion as a resync: no event', () => {
    const store = new ClusterStore();
    const events = recorder(store);
    store.upsert('Node', node('a'));
    store.upsert('Node', node('a'));
    assert.deepEqual(events, ['add a@1']);
  });

  it('replace (a relist) deletes what vanished, adds what is new, updates what changed, and marks the kind synced', () => {
    const store = new ClusterStore();
    const events = recorder(store);
    const [a, b, c] = [node('a'), node('b'), node('c')];
    store.replace('Node', [a, b]);
    events.length = 0;
    assert.ok(store.isSynced('Node'));
    store.replace('Node', [withRV(b, '5'), c]);
    assert.deepEqual(events.sort(), ['add c@1', 'delete a@1', 'update b@5']);
    assert.deepEqual([...store.list('Node')].map((n) => n.metadata.name).sort(), ['b', 'c']);
  });

  it('keys namespaced kinds by namespace/name', () => {
    const store = new ClusterStore();
    store.upsert('Pod', pod('p', { namespace: 'team' }));
    assert.ok(store.get('Pod', 'team/p'));
    assert.equal(store.get('Pod', 'p'), undefined);
  });

  it('keeps delivering to other subscribers when one throws, and reports the error', () => {
    const errors: unknown[] = [];
    const store = new ClusterStore({ onHandlerError: (err) => errors.push(err) });
    store.on('Node', () => {
      throw new Error('subscriber bug');
    });
    const events = recorder(store);
    store.upsert('Node', node('a'));
    assert.deepEqual(events, ['add a@1']);
    assert.equal((errors[0] as Error).message, 'subscriber bug');
  });
});

describe('trimming', () => {
  it('drops managedFields, pod annotations, owner references but the controller’s, and status that scheduling does not read', () => {
    const raw = {
      ...pod('p', { nodeName: 'a' }),
      metadata: {
        ...pod('p').metadata,
        managedFields: [{ manager: 'kubectl' }],
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{...}', 'prometheus.io/scrape': 'true' },
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: 'sts' }],
      },
      status: {
        phase: 'Running',
        startTime: '2026-11-01T10:00:00Z',
        containerStatuses: [{ name: 'c', ready: true }],
        conditions: [{ type: 'Ready', status: 'True' }],
      },
    } as unknown as Pod;
    const trimmed = trimObject('Pod', raw) as Pod & { metadata: { managedFields?: unknown } };
    assert.equal(trimmed.metadata.managedFields, undefined);
    assert.equal(trimmed.metadata.annotations, undefined);
    assert.equal(trimmed.metadata.ownerReferences, undefined);
    assert.deepEqual(trimmed.status, { phase: 'Running', startTime: '2026-11-01T10:00:00Z' });
  });

  it("keeps a pending pod's PodScheduled False with its reason alone, so that a retry's new message is no change", () => {
    const pending = (message: string, time: string) =>
      trimObject('Pod', {
        ...pod('p'),
        status: {
          phase: 'Pending',
          conditions: [
            { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message, lastTransitionTime: time },
          ],
        },
      } as unknown as Pod);
    const first = pending('0/3 nodes are available: 3 Insufficient cpu.', '2026-11-01T10:00:00Z');
    assert.deepEqual(first.status, {
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }],
    });
    const retried = pending('0/4 nodes are available: 4 Insufficient cpu.', '2026-11-01T10:05:00Z');
    assert.deepEqual(retried, { ...first, metadata: retried.metadata });
    const bound = trimObject('Pod', {
      ...pod('q', { nodeName: 'a' }),
      status: { phase: 'Running', conditions: [{ type: 'PodScheduled', status: 'True' }] },
    } as unknown as Pod);
    assert.deepEqual(bound.status, { phase: 'Running' });
  });

  it('keeps the annotations and owner references of claims, dropping only last-applied', () => {
    const pvc = {
      ...claim('data'),
      metadata: {
        ...claim('data').metadata,
        annotations: {
          'kubectl.kubernetes.io/last-applied-configuration': '{...}',
          'volume.kubernetes.io/selected-node': 'a',
        },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'pod-uid', controller: true }],
      },
    } as PersistentVolumeClaim;
    const trimmed = trimObject('PersistentVolumeClaim', pvc);
    assert.deepEqual(trimmed.metadata.annotations, { 'volume.kubernetes.io/selected-node': 'a' });
    assert.equal(trimmed.metadata.ownerReferences?.[0].uid, 'pod-uid');
  });

  it('normalises Date timestamps from lists to the RFC 3339 strings watches carry', () => {
    const raw = {
      ...pod('p'),
      metadata: { ...pod('p').metadata, creationTimestamp: new Date('2026-11-01T10:00:00.000Z') },
      status: { phase: 'Running', startTime: new Date('2026-11-01T10:00:05.000Z') },
    } as unknown as Pod;
    const trimmed = trimObject('Pod', raw);
    assert.equal(trimmed.metadata.creationTimestamp, '2026-11-01T10:00:00Z');
    assert.equal(trimmed.status?.startTime, '2026-11-01T10:00:05Z');
  });

  it('keeps what the plugins read: requests, host ports, claims, inline CSI volumes, priority', () => {
    const raw: Pod = {
      metadata: { name: 'p', namespace: 'd', uid: 'u', resourceVersion: '1' },
      spec: {
        priority: 7,
        containers: [
          {
            name: 'c',
            resources: { requests: { cpu: '1' } },
            ports: [{ containerPort: 80 }, { containerPort: 9100, hostPort: 9100, protocol: 'TCP' }],
          },
        ],
        volumes: [
          { name: 'cfg', configMap: { name: 'x' } },
          { name: 'data', persistentVolumeClaim: { claimName: 'data-p' } },
          { name: 'scratch', csi: { driver: 'inline.csi', volumeHandle: 'h1' } },
        ],
      },
    };
    const trimmed = trimObject('Pod', raw);
    assert.equal(trimmed.spec.priority, 7);
    assert.deepEqual(trimmed.spec.containers[0].ports, [{ containerPort: 9100, hostPort: 9100, protocol: 'TCP' }]);
    assert.deepEqual(
      trimmed.spec.volumes?.map((v) => v.name),
      ['data', 'scratch'],
    );
  });

  it("keeps a pod's controller reference (PodTopologySpread's default selector finds its ReplicaSet by it), one copy per controller", () => {
    const owned = (name: string, rs: string): Pod =>
      JSON.parse(
        JSON.stringify({
          metadata: {
            name,
            namespace: 'd',
            uid: name,
            resourceVersion: '1',
            ownerReferences: [
              { apiVersion: 'v1', kind: 'Node', name: 'n', uid: 'node' },
              {
                apiVersion: 'apps/v1',
                kind: 'ReplicaSet',
                name: rs,
                uid: `uid-${rs}`,
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
          },
          spec: { containers: [] },
        }),
      );
    const [a, b, other] = [owned('web-a', 'web-1'), owned('web-b', 'web-1'), owned('db-a', 'db-1')].map((p) =>
      trimObject('Pod', p),
    );
    assert.deepEqual(a.metadata.ownerReferences, [
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-1', uid: 'uid-web-1', controller: true },
    ]);
    assert.equal(a.metadata.ownerReferences, b.metadata.ownerReferences);
    assert.equal(other.metadata.ownerReferences?.[0].name, 'db-1');
  });

  it('holds one copy of what the replicas of a workload repeat: containers, labels', () => {
    const replica = (name: string, cpu: string): Pod =>
      JSON.parse(
        JSON.stringify({
          metadata: { name, namespace: 'd', uid: name, resourceVersion: '1', labels: { app: 'web' } },
          spec: { containers: [{ name: 'c', image: 'nginx:1.27', resources: { requests: { cpu } } }] },
          status: { startTime: '2026-11-01T10:00:05Z' },
        }),
      );
    const [a, b, other] = [replica('web-a', '1'), replica('web-b', '1'), replica('big', '2')].map((p) =>
      trimObject('Pod', p),
    );
    assert.equal(a.spec.containers, b.spec.containers);
    assert.equal(a.metadata.labels, b.metadata.labels);
    assert.notEqual(other.spec.containers, a.spec.containers);
    assert.deepEqual(other.spec.containers, [
      { name: 'c', image: 'nginx:1.27', resources: { requests: { cpu: '2' } } },
    ]);
    assert.deepEqual(a.status, { startTime: '2026-11-01T10:00:05Z' });
  });

  it("holds one copy of what PVs repeat (a node's affinity, capacity, status), never of their claim references", () => {
    const bound = (name: string, nodeName: string, claimName: string): PersistentVolume => {
      const pv = JSON.parse(JSON.stringify(localPV(name, nodeName))) as PersistentVolume;
      pv.spec.claimRef = { kind: 'PersistentVolumeClaim', namespace: 'd', name: claimName, uid: claimName };
      return pv;
    };
    const [a, b, elsewhere] = [bound('pv-a', 'n1', 'c1'), bound('pv-b', 'n1', 'c2'), bound('pv-c', 'n2', 'c3')].map(
      (pv) => trimObject('PersistentVolume', pv),
    );
    assert.equal(a.spec.nodeAffinity, b.spec.nodeAffinity);
    assert.equal(a.spec.capacity, b.spec.capacity);
    assert.equal(a.status, b.status);
    assert.notEqual(a.spec.nodeAffinity, elsewhere.spec.nodeAffinity);
    assert.deepEqual(elsewhere.spec.nodeAffinity, localPV('pv-c', 'n2').spec.nodeAffinity);
    assert.deepEqual(b.spec.claimRef, { kind: 'PersistentVolumeClaim', namespace: 'd', name: 'c2', uid: 'c2' });
    const again = trimObject('PersistentVolume', bound('pv-d', 'n1', 'c1'));
    assert.notEqual(again.spec.claimRef, a.spec.claimRef, "a claim reference is one volume's own");
  });
});
