// Analysis routes for operators: explain (why a pod fits each node or not) and, later, what-if placement. They read
// the same cache and plugins as the verbs and never change them.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { LabelSelector, Pod } from '../../cluster/schemas.ts';
import { DEFAULT_MAX_VOLUMES, DEFAULT_NODE_LIMIT, explain } from '../../ops/explain.ts';
import { MAX_REPLICAS, simulate } from '../../ops/simulate.ts';
import { DEFAULT_PROFILE_PLUGINS } from '../../plugins/default-profile.ts';
import { PLUGIN_NAMES } from '../../plugins/names.ts';
import type { AppDeps } from '../app.ts';
import { Answer, HttpError } from '../errors.ts';
import { EXPLAIN_EXAMPLES, SIMULATE_EXAMPLES, withExamples } from '../examples.ts';

const open = { additionalProperties: true } as const;

/** A Pod as kubectl prints it, its read fields typed as the verbs type them; a uid is not needed (a manifest not created yet has none). */
const PodObject = Type.Object(Pod.properties, {
  ...open,
  description: 'The pod as a full object (e.g. `kubectl get pod -o json`, or a manifest); not with namespace or name',
});

const PodSelection = {
  pod: Type.Optional(PodObject),
  namespace: Type.Optional(
    Type.String({ description: "With name: a pod in the extender's cache (default namespace: default)" }),
  ),
  name: Type.Optional(Type.String({ minLength: 1 })),
};

const DisabledPlugins = Type.Optional(
  Type.Array(Type.String({ minLength: 1 }), {
    description: "Default-profile plugins to leave out, by kube-scheduler's names (e.g. NodeResourcesFit)",
  }),
);

const ExplainBody = Type.Object(
  {
    ...PodSelection,
    disabledPlugins: DisabledPlugins,
    nodes: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), { description: 'Nodes to judge (default: every node in the cache)' }),
    ),
    limit: Type.Optional(
      Type.Integer({ minimum: 0, description: `Nodes listed (default ${DEFAULT_NODE_LIMIT}); the summary covers all` }),
    ),
    maxVolumes: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: `Refused PVs listed per claim and node (default ${DEFAULT_MAX_VOLUMES})`,
      }),
    ),
  },
  {
    additionalProperties: false,
    examples: [
      { namespace: 'default', name: 'db-0', nodes: ['node-a1', 'node-b1'] },
      { namespace: 'default', name: 'web-0' },
    ],
  },
);

const NodeExplanation = Type.Object({
  name: Type.String(),
  verdict: Type.Union([
    Type.Literal('Fits'),
    Type.Literal('Unschedulable'),
    Type.Literal('UnschedulableAndUnresolvable'),
    Type.Literal('Error'),
  ]),
  plugin: Type.Union([Type.String(), Type.Null()], {
    description: `The plugin that rejected the node, by kube-scheduler's name: ${[...DEFAULT_PROFILE_PLUGINS, ...PLUGIN_NAMES].join(', ')}`,
  }),
  reasons: Type.Array(Type.String(), { description: "Upstream's reason strings of the rejecting plugin" }),
  failures: Type.Array(
    Type.Object({ plugin: Type.String(), code: Type.String(), reasons: Type.Array(Type.String()) }),
    { description: 'Every filter plugin rejecting the node (kube-scheduler stops at the first)' },
  ),
  detail: Type.Record(Type.String(), Type.Object({}, open), {
    description:
      'Per plugin: NodeResourcesFit.insufficient (requested, used, capacity per resource), ' +
      'TaintToleration.untoleratedTaint, NodePorts.portsInUse, PodTopologySpread.violatedConstraints (skew, maxSkew, ' +
      'global minimum), InterPodAffinity (matching pods per domain), VolumeBinding.claims (per claim the bound PV, or the PVs refused with why, the PV chosen, ' +
      'the provisioning verdict with allowedTopologies and the CSIStorageCapacity consulted, and its ' +
      "capacityArithmetic: published, nominated, in flight (with the claims), the pod's earlier claims, free, requested), " +
      'VolumeRestrictions.readWriteOncePod (the pods holding each RWOP claim), ' +
      'NodeVolumeLimits.attachLimits (per driver: limit, attached, adding, the pods holding the slots)',
  }),
});

const ExplainAnswer = Type.Object({
  pod: Type.String(),
  summary: Type.String({
    description:
      'When no node fits, the PodScheduled message kube-scheduler writes (`0/N nodes are available: ...`, with ' +
      "preemption's verdict), else `M/N nodes are available`",
  }),
  notes: Type.Optional(
    Type.Array(Type.String(), {
      description:
        'Another schedulerName, preemption that would make room, or what could not be modelled (kinds not listed)',
    }),
  ),
  kubeSchedulerVersion: Type.String({
    description:
      "The cluster's kube-scheduler minor (its API server's; the newest supported one without a cluster): a note says when explain's reasons, kube-scheduler v1.35–v1.37's, may not be its own",
  }),
  feasibleNodes: Type.Integer(),
  totalNodes: Type.Integer(),
  nodes: Type.Array(NodeExplanation),
  nodesOmitted: Type.Integer(),
});

