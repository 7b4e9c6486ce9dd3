import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_MEMORY_REQUEST,
  DEFAULT_MILLI_CPU_REQUEST,
  isScalarResourceName,
  podResource,
  resourceFromList,
  sharedPodResource,
} from '../../src/cache/resources.ts';
import { makePod } from '../helpers/objects.ts';

const MiB = 1024 * 1024;

describe('pod requests', () => {
  it('sum the requests of regular containers, cpu in milli-units and memory in bytes', () => {
    const pod = makePod('p', {
      containers: [
        { name: 'a', resources: { requests: { cpu: '250m', memory: '64Mi' } } },
        { name: 'b', resources: { requests: { cpu: '1', memory: '1Gi', 'ephemeral-storage': '1G' } } },
      ],
    });
    const r = podResource(pod).requests;
    assert.equal(r.milliCPU, 1250);
    assert.equal(r.memory, 64 * MiB + 1024 * MiB);
    assert.equal(r.ephemeralStorage, 1e9);
    assert.equal(r.pods, 1);
  });

  it('take the larger of the containers sum and the largest classic init container', () => {
    const pod = makePod('p', {
      containers: [{ name: 'a', resources: { requests: { cpu: '100m', memory: '1Gi' } } }],
      initContainers: [
        { name: 'i1', resources: { requests: { cpu: '2', memory: '10Mi' } } },
        { name: 'i2', resources: { requests: { cpu: '500m' } } },
      ],
    });
    const r = podResource(pod).requests;
    assert.equal(r.milliCPU, 2000);
    assert.equal(r.memory, 1024 * MiB);
  });

  it('add sidecars (restartPolicy Always) to the steady state and to every later init step', () => {
    const pod = makePod('p', {
      containers: [{ name: 'app', resources: { requests: { cpu: '1' } } }],
      initContainers: [
        { name: 'before', resources: { requests: { cpu: '1500m' } } },
        { name: 'sidecar', restartPolicy: 'Always', resources: { requests: { cpu: '500m' } } },
        { name: 'after', resources: { requests: { cpu: '1200m' } } },
      ],
    });
    // steady: 1000 + 500; init peaks: 1500 (before sidecar), 500 (sidecar starts), 1200 + 500 (after)
    assert.equal(podResource(pod).requests.milliCPU, 1700);
  });

  it('count a sidecar started before a classic init container in that init step', () => {
    const pod = makePod('p', {
      containers: [{ name: 'app', resources: { requests: { memory: '100Mi' } } }],
      initContainers: [
        { name: 'sidecar', restartPolicy: 'Always', resources: { requests: { memory: '50Mi' } } },
        { name: 'migrate', resources: { requests: { memory: '300Mi' } } },
      ],
    });
    assert.equal(podResource(pod).requests.memory, 350 * MiB);
  });

  it('add pod overhead on top of the container requests', () => {
    const pod = makePod('p', { requests: { cpu: '100m', memory: '10Mi' }, overhead: { cpu: '10m', memory: '1Mi' } });
    const r = podResource(pod);
    assert.equal(r.requests.milliCPU, 110);
    assert.equal(r.requests.memory, 11 * MiB);
    assert.equal(r.nonZeroMilliCPU, 110);
    assert.equal(r.nonZeroMemory, 11 * MiB);
  });

  it('keep extended resources and hugepages as scalars and ignore unknown unprefixed names', () => {
    const pod = makePod('p', {
      requests: { 'nvidia.com/gpu': '2', 'hugepages-2Mi': '4Mi', 'attachable-volumes-csi-x': '1', storage: '1Gi' },
    });
    assert.deepEqual(podResource(pod).requests.scalar, {
      'nvidia.com/gpu': 2,
      'hugepages-2Mi': 4 * MiB,
      'attachable-volumes-csi-x': 1,
    });
  });

  it('count a pod without requests as zero but as 100m CPU and 200MiB memory for the non-zero view', () => {
    const r = podResource(makePod('p'));
    assert.equal(r.requests.milliCPU, 0);
    assert.equal(r.requests.memory, 0);
    assert.equal(r.nonZeroMilliCPU, DEFAULT_MILLI_CPU_REQUEST);
    assert.equal(r.nonZeroMemory, DEFAULT_MEMORY_REQUEST);
    assert.equal(DEFAULT_MEMORY_REQUEST, 200 * MiB);
  });

  it('apply non-zero defaults per container, only where the request is absent (an explicit zero stays zero)', () => {
    const pod = makePod('p', {
      containers: [
        { name: 'none' },
        { name: 'zero', resources: { requests: { cpu: '0', memory: '0' } } },
        { name: 'cpu-only', resources: { requests: { cpu: '300m' } } },
      ],
    });
    const r = podResource(pod);
    assert.equal(r.nonZeroMilliCPU, 100 + 0 + 300);
    assert.equal(r.nonZeroMemory, 200 * MiB + 0 + 200 * MiB);
  });

  it('apply non-zero defaults to init containers before taking the maximum', () => {
    const pod = makePod('p', {
      containers: [{ name: 'a', resources: { requests: { cpu: '50m', memory: '1Mi' } } }],
      initContainers: [{ name: 'i' }],
    });
    const r = podResource(pod);
    assert.equal(r.nonZeroMilliCPU, 100);
    assert.equal(r.nonZeroMemory, 200 * MiB);
    assert.equal(r.requests.milliCPU, 50);
  });

  it('treat a quantity the API would reject as zero instead of failing', () => {
    assert.equal(podResource(makePod('p', { requests: { cpu: 'lots' } })).requests.milliCPU, 0);
  });
});

