// Bodies for fuzzing the verbs: arbitrary JSON, and valid requests with one value replaced, removed or nulled
// somewhere inside. Used by test/http/fuzz.test.ts (a few thousand per verb) and bench/fuzz-soak.ts (many more).
import fc from 'fast-check';
import type { AnyObject } from '../../src/cluster/types.ts';
import type { Extender } from '../../src/wiring.ts';
import { claim, localPV, node, pod, storageClass } from './objects.ts';

export const VERBS = ['filter', 'prioritize', 'preempt', 'bind'] as const;
export type Verb = (typeof VERBS)[number];

/**
 * The cluster the bodies speak of: two zones, two local PVs on node-a and one on node-b, a pending pod with a claim and
 * an ephemeral claim (so only node-a fits it), a running victim, and a plain pod to bind.
 */
export function fuzzCluster(): AnyObject[] {
  const scratch = claim('pending-scratch');
  scratch.metadata.ownerReferences = [
    { apiVersion: 'v1', kind: 'Pod', name: 'pending', uid: 'uid-pending', controller: true },
  ];
  return [
    node('node-a', { zone: 'a' }),
    node('node-b', { zone: 'b' }),
    storageClass('local'),
    localPV('pv-a1', 'node-a'),
    localPV('pv-a2', 'node-a'),
    localPV('pv-b', 'node-b'),
    claim('data'),
    scratch,
    pod('pending', { claims: ['data'], uid: 'uid-pending' }),
    pod('victim', { nodeName: 'node-a', uid: 'uid-victim', priority: -1 }),
    pod('plain', { uid: 'uid-plain' }),
  ];
}

/** A pod as kube-scheduler sends it, touching every field scheduling reads. */
const WIRE_POD = {
  metadata: {
    name: 'pending',
    namespace: 'default',
    uid: 'uid-pending',
    labels: { app: 'db' },
    annotations: { a: 'b' },
    creationTimestamp: '2026-01-01T00:00:00Z',
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db', uid: 'uid-sts', controller: true }],
  },
  spec: {
    priority: 10,
    schedulerName: 'default-scheduler',
    containers: [
      {
        name: 'c',
        image: 'postgres:17',
        resources: { requests: { cpu: '100m', memory: '1Gi' }, limits: { cpu: '1' } },
        ports: [{ containerPort: 5432, hostPort: 5432, protocol: 'TCP' }],
      },
    ],
    initContainers: [{ name: 'init', image: 'busybox', restartPolicy: 'Always' }],
    overhead: { cpu: '10m' },
    volumes: [
      { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
      { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'] } } } },
      { name: 'inline', csi: { driver: 'inline.csi.example.com' } },
      { name: 'pd', gcePersistentDisk: { pdName: 'disk-1', readOnly: true } },
      { name: 'ebs', awsElasticBlockStore: { volumeID: 'vol-1' } },
      { name: 'iscsi', iscsi: { iqn: 'iqn.2026-01.example:disk', readOnly: true } },
      { name: 'rbd', rbd: { monitors: ['10.0.0.1:6789'], pool: 'kube', image: 'img', readOnly: true } },
    ],
    nodeSelector: { 'kubernetes.io/os': 'linux' },
  },
  status: {
    phase: 'Pending',
    startTime: '2026-01-01T00:00:01Z',
    conditions: [{ type: 'PodScheduled', status: 'False' }],
  },
};

const WIRE_NODE = {
  metadata: { name: 'node-new', labels: { 'topology.kubernetes.io/zone': 'a' } },
  spec: { taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }] },
  status: {
    allocatable: { cpu: '4', memory: '16Gi', pods: '110' },
    capacity: { cpu: '4', memory: '16Gi', pods: '110' },
    images: [{ names: ['postgres:17'], sizeBytes: 1000 }],
  },
};

/** Valid bodies per verb, in each mode kube-scheduler may use. */
export const VALID: Record<Verb, unknown[]> = {
  filter: [
    { Pod: WIRE_POD, Nodes: null, NodeNames: ['node-a', 'node-b'] },
    { Pod: WIRE_POD, Nodes: { items: [WIRE_NODE, { ...WIRE_NODE, metadata: { name: 'node-a' } }] }, NodeNames: null },
  ],
  prioritize: [
    { Pod: WIRE_POD, Nodes: null, NodeNames: ['node-a', 'node-b'] },
    { Pod: WIRE_POD, Nodes: { items: [WIRE_NODE] }, NodeNames: null },
  ],
  preempt: [
    {
      Pod: WIRE_POD,
      NodeNameToVictims: null,
      NodeNameToMetaVictims: { 'node-a': { Pods: [{ UID: 'uid-victim' }], NumPDBViolations: 0 } },
    },
    {
      Pod: WIRE_POD,
      NodeNameToVictims: {
        'node-a': { Pods: [{ metadata: { name: 'victim', uid: 'uid-victim' } }], NumPDBViolations: 0 },
      },
      NodeNameToMetaVictims: null,
    },
  ],
  // A pod without claims: a bind that gets through is carried out at once, never waiting for a volume.
  bind: [{ PodName: 'plain', PodNamespace: 'default', PodUID: 'uid-plain', Node: 'node-b' }],
};

/** Every [container, key] inside a JSON value, the value itself being reachable through a wrapper. */
function slots(value: unknown, out: [Record<string, unknown> | unknown[], string | number][] = []) {
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      out.push([value, i]);
      slots(v, out);
    });
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      out.push([value as Record<string, unknown>, k]);
      slots(v, out);
    }
  }
  return out;
}

/** A valid body with one value somewhere inside replaced by arbitrary JSON, removed, or set to null. */
function mutation(verb: Verb) {
  return fc
    .record({
      base: fc.constantFrom(...VALID[verb]),
      at: fc.nat(),
      change: fc.oneof(
        fc.record({ kind: fc.constant('replace' as const), value: fc.jsonValue({ maxDepth: 3 }) }),
        fc.record({ kind: fc.constant('delete' as const) }),
        fc.record({ kind: fc.constant('null' as const) }),
      ),
    })
    .map(({ base, at, change }) => {
      const body = structuredClone(base);
      const all = slots(body);
      const [container, key] = all[at % all.length];
      if (change.kind === 'delete' && !Array.isArray(container)) delete container[key as string];
      else (container as Record<string | number, unknown>)[key] = change.kind === 'replace' ? change.value : null;
      return JSON.stringify(body);
    });
}

/** Request bodies for `verb`: half arbitrary JSON text, half mutated valid requests. */
export function fuzzBodies(verb: Verb): fc.Arbitrary<string> {
  return fc.oneof(fc.json({ maxDepth: 4 }), mutation(verb));
}

/** POSTs a body to a verb in-process (no socket): the fuzzers send thousands. */
export function postVerb(app: Extender['app'], verb: Verb, body: string) {
  return app.inject({
    method: 'POST',
    url: `/scheduler/${verb}`,
    headers: { 'content-type': 'application/json' },
    payload: body,
  });
}
