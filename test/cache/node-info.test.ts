import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { copyNodeInfo, MutableNodeInfo, type NodeInfo, newNodeInfo } from '../../src/cache/node-info.ts';
import { makeNode, makePod } from '../helpers/objects.ts';

const MiB = 1024 * 1024;

describe('NodeInfo', () => {
  it('takes allocatable and image sizes from the node status', () => {
    const info = newNodeInfo(
      makeNode('n1', {
        allocatable: { cpu: '2', memory: '4Gi', pods: '10', 'example.com/gpu': '1' },
        images: [{ names: ['nginx:1', 'nginx@sha256:abc'], sizeBytes: 500 }],
      }),
    );
    assert.deepEqual(info.allocatable, {
      milliCPU: 2000,
      memory: 4096 * MiB,
      ephemeralStorage: 0,
      pods: 10,
      scalar: { 'example.com/gpu': 1 },
    });
    assert.deepEqual(
      [...info.imageStates],
      [
        ['nginx:1', 500],
        ['nginx@sha256:abc', 500],
      ],
    );
  });

  it('adds and subtracts requested, non-zero requested and the pod count symmetrically', () => {
    const info = newNodeInfo(makeNode('n1'));
    const a = makePod('a', { nodeName: 'n1', requests: { cpu: '500m', memory: '1Gi' } });
    const b = makePod('b', { nodeName: 'n1' });
    info.addPod(a);
    info.addPod(b);
    assert.equal(info.requested.milliCPU, 500);
    assert.equal(info.requested.pods, 2);
    assert.equal(info.nonZeroRequested.milliCPU, 600);
    assert.equal(info.nonZeroRequested.memory, 1024 * MiB + 200 * MiB);
    info.removePod('uid-a');
    info.removePod('uid-b');
    assert.deepEqual(info.requested, { milliCPU: 0, memory: 0, ephemeralStorage: 0, pods: 0, scalar: {} });
    assert.deepEqual(info.nonZeroRequested, { milliCPU: 0, memory: 0, ephemeralStorage: 0, pods: 0, scalar: {} });
  });

  it('counts host ports with upstream defaults TCP and 0.0.0.0, from containers and sidecars only', () => {
    const info = newNodeInfo(makeNode('n1'));
    info.addPod(
      makePod('a', {
        containers: [{ name: 'c', ports: [{ containerPort: 80, hostPort: 8080 }, { containerPort: 81 }] }],
        initContainers: [
          {
            name: 'sidecar',
            restartPolicy: 'Always',
            ports: [{ containerPort: 53, hostPort: 53, protocol: 'UDP', hostIP: '10.0.0.1' }],
          },
          { name: 'init', ports: [{ containerPort: 9, hostPort: 9999 }] },
        ],
      }),
    );
    info.addPod(makePod('b', { containers: [{ name: 'c', ports: [{ containerPort: 80, hostPort: 8080 }] }] }));
    assert.deepEqual(Object.fromEntries(info.usedPorts), { 'TCP/0.0.0.0/8080': 2, 'UDP/10.0.0.1/53': 1 });
    info.removePod('uid-b');
    assert.deepEqual(Object.fromEntries(info.usedPorts), { 'TCP/0.0.0.0/8080': 1, 'UDP/10.0.0.1/53': 1 });
  });

  it('updatePVCRefCounts: counts persistentVolumeClaim references per namespace/name, not generic ephemeral volumes', () => {
    const info = newNodeInfo(makeNode('n1'));
    const claim = { name: 'data', persistentVolumeClaim: { claimName: 'shared' } };
    const scratch = { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: {} } } };
    info.addPod(makePod('a', { namespace: 'ns1', volumes: [claim, scratch] }));
    info.addPod(makePod('b', { namespace: 'ns1', volumes: [claim] }));
    info.addPod(makePod('c', { namespace: 'ns2', volumes: [claim] }));
    assert.deepEqual(Object.fromEntries(info.pvcRefCounts), { 'ns1/shared': 2, 'ns2/shared': 1 });
    info.removePod('uid-a');
    assert.deepEqual(Object.fromEntries(info.pvcRefCounts), { 'ns1/shared': 1, 'ns2/shared': 1 });
  });

  it('tracks inline CSI volumes per driver until the last pod using a handle leaves', () => {
    const info = newNodeInfo(makeNode('n1'));
    const vol = { name: 'v', csi: { driver: 'd.example.com', volumeHandle: 'h1' } };
    info.addPod(makePod('a', { volumes: [vol] }));
    info.addPod(makePod('b', { volumes: [vol, { name: 'x', csi: { driver: 'd.example.com' } }] }));
    assert.deepEqual([...info.csiVolumes.get('d.example.com')!], ['h1', 'default/b/x']);
    info.removePod('uid-b');
    assert.deepEqual([...info.csiVolumes.get('d.example.com')!], ['h1']);
    info.removePod('uid-a');
    assert.equal(info.csiVolumes.has('d.example.com'), false);
  });

  it('bumps the generation on every change, from one counter shared by all NodeInfos', () => {
    const a = new MutableNodeInfo('a');
    const b = new MutableNodeInfo('b');
    const seen = [a.generation, b.generation];
    a.setNode(makeNode('a'));
    seen.push(a.generation);
    b.addPod(makePod('p'));
    seen.push(b.generation);
    b.removePod('uid-p');
    seen.push(b.generation);
    a.removeNode();
    seen.push(a.generation);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1], `generation ${i} grew`);
  });

  it('replaces, not double-counts, a pod added again under the same UID', () => {
    const info = newNodeInfo(makeNode('n1'));
    info.addPod(makePod('a', { requests: { cpu: '1' } }));
    info.addPod(makePod('a', { requests: { cpu: '2' } }));
    assert.equal(info.requested.milliCPU, 2000);
    assert.equal(info.pods.size, 1);
  });

  it('returns undefined when removing a pod the node does not hold', () => {
    assert.equal(newNodeInfo(makeNode('n1')).removePod('nope'), undefined);
  });

  it('clones into an independent copy that keeps the generation', () => {
    const info = newNodeInfo(makeNode('n1'), [
      makePod('a', { requests: { cpu: '1' }, volumes: [{ name: 'v', csi: { driver: 'd', volumeHandle: 'h' } }] }),
    ]);
    const copy = info.clone();
    assert.equal(copy.generation, info.generation);
    info.addPod(
      makePod('b', { requests: { cpu: '1' }, volumes: [{ name: 'v', csi: { driver: 'd', volumeHandle: 'h2' } }] }),
    );
    info.removePod('uid-a');
    assert.equal(copy.requested.milliCPU, 1000);
    assert.deepEqual([...copy.pods.keys()], ['uid-a']);
    assert.deepEqual([...copy.csiVolumes.get('d')!], ['h']);
    assert.deepEqual([...info.csiVolumes.get('d')!], ['h2']);
  });

  it('keeps pods but drops the node object, allocatable and images when the node is removed (ghost)', () => {
    const info = newNodeInfo(
      makeNode('n1', {
        allocatable: { cpu: '4', memory: '8Gi', pods: '110' },
        images: [{ names: ['x'], sizeBytes: 1 }],
      }),
      [makePod('a')],
    );
    info.removeNode();
    assert.equal(info.node, undefined);
    assert.equal(info.pods.size, 1);
    assert.equal(info.allocatable.milliCPU, 0);
    assert.equal(info.imageStates.size, 0);
  });

  it('copies any NodeInfo into a private mutable one for what-if checks such as removing victims', () => {
    const original = newNodeInfo(makeNode('n1'), [makePod('victim', { requests: { cpu: '1' } })]);
    const copy = copyNodeInfo(original);
    copy.removePod('uid-victim');
    assert.equal(copy.requested.milliCPU, 0);
    assert.equal(original.requested.milliCPU, 1000);
    assert.equal(copyNodeInfo(plainView(original)).requested.milliCPU, 1000);
  });
});

/** A NodeInfo that is not a MutableNodeInfo (e.g. a test double in another room). */
function plainView(info: NodeInfo): NodeInfo {
  return {
    name: info.name,
    node: info.node,
    pods: info.pods,
    allocatable: info.allocatable,
    requested: info.requested,
    nonZeroRequested: info.nonZeroRequested,
    usedPorts: info.usedPorts,
    imageStates: info.imageStates,
    pvcRefCounts: info.pvcRefCounts,
    csiVolumes: info.csiVolumes,
    generation: info.generation,
  };
}