describe('pod requests shared across a workload', () => {
  it('are one frozen answer for the pods of one container list, equal to what podResource computes', () => {
    const containers = [
      { name: 'a', resources: { requests: { cpu: '250m', memory: '64Mi', 'example.com/gpu': '1' } } },
    ];
    const a = makePod('a', { containers });
    const b = makePod('b', { containers });
    const shared = sharedPodResource(a);
    assert.equal(sharedPodResource(b), shared);
    assert.deepEqual(shared, podResource(a));
    assert.throws(() => {
      (shared.requests as { milliCPU: number }).milliCPU = 0;
    }, TypeError);
    assert.throws(() => {
      shared.requests.scalar['example.com/gpu'] = 0;
    }, TypeError);
  });

  it("are a pod's own when init containers or overhead also decide them", () => {
    const containers = [{ name: 'a', resources: { requests: { cpu: '100m' } } }];
    const plain = sharedPodResource(makePod('plain', { containers }));
    const init = makePod('init', {
      containers,
      initContainers: [{ name: 'i', resources: { requests: { cpu: '2' } } }],
    });
    const overhead = makePod('overhead', { containers, overhead: { cpu: '1' } });
    assert.equal(sharedPodResource(init).requests.milliCPU, 2000);
    assert.equal(sharedPodResource(overhead).requests.milliCPU, 1100);
    assert.equal(plain.requests.milliCPU, 100);
  });
});

describe('node allocatable', () => {
  it('converts cpu to milli-units, memory and storage to bytes, pods to a count, extended names to scalars', () => {
    assert.deepEqual(
      resourceFromList({
        cpu: '3500m',
        memory: '2Gi',
        'ephemeral-storage': '10Gi',
        pods: '110',
        'example.com/foo': '3',
      }),
      {
        milliCPU: 3500,
        memory: 2 * 1024 * MiB,
        ephemeralStorage: 10 * 1024 * MiB,
        pods: 110,
        scalar: { 'example.com/foo': 3 },
      },
    );
  });

  it('names scalar resources as upstream does', () => {
    assert.equal(isScalarResourceName('example.com/dongle'), true);
    assert.equal(isScalarResourceName('kubernetes.io/something'), true);
    assert.equal(isScalarResourceName('hugepages-1Gi'), true);
    assert.equal(isScalarResourceName('storage'), false);
    assert.equal(isScalarResourceName('requests.example.com/x'), false);
  });
});
