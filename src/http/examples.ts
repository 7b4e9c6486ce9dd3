// Named example requests for the OpenAPI document, written against examples/cluster.yaml (what `npm start` serves):
// Swagger UI's "Try it out" sends them as they are and gets a 200. test/http/openapi-routes.test.ts sends each one,
// scripts/browser-check.ts clicks them in Swagger UI.

const DB_0 = {
  metadata: { name: 'db-0', namespace: 'default', uid: '0b9e7a52-7d1c-4f0e-9c57-2f1d8e6a4b31' },
  spec: {
    containers: [{ name: 'db', image: 'postgres:17', resources: { requests: { cpu: '2', memory: '4Gi' } } }],
    volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data-db-0' } }],
  },
};

type Examples = Record<string, { summary: string; value: unknown }>;

export const EXTENDER_ARGS_EXAMPLES: Examples = {
  'db-0': {
    summary: "db-0's 50Gi fast-ssd claim, on the nodes kube-scheduler's own filters passed (node-cache mode)",
    value: { Pod: DB_0, Nodes: null, NodeNames: ['node-a1', 'node-a2', 'node-a3', 'node-b1', 'node-b3'] },
  },
};

export const PREEMPTION_ARGS_EXAMPLES: Examples = {
  'db-0 on node-c1': {
    summary: 'Would evicting the low-priority report job on node-c1 make room for db-0?',
    value: {
      Pod: DB_0,
      NodeNameToMetaVictims: {
        'node-c1': { Pods: [{ UID: '279cd4d7-2b88-5a5b-9fef-3b9fc6d1c7a9' }], NumPDBViolations: 0 },
      },
    },
  },
};

export const BINDING_ARGS_EXAMPLES: Examples = {
  'db-0 to node-a3': {
    summary: 'Bind db-0 and its claim to node-a3 (again: the same answer; to another node: an Error naming node-a3)',
    value: { PodName: 'db-0', PodNamespace: 'default', PodUID: DB_0.metadata.uid, Node: 'node-a3' },
  },
};

export const EXPLAIN_EXAMPLES: Examples = {
  'db-0 in zone b': {
    summary: 'Why db-0 fits no node of zone eu-west-1b (a pod in the cache, by name)',
    value: { namespace: 'default', name: 'db-0', nodes: ['node-b1', 'node-b2', 'node-b3'], limit: 1 },
  },
};

export const SIMULATE_EXAMPLES: Examples = {
  'StatefulSet web': {
    summary: 'How many replicas of a StatefulSet with a 20Gi local-storage claim each fit',
    value: {
      statefulSet: {
        kind: 'StatefulSet',
        metadata: { name: 'web', namespace: 'default' },
        spec: {
          replicas: 5,
          template: { spec: { containers: [{ name: 'nginx', image: 'nginx:1.27' }] } },
          volumeClaimTemplates: [
            {
              metadata: { name: 'www' },
              spec: {
                accessModes: ['ReadWriteOnce'],
                storageClassName: 'local-storage',
                resources: { requests: { storage: '20Gi' } },
              },
            },
          ],
        },
      },
    },
  },
};

/** `schema` with named examples for the request body (@fastify/swagger writes `x-examples` as the media's examples). */
export function withExamples<T extends object>(schema: T, examples: Examples): T {
  return { ...schema, 'x-examples': examples };
}
