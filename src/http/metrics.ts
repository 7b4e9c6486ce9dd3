// Prometheus metrics, one registry per app (tests build many apps in one process).
// Gauges, and the Counters whose totals their owners keep, are collected on scrape, so nothing has to remember to
// update them. Values that only ever grow are Counters named ..._total.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { SchedulerCache } from '../cache/interface.ts';
import { ANALYSIS_ONLY_KINDS, unavailableKinds } from '../cluster/analysis-kinds.ts';
import type { Source } from '../cluster/source.ts';
import type { ClusterStore } from '../cluster/store.ts';
import { KINDS } from '../cluster/types.ts';
import type { NodeNominator } from '../extender/nominate.ts';
import type { PendingReport } from '../ops/pending-report.ts';
import type { VolumeBinder } from '../volumes/binder.ts';
import { pendingMetrics, storageMetrics } from './report-metrics.ts';

export type Verb = 'filter' | 'prioritize' | 'preempt' | 'bind';

export interface Metrics {
  registry: Registry;
  verbDuration: Histogram<'verb'>;
  verbResults: Counter<'verb' | 'outcome'>;
  verbDropped: Counter<'verb' | 'reason'>;
  /** Verbs whose computation started: what the verb queue let through. */
  verbStarted: Counter<'verb'>;
  /** How long a started verb waited from its request's arrival (body read and parsed) to its start in the verb queue. */
  verbQueueWait: Histogram<'verb'>;
  /** A verb's synchronous part: the time it held the event loop. */
  verbCompute: Histogram<'verb'>;
  /** Of that, the main thread's CPU time; the difference is time the process waited for a core. */
  verbComputeCpu: Histogram<'verb'>;
  verbQueueDepth: Gauge;
  /** Requests answered 503 by admission (src/http/admission.ts), by the limit they met. */
  admissionRejected: Counter<'reason'>;
  /** Preempt candidates kept, and dropped by the volume reason no eviction fixes. */
  preemptNodes: Counter<'result' | 'reason'>;
  /** Victims that preempt added to the scheduler's (RWOP holders, CSI attach slots). */
  preemptVictimsAdded: Counter;
}

