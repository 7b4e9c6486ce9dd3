// Operator views of the scheduler cache: what the extender believes runs where.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type Static, Type } from 'typebox';
import type { NodeInfo, Resource } from '../../cache/node-info.ts';
import { namespaceOf } from '../../cluster/types.ts';
import { ANN_SELECTED_NODE } from '../../cluster/volume-annotations.ts';
import { LABEL_TOPOLOGY_REGION, LABEL_TOPOLOGY_ZONE } from '../../cluster/well-known-labels.ts';
import { nominationsView } from '../../ops/nominations.ts';
import type { AppDeps } from '../app.ts';
import { Answer, HttpError } from '../errors.ts';

const ResourceView = Type.Object({
  milliCPU: Type.Number(),
  memory: Type.Number({ description: 'bytes' }),
  ephemeralStorage: Type.Number({ description: 'bytes' }),
  pods: Type.Number(),
  scalar: Type.Record(Type.String(), Type.Number()),
});

const PodRef = Type.Object({
  namespace: Type.String(),
  name: Type.String(),
  uid: Type.String(),
  assumed: Type.Boolean(),
});

const NodeSummary = Type.Object({
  name: Type.String(),
  zone: Type.String({ description: 'region/zone labels, "" when unlabelled' }),
  allocatable: ResourceView,
  requested: ResourceView,
  pods: Type.Integer(),
  assumedPods: Type.Integer(),
  generation: Type.Integer(),
});

const NodeDetail = Type.Object({
  ...NodeSummary.properties,
  ghost: Type.Boolean({ description: 'The Node is gone but pods still reference it' }),
  labels: Type.Record(Type.String(), Type.String()),
  nonZeroRequested: ResourceView,
  podList: Type.Array(PodRef),
  usedPorts: Type.Record(Type.String(), Type.Integer()),
  pvcRefCounts: Type.Record(Type.String(), Type.Integer()),
  csiVolumes: Type.Record(Type.String(), Type.Array(Type.String())),
  images: Type.Record(Type.String(), Type.Number()),
});

const AssumedPod = Type.Object({
  namespace: Type.String(),
  name: Type.String(),
  uid: Type.String(),
  nodeName: Type.String(),
  bindingFinished: Type.Boolean(),
  finishedAt: Type.Optional(Type.String({ description: 'RFC 3339' })),
});

const Nomination = Type.Object({
  node: Type.String(),
  pods: Type.Array(
    Type.Object({
      namespace: Type.String(),
      name: Type.String(),
      uid: Type.String(),
      priority: Type.Integer(),
      persistentVolumes: Type.Array(Type.String(), { description: 'PVs its unbound claims would take on the node' }),
      storage: Type.Record(Type.String(), Type.Number(), {
        description: 'bytes it would provision, per CSIStorageCapacity (namespace/name)',
      }),
    }),
  ),
});

const ClaimView = Type.Object({
  phase: Type.String(),
  volumeName: Type.String(),
  selectedNode: Type.String({ description: `${ANN_SELECTED_NODE}, "" when unset` }),
  claim: Type.Object({}, { additionalProperties: true, description: 'The PersistentVolumeClaim as stored (trimmed)' }),
  volume: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
    description: 'The PersistentVolume named by volumeName, null when unbound or missing',
  }),
});

function resource(r: Readonly<Resource>): Static<typeof ResourceView> {
  return {
    milliCPU: r.milliCPU,
    memory: r.memory,
    ephemeralStorage: r.ephemeralStorage,
    pods: r.pods,
    scalar: { ...r.scalar },
  };
}

function summary(info: NodeInfo): Static<typeof NodeSummary> {
  const labels = info.node?.metadata.labels ?? {};
  const zone = [labels[LABEL_TOPOLOGY_REGION], labels[LABEL_TOPOLOGY_ZONE]].filter(Boolean).join('/');
  let assumed = 0;
  for (const p of info.pods.values()) if (p.assumed) assumed++;
  return {
    name: info.name,
    zone,
    allocatable: resource(info.allocatable),
    requested: resource(info.requested),
    pods: info.pods.size,
    assumedPods: assumed,
    generation: info.generation,
  };
}

function detail(info: NodeInfo): Static<typeof NodeDetail> {
  return {
    ...summary(info),
    ghost: info.node === undefined,
    labels: info.node?.metadata.labels ?? {},
    nonZeroRequested: resource(info.nonZeroRequested),
    podList: [...info.pods.values()].map(({ pod, assumed }) => ({
      namespace: namespaceOf(pod),
      name: pod.metadata.name,
      uid: pod.metadata.uid,
      assumed,
    })),
    usedPorts: Object.fromEntries(info.usedPorts),
    pvcRefCounts: Object.fromEntries(info.pvcRefCounts),
    csiVolumes: Object.fromEntries([...info.csiVolumes].map(([driver, handles]) => [driver, [...handles]])),
    images: Object.fromEntries(info.imageStates),
  };
}