const StatefulSet = Type.Object(
  {
    kind: Type.Literal('StatefulSet'),
    metadata: Type.Object({ name: Type.String({ minLength: 1 }), namespace: Type.Optional(Type.String()) }, open),
    spec: Type.Object(
      {
        replicas: Type.Optional(Type.Integer({ minimum: 0 })),
        selector: LabelSelector,
        template: Type.Object({ spec: Type.Object({}, open) }, open),
        volumeClaimTemplates: Type.Optional(
          Type.Array(
            Type.Object(
              { metadata: Type.Object({ name: Type.String({ minLength: 1 }) }, open), spec: Type.Object({}, open) },
              open,
            ),
          ),
        ),
      },
      open,
    ),
  },
  {
    ...open,
    description:
      'A StatefulSet as kubectl prints it: replicas `<name>-<ordinal>`, claims `<template>-<name>-<ordinal>`',
  },
);

const SimulateBody = Type.Object(
  {
    statefulSet: Type.Optional(StatefulSet),
    ...PodSelection,
    disabledPlugins: DisabledPlugins,
    replicas: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_REPLICAS, description: "Default: the StatefulSet's replicas, else 1" }),
    ),
    nodes: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), { description: 'Nodes to consider (default: all)' }),
    ),
  },
  {
    additionalProperties: false,
    examples: [
      {
        statefulSet: {
          kind: 'StatefulSet',
          metadata: { name: 'web', namespace: 'default' },
          spec: {
            replicas: 5,
            template: {
              spec: { containers: [{ name: 'nginx', image: 'nginx:1.27', resources: { requests: { cpu: '500m' } } }] },
            },
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
      { namespace: 'default', name: 'db-0', replicas: 3 },
    ],
  },
);

const Placement = Type.Object({
  pod: Type.String(),
  node: Type.String(),
  score: Type.Integer({ description: "The extender's prioritize score there (0..10)" }),
  totalScore: Type.Number({
    description: "The default profile's weighted score plus the extender's at weight 1 (0 when one node fit)",
  }),
  boundVolumes: Type.Array(Type.Object({ claim: Type.String(), volume: Type.String() })),
  provisionedClaims: Type.Array(
    Type.Object({
      claim: Type.String(),
      storageClass: Type.String(),
      capacity: Type.Union([Type.String(), Type.Null()], { description: 'The CSIStorageCapacity that admitted it' }),
    }),
  ),
});

const SimulateAnswer = Type.Object({
  requested: Type.Integer(),
  placed: Type.Integer(),
  placements: Type.Array(Placement),
  unplaced: Type.Union([Type.Object({ pod: Type.String(), explanation: ExplainAnswer }), Type.Null()], {
    description: 'The first replica that does not fit, with its explanation (up to 20 nodes listed)',
  }),
  notes: Type.Optional(
    Type.Array(Type.String(), {
      description: 'What the placements could not model (kinds the extender could not list, e.g. Services)',
    }),
  ),
});

const NOT_FOUND = HttpError(
  404,
  'namespace/name names a pod that is not in the cache (serving a cluster-state file: not in the file)',
);

export function analysisRoutes(deps: AppDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    // The answers are built in their final shape; the schemas document them and JSON.stringify writes them.
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));

    app.post(
      '/explain',
      {
        schema: {
          tags: ['analysis'],
          summary:
            'Why a pod fits each node or not: the FitError line, per node the deciding plugin and the volume detail',
          body: withExamples(ExplainBody, EXPLAIN_EXAMPLES),
          response: {
            200: Answer("kube-scheduler's line for the pod and each judged node's verdict", ExplainAnswer),
            404: NOT_FOUND,
          },
        },
      },
      async (request) => explain(deps.extender, request.body as Parameters<typeof explain>[1]),
    );

    app.post(
      '/simulate',
      {
        schema: {
          tags: ['analysis'],
          summary:
            'Place N replicas one after another as kube-scheduler would, each assumed on a private copy of the state (never written)',
          body: withExamples(SimulateBody, SIMULATE_EXAMPLES),
          response: {
            200: Answer('The placements, and why the first replica that does not fit fits nowhere', SimulateAnswer),
            404: NOT_FOUND,
          },
        },
      },
      async (request) => simulate(deps.extender, deps.pluginSettings, request.body as Parameters<typeof simulate>[2]),
    );
  };
}