export function createMetrics(deps: {
  cache: SchedulerCache;
  source: Source;
  store: ClusterStore;
  /** The volume binder, when VolumeBinding is enabled: in-flight provisions and joint-accounting rejections. */
  volumeBinder?: VolumeBinder;
  /** The pending report (src/ops/pending-report.ts): its pods by reason and plugin, and their ages. */
  pending?: PendingReport;
  /** Full delegation's nominations of a node for pods kube-scheduler's sample of nodes missed. */
  nodeNominator?: NodeNominator;
}): Metrics {
  const registry = new Registry();
  // The event-loop delay is sampled every 100 ms, not prom-client's 10: each sample is a timer that wakes the idle
  // process, and 100 wake-ups a second cost 1.0-1.3 of its 3.0 ms/s idle CPU at 5,000 nodes. A stall longer than
  // 100 ms still delays a sample by at least the excess; shorter ones show when they overlap a sample.
  collectDefaultMetrics({ register: registry, prefix: 'topology_extender_', eventLoopMonitoringPrecision: 100 });
  const verbDuration = new Histogram({
    name: 'topology_extender_verb_duration_seconds',
    help: 'Time to answer an extender verb, by verb',
    labelNames: ['verb'],
    // kube-scheduler's extender timeout is 5 s; filter should answer in milliseconds, bind may wait for volumes
    // (bindTimeoutSeconds, 600 by default): buckets up to 1200 s let a p99 near that timeout be told (the chart's alerts).
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600, 1200],
    registers: [registry],
  });
  const verbResults = new Counter({
    name: 'topology_extender_verb_results_total',
    help:
      'Extender verb answers by outcome (ok, error: an Error in the answer, rejected: 4xx, dropped: not computed, ' +
      'see topology_extender_verb_dropped_total, failed: 5xx)',
    labelNames: ['verb', 'outcome'],
    registers: [registry],
  });
  const preemptNodes = new Counter({
    name: 'topology_extender_preempt_nodes_total',
    help: 'Preemption candidates by result (kept, dropped) and, for dropped ones, the reason',
    labelNames: ['result', 'reason'],
    registers: [registry],
  });
  const preemptVictimsAdded = new Counter({
    name: 'topology_extender_preempt_victims_added_total',
    help: "Victims preempt added to kube-scheduler's for the preemptor's volumes",
    registers: [registry],
  });
  const verbDropped = new Counter({
    name: 'topology_extender_verb_dropped_total',
    help:
      'Verb requests answered without being computed, by reason (client_gone: the client closed the connection ' +
      'first; deadline: waited longer than verbDeadlineSeconds; not_synced: the cluster not listed yet)',
    labelNames: ['verb', 'reason'],
    registers: [registry],
  });
  const verbStarted = new Counter({
    name: 'topology_extender_verb_started_total',
    help: 'Verb requests whose computation started (the rest were dropped or rejected first), by verb',
    labelNames: ['verb'],
    registers: [registry],
  });
  const admissionRejected = new Counter({
    name: 'topology_extender_admission_rejected_total',
    help:
      'Requests answered 503 with Retry-After before their body was read, by the limit they met (connections: ' +
      'maxConnections, body_bytes: maxBodyBytesHeld, queued_verbs: maxQueuedVerbs, queued_work: maxQueuedWorkSeconds)',
    labelNames: ['reason'],
    registers: [registry],
  });
  // Where a verb's time goes besides its compute: the queue (verbs one at a time, the event loop turning between
  // them, watch events and bind replies read meanwhile). Finer buckets than the duration's: these are sub-millisecond.
  const fineBuckets = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
  const verbQueueWait = new Histogram({
    name: 'topology_extender_verb_queue_wait_seconds',
    help: "Time from a verb request's arrival (its body read and parsed included) to its start in the verb queue, by verb",
    labelNames: ['verb'],
    buckets: fineBuckets,
    registers: [registry],
  });
  const verbCompute = new Histogram({
    name: 'topology_extender_verb_compute_seconds',
    help: "A verb's synchronous computation (the time it held the event loop; a bind's API writes come after), by verb",
    labelNames: ['verb'],
    buckets: fineBuckets,
    registers: [registry],
  });
  const verbComputeCpu = new Histogram({
    name: 'topology_extender_verb_compute_cpu_seconds',
    help:
      "The main thread's CPU time during a verb's synchronous computation, by verb: well below " +
      'verb_compute_seconds, the extender waits for a core (CPU limit throttling, a busy node)',
    labelNames: ['verb'],
    buckets: fineBuckets,
    registers: [registry],
  });
  const verbQueueDepth = new Gauge({
    name: 'topology_extender_verb_queue_depth',
    help: 'Verb requests received and waiting to start',
    registers: [registry],
  });
  new Gauge({
    name: 'topology_extender_cache_nodes',
    help: 'Nodes in the scheduler cache',
    registers: [registry],
    collect() {
      this.set(deps.cache.nodeCount());
    },
  });
  new Gauge({
    name: 'topology_extender_cache_pods',
    help: 'Pods in the scheduler cache (assumed included)',
    registers: [registry],
    collect() {
      this.set(deps.cache.podCount());
    },
  });
  new Gauge({
    name: 'topology_extender_cache_assumed_pods',
    help: 'Pods assumed by our bind and not yet confirmed by the watch',
    registers: [registry],
    collect() {
      this.set(deps.cache.assumedPods().length);
    },
  });
  new Gauge({
    name: 'topology_extender_store_objects',
    help: 'Objects held in the store, by kind',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      for (const kind of KINDS) this.set({ kind }, deps.store.count(kind));
    },
  });
  type SourceStatus = ReturnType<Source['status']>[number];
  /** A value per kind read from the source on scrape: a Gauge, or a Counter (named ..._total) for totals that only grow. */
  const perKind = (type: 'gauge' | 'counter', name: string, help: string, pick: (s: SourceStatus) => number) =>
    type === 'gauge'
      ? new Gauge({
          name,
          help,
          labelNames: ['kind'],
          registers: [registry],
          collect() {
            for (const s of deps.source.status()) this.set({ kind: s.kind }, pick(s));
          },
        })
      : new Counter({
          name,
          help,
          labelNames: ['kind'],
          registers: [registry],
          collect() {
            this.reset();
            for (const s of deps.source.status()) this.inc({ kind: s.kind }, pick(s));
          },
        });
  const binder = deps.volumeBinder;
  if (binder) {
    new Gauge({
      name: 'topology_extender_capacity_in_flight_bytes',
      help: 'Bytes of provisions the CSIStorageCapacity objects do not show yet, by selected node and storage class',
      labelNames: ['node', 'storage_class'],
      registers: [registry],
      collect() {
        this.reset();
        for (const r of binder.inFlight.byNodeAndClass()) {
          this.set({ node: r.nodeName, storage_class: r.className }, r.bytes);
        }
      },
    });
    new Gauge({
      name: 'topology_extender_volumes_assumed',
      help: 'PVs and claims assumed by a bind and not yet written or confirmed by the watch, by kind',
      labelNames: ['kind'],
      registers: [registry],
      collect() {
        this.set({ kind: 'PersistentVolume' }, binder.pvCache.assumedCount());
        this.set({ kind: 'PersistentVolumeClaim' }, binder.pvcCache.assumedCount());
      },
    });
    new Counter({
      name: 'topology_extender_capacity_joint_rejections_total',
      help:
        'Node verdicts (filter, and the filter runs of preempt; not explain or the pending report) rejected for storage only because of joint ' +
        "capacity accounting: upstream's per-claim check admits them",
      registers: [registry],
      collect() {
        this.reset();
        this.inc(binder.jointOnlyRejections);
      },
    });
  }
  const nominator = deps.nodeNominator;
  if (nominator) {
    new Counter({
      name: 'topology_extender_nominations_total',
      help:
        'Searches for a node after a filter that passed none of the nodes kube-scheduler asked about, by result ' +
        "(nominated: status.nominatedNodeName set; kept: the pod's nomination left as it was; nowhere: no node fits; " +
        'failed: the search or the write failed)',
      labelNames: ['result'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [result, n] of Object.entries(nominator.counts)) this.inc({ result }, n);
      },
    });
  }
  perKind(
    'counter',
    'topology_extender_watch_events_total',
    'Watch events applied (added, modified, deleted), by kind',
    (s) => s.watchEvents ?? 0,
  );
  perKind(
    'counter',
    'topology_extender_watch_event_characters_total',
    'Characters of JSON decoded for the watch events applied, by kind: what the watches cost to decode',
    (s) => s.watchEventChars ?? 0,
  );
  perKind(
    'counter',
    'topology_extender_watch_relists_total',
    'Full relists after the initial list (410 Gone, watch errors), by kind',
    (s) => s.relists,
  );
  perKind(
    'counter',
    'topology_extender_watch_restarts_total',
    'Watch restarts (errors, silence), by kind',
    (s) => s.watchRestarts,
  );
  perKind(
    'gauge',
    'topology_extender_watch_last_event_age_seconds',
    'Seconds since the watch last spoke, by kind',
    (s) => (s.silentForMs === undefined ? -1 : s.silentForMs / 1000),
  );
  perKind('gauge', 'topology_extender_watch_stale', '1 while the watch of a kind is stale', (s) => (s.stale ? 1 : 0));
  new Gauge({
    name: 'topology_extender_analysis_kind_unavailable',
    help: '1 while a kind only explain and simulate read cannot be listed or followed (readiness does not wait for it), by kind',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      const statuses = deps.source.status();
      const unavailable = new Set(unavailableKinds(statuses).map((s) => s.kind));
      for (const s of statuses)
        if (ANALYSIS_ONLY_KINDS.has(s.kind)) this.set({ kind: s.kind }, unavailable.has(s.kind) ? 1 : 0);
    },
  });
  if (deps.pending) pendingMetrics(registry, deps.pending);
  storageMetrics(registry, deps.store);
  return {
    registry,
    verbDuration,
    verbResults,
    verbDropped,
    verbStarted,
    verbQueueWait,
    verbCompute,
    verbComputeCpu,
    verbQueueDepth,
    admissionRejected,
    preemptNodes,
    preemptVictimsAdded,
  };
}
