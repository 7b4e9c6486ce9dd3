// The cluster-wide views for an incident: why every pending pod is pending (the background report, read as it stands:
// this route never computes an explanation) and where storage runs out (computed on request from the store).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { kubeSchedulerMinor } from '../../ops/explain.ts';
import { GROUPINGS, type Grouping, pendingAnswer } from '../../ops/pending.ts';
import { SIZE_BUCKETS, storageView } from '../../ops/storage.ts';
import { storageHeadroom } from '../../ops/storage-headroom.ts';
import type { AppDeps } from '../app.ts';
import { Answer, HttpError } from '../errors.ts';

// One enum (not a union of constants), so that a wrong value is refused in one sentence.
const GroupingSchema = (description?: string) =>
  Type.Unsafe<Grouping>({ type: 'string', enum: [...GROUPINGS], ...(description ? { description } : {}) });

const Count = Type.Object({ count: Type.Integer(), bytes: Type.Number() });

const PendingPod = Type.Object({
  namespace: Type.String(),
  name: Type.String(),
  uid: Type.String(),
  schedulerName: Type.String(),
  workload: Type.String({
    description: 'The controller as kubectl names it: Deployment/api, StatefulSet/web; Pod/<name>',
  }),
  createdAt: Type.Optional(Type.String({ description: 'metadata.creationTimestamp' })),
  age: Type.Union([Type.Integer(), Type.Null()], { description: 'Seconds since creationTimestamp (null: none)' }),
  summary: Type.String({
    description: "explain's summary: when no node fits, the PodScheduled message kube-scheduler writes, byte for byte",
  }),
  reason: Type.String({
    description: 'The reason given for the most nodes, numbers stripped (the metric label); Schedulable when one fits',
  }),
  plugin: Type.String({ description: 'The plugin rejecting the most nodes ("" when one fits)' }),
  plugins: Type.Record(Type.String(), Type.Integer(), {
    description: 'Nodes that do not fit, by the plugin that rejected each',
  }),
  feasibleNodes: Type.Integer(),
  totalNodes: Type.Integer(),
  preemption: Type.Union(
    [
      Type.Object({
        helps: Type.Boolean(),
        node: Type.Optional(Type.String()),
        victims: Type.Optional(Type.Array(Type.String(), { description: 'namespace/name, most important first' })),
      }),
      Type.Null(),
    ],
    {
      description:
        "Whether evicting lower-priority pods makes room (DefaultPreemption's dry run); null when a node fits",
    },
  ),
  claims: Type.Array(
    Type.Object({
      claim: Type.String(),
      storageClass: Type.String(),
      phase: Type.String(),
      requestBytes: Type.Number(),
      volume: Type.Optional(Type.String()),
      zonesWithRoom: Type.Optional(
        Type.Array(Type.String(), {
          description:
            'Unbound claims: zones with a free PV of the class this large or a CSIStorageCapacity admitting it',
        }),
      ),
    }),
  ),
  notes: Type.Optional(Type.Array(Type.String())),
  computedAt: Type.String({ description: 'When the explanation was computed (RFC 3339)' }),
});

const PendingGroup = Type.Object({
  key: Type.String({
    description: 'The reason, namespace/workload, or the storage classes of the unbound claims (-: none)',
  }),
  pods: Type.Integer(),
  plugin: Type.Optional(Type.String()),
  reasons: Type.Optional(Type.Array(Type.String())),
  workloads: Type.Optional(Type.Integer()),
  zonesWithRoom: Type.Optional(
    Type.Record(Type.String(), Type.Integer(), {
      description: 'Per zone, the pods whose unbound claims all fit there',
    }),
  ),
  oldestAge: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Seconds since the oldest pod of the group was created (null: no creationTimestamp)',
  }),
  examples: Type.Array(Type.String()),
});

