// The pending report and the storage view as Prometheus series, read on scrape: nothing is computed for a scrape;
// the storage view is kept current from the store's events (storage-headroom.ts), so reading it costs its rows.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ClusterStore } from '../cluster/store.ts';
import { ageOf } from '../ops/pending.ts';
import type { PendingReport } from '../ops/pending-report.ts';
import type { VolumeState } from '../ops/storage.ts';
import { storageHeadroom } from '../ops/storage-headroom.ts';

/** Pending pods' ages: from a minute to a day; the chart's alert thresholds must be one of these bounds. */
export const PENDING_AGE_BUCKETS = [30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400];

export function pendingMetrics(registry: Registry, report: PendingReport): void {
  new Gauge({
    name: 'topology_extender_pending_pods',
    help:
      "Unbound pods of the served schedulerNames, by the reason given for the most nodes (upstream's string, its " +
      'numbers stripped; Schedulable when a node fits) and the plugin rejecting the most nodes',
    labelNames: ['reason', 'plugin'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of report.snapshot().items) this.inc({ reason: p.reason, plugin: p.plugin });
    },
  });
  new Histogram({
    name: 'topology_extender_pending_pod_age_seconds',
    help:
      'How long the pending pods have existed (since creationTimestamp), by the plugin rejecting the most nodes: the ' +
      'pods pending now, not a history (each scrape counts them afresh)',
    labelNames: ['plugin'],
    buckets: PENDING_AGE_BUCKETS,
    registers: [registry],
    collect() {
      this.reset();
      const now = Date.now();
      for (const p of report.snapshot().items) this.observe({ plugin: p.plugin }, ageOf(p, now));
    },
  });
  new Counter({
    name: 'topology_extender_pending_report_work_seconds_total',
    help:
      "Time the pending report's background work has held the event loop (its slices), in total: its rate is the " +
      'share of a core it takes',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(report.workMs / 1000);
    },
  });
}

export function storageMetrics(registry: Registry, store: ClusterStore): void {
  const view = () => storageHeadroom(store).view();
  const perState = (name: string, help: string, pick: (v: { count: number; bytes: number }) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['storage_class', 'zone', 'state'],
      registers: [registry],
      collect() {
        this.reset();
        for (const r of view().rows) {
          // Rows of capacity alone (a CSI class's zones) have no PV to count: no series rather than zeros.
          if (Object.values(r.volumes).every((v) => v.count === 0)) continue;
          for (const state of Object.keys(r.volumes) as VolumeState[])
            this.set({ storage_class: r.storageClass, zone: r.zone, state }, pick(r.volumes[state]));
        }
      },
    });
  perState(
    'topology_extender_local_volumes',
    'PersistentVolumes by storage class, zone (of the nodes their node affinity selects; "" for none) and state (available, bound, released)',
    (v) => v.count,
  );
  perState('topology_extender_local_volumes_bytes', 'Capacity of those PersistentVolumes, in bytes', (v) => v.bytes);
  new Gauge({
    name: 'topology_extender_storage_capacity_bytes',
    help: 'CSIStorageCapacity published for a storage class, summed per zone its nodeTopology reaches',
    labelNames: ['storage_class', 'zone'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of view().rows)
        if (r.capacityObjects > 0) this.set({ storage_class: r.storageClass, zone: r.zone }, r.capacityBytes);
    },
  });
  new Gauge({
    name: 'topology_extender_claims_waiting',
    help: 'PersistentVolumeClaims not bound yet, by storage class',
    labelNames: ['storage_class'],
    registers: [registry],
    collect() {
      this.reset();
      for (const w of view().claimsWaiting) this.set({ storage_class: w.storageClass }, w.count);
    },
  });
}