export function opsRoutes(deps: AppDeps): FastifyPluginAsyncTypebox {
  const { cache } = deps.extender;
  return async (app) => {
    app.get(
      '/nodes',
      {
        schema: {
          tags: ['ops'],
          summary: 'Every node in the cache with its allocatable, requested and pod counts (zone-interleaved order)',
          response: {
            200: Answer(
              'Every node, in the order the filter sees them',
              Type.Object({ items: Type.Array(NodeSummary) }),
            ),
          },
        },
      },
      async () => ({
        items: cache.nodeNames().flatMap((name) => {
          const info = cache.nodeInfo(name);
          return info ? [summary(info)] : [];
        }),
      }),
    );

    app.get(
      '/nodes/:name',
      {
        schema: {
          tags: ['ops'],
          summary: "One node's NodeInfo: pods, resources, ports, claims, CSI volumes",
          params: Type.Object({ name: Type.String() }),
          response: {
            200: Answer("The node's NodeInfo", NodeDetail),
            404: HttpError(404, 'The node is not in the cache'),
          },
        },
      },
      async (request, reply) => {
        const info = cache.nodeInfo(request.params.name);
        if (!info) {
          return reply.code(404).send({
            statusCode: 404,
            error: 'Not Found',
            message: `node "${request.params.name}" is not in the cache`,
          });
        }
        return detail(info);
      },
    );

    app.get(
      '/pods/assumed',
      {
        schema: {
          tags: ['ops'],
          summary: 'Pods assumed by our bind and not yet confirmed by the watch',
          response: {
            200: Answer(
              'Assumed pods (none when every bind is confirmed)',
              Type.Object({ items: Type.Array(AssumedPod) }),
            ),
          },
        },
      },
      async () => ({
        items: cache.assumedPods().map(({ finishedAt, ...rest }) => ({
          ...rest,
          ...(finishedAt === undefined ? {} : { finishedAt: new Date(finishedAt).toISOString() }),
        })),
      }),
    );

    app.get(
      '/persistentvolumeclaims/:namespace/:name',
      {
        schema: {
          tags: ['ops'],
          summary: 'A claim as the extender sees it, with the PersistentVolume it is bound to (if any)',
          params: Type.Object({ namespace: Type.String(), name: Type.String() }),
          response: {
            200: Answer('The claim, its phase, selected node and PersistentVolume', ClaimView),
            404: HttpError(404, 'The claim is not in the cache'),
          },
        },
      },
      async (request, reply) => {
        const { namespace, name } = request.params;
        const claim = deps.extender.store.get('PersistentVolumeClaim', `${namespace}/${name}`);
        if (!claim) {
          return reply.code(404).send({
            statusCode: 404,
            error: 'Not Found',
            message: `persistentvolumeclaim "${namespace}/${name}" not found`,
          });
        }
        const pvName = claim.spec.volumeName;
        const volume = pvName ? deps.extender.store.get('PersistentVolume', pvName) : undefined;
        return {
          phase: claim.status?.phase ?? 'Pending',
          volumeName: pvName ?? '',
          selectedNode: claim.metadata.annotations?.[ANN_SELECTED_NODE] ?? '',
          claim,
          volume: volume ?? null,
        };
      },
    );

    app.get(
      '/nominations',
      {
        schema: {
          tags: ['ops'],
          summary:
            'Pods waiting for a node after preempting (status.nominatedNodeName): priority, and the PVs and storage they hold back there',
          response: { 200: Answer('Nominated pods (empty when none waits)', Type.Array(Nomination)) },
        },
      },
      async () =>
        nominationsView({
          nominator: deps.extender.nominator,
          store: deps.extender.store,
          plugins: deps.extender.framework.plugins,
        }),
    );

    app.get(
      '/debug/cache-diff',
      {
        schema: {
          tags: ['ops'],
          summary:
            "Differences between the cache and a fresh list from the source of truth (kube-scheduler's cache comparer)",
          response: {
            200: Answer(
              'What differs, by kind (empty when the cache agrees)',
              Type.Object({}, { additionalProperties: true }),
            ),
          },
        },
      },
      async () => deps.cacheDiff(),
    );
  };
}