const PendingAnswer = Type.Object({
  kubeSchedulerVersion: Type.String(),
  schedulerNames: Type.Array(Type.String()),
  pods: Type.Integer({ description: 'Pods listed (and counted by the groups: each pod is in exactly one)' }),
  notExplainedYet: Type.Integer({
    description:
      'Pending pods the background report has not reached yet (in a live cluster, a pod is explained once kube-scheduler tried it or it is 10 s old)',
  }),
  refreshing: Type.Integer({ description: 'Pods explained with an earlier state of the cluster, being refreshed' }),
  items: Type.Array(PendingPod),
  by: Type.Optional(GroupingSchema()),
  groups: Type.Optional(Type.Array(PendingGroup, { description: 'Largest first' })),
});

const StorageRow = Type.Object({
  storageClass: Type.String(),
  zone: Type.String({ description: 'The zone the node affinity or nodeTopology reaches ("" for none)' }),
  node: Type.Optional(Type.String()),
  volumes: Type.Object({ available: Count, bound: Count, released: Count }),
  freeSizes: Type.Record(Type.String(), Type.Integer(), {
    description: `Available PVs by size, per upper bound (${SIZE_BUCKETS.map(([l]) => l).join(', ')}), not cumulative`,
  }),
  largestFreeBytes: Type.Number(),
  capacityBytes: Type.Number({ description: 'CSIStorageCapacity capacity summed' }),
  capacityObjects: Type.Integer(),
  largestProvisionableBytes: Type.Number({ description: 'The largest volume one object admits' }),
});

const StorageAnswer = Type.Object({
  rows: Type.Array(StorageRow),
  claimsWaiting: Type.Array(Type.Object({ storageClass: Type.String(), count: Type.Integer(), bytes: Type.Number() })),
});

const BAD_QUERY = HttpError(400, 'A query parameter is not one of its allowed values (the message names it)');
const REPORT_OFF = HttpError(
  503,
  'The pending report is off (start the extender with --pending-report) or not started yet',
);

export function reportRoutes(deps: AppDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));

    app.get(
      '/pending',
      {
        schema: {
          tags: ['analysis'],
          summary:
            "Why every pending pod is pending: kube-scheduler's line, the deciding plugins, workload, wait, preemption and storage; grouped on request",
          querystring: Type.Object(
            {
              namespace: Type.Optional(Type.String({ minLength: 1, examples: ['default'] })),
              by: Type.Optional({
                ...GroupingSchema('Group the pods: by reason, workload, or zone (storage class and zones with room)'),
                examples: ['reason'],
              }),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Answer('The pending pods, as the background report last explained them', PendingAnswer),
            400: BAD_QUERY,
            503: REPORT_OFF,
          },
        },
      },
      async (request, reply) => {
        if (!deps.pending.running) {
          return reply.code(503).send({
            statusCode: 503,
            error: 'Service Unavailable',
            message:
              'the pending report is off (start the extender with --pending-report) or not started yet: explain answers pod by pod',
          });
        }
        const query = request.query as { namespace?: string; by?: Grouping };
        const minor = kubeSchedulerMinor(deps.extender.clusterVersion?.());
        return pendingAnswer(deps.pending.snapshot(), deps.schedulerNames, query, Date.now(), minor);
      },
    );

    app.get(
      '/storage',
      {
        schema: {
          tags: ['analysis'],
          summary:
            'Storage headroom per class and zone: PVs available and bound with sizes, CSIStorageCapacity left, claims waiting',
          querystring: Type.Object(
            {
              byNode: Type.Optional(
                Type.Enum(['true', 'false'], { description: 'One row per class, zone and node', examples: ['true'] }),
              ),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Answer('Headroom per storage class and zone, from the objects in the cache', StorageAnswer),
            400: BAD_QUERY,
          },
        },
      },
      // Split by node it is a pass over every PV (on request only); per class and zone it is kept current.
      async (request) =>
        (request.query as { byNode?: string }).byNode === 'true'
          ? storageView(deps.extender.store, { byNode: true })
          : storageHeadroom(deps.extender.store).view(),
    );
  };
}
