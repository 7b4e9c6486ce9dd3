// A real kube-scheduler for end-to-end tests and benches: one per supported minor, built from test/components'
// pinned Go modules (components.ts); writes its configuration (the registrations README.md and docs/ document) and runs it
// against an API server. Without a Go toolchain, callers skip with the reason, never pass silently.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
// Full delegation disables in kube-scheduler exactly the volume plugins the extender runs.
import { PLUGIN_NAMES } from '../../src/plugins/names.ts';
import { type Component, kubeComponents } from '../components/components.ts';
import { dieWithTestProcess } from '../components/control-plane.ts';

export type KubeSchedulerBinary = Component;

export type KubeSchedulers = { binaries: KubeSchedulerBinary[]; skip?: undefined } | { binaries: []; skip: string };

/** Every kube-scheduler the suites run (v1.35 to v1.37), newest first, built on first use. */
export async function kubeSchedulers(): Promise<KubeSchedulers> {
  const { components, skip } = await kubeComponents();
  return components ? { binaries: components.kubeSchedulers } : { binaries: [], skip };
}

/** How kube-scheduler is told to use the extender: the registrations of README.md and docs/operating.md. */
export interface ExtenderRegistration {
  /** The extender's base URL (`http://127.0.0.1:PORT`); `/scheduler` is appended. */
  url: string;
  /**
   * `delegated`: bindVerb set and every in-tree volume plugin disabled (full delegation, the chart's default);
   * `scheduler-binds`: filter, prioritize and preempt only, kube-scheduler's VolumeBinding binds.
   */
  mode: 'delegated' | 'scheduler-binds';
  nodeCacheCapable: boolean;
  /** Default 30 s: the tests' bind timeout is short. */
  httpTimeoutSeconds?: number;
  /** A do-nothing extender's verbs (filter and prioritize only), for the bench's floor. */
  verbs?: { filter: string; prioritize: string; preempt?: string; bind?: string };
}

export interface SchedulerConfigOptions {
  kubeconfig: string;
  extender?: ExtenderRegistration;
  schedulerName?: string;
  /** Backoff of pods that failed an attempt, in seconds (kube-scheduler's defaults are 1 and 10). */
  podInitialBackoffSeconds?: number;
  podMaxBackoffSeconds?: number;
  /** Unset: adaptive (50 % less 1 % per 125 nodes, at least 5 %), and never fewer than 100 nodes (numFeasibleNodesToFind). */
  percentageOfNodesToScore?: number;
}

/** A KubeSchedulerConfiguration as YAML (JSON is YAML): JSON on the wire, no leader election, high client limits. */
export function schedulerConfig(o: SchedulerConfigOptions): string {
  const ext = o.extender;
  const delegated = ext?.mode === 'delegated';
  const profile: Record<string, unknown> = { schedulerName: o.schedulerName ?? 'default-scheduler' };
  if (delegated) profile.plugins = { multiPoint: { disabled: PLUGIN_NAMES.map((name) => ({ name })) } };
  const verbs = ext?.verbs ?? {
    filter: 'filter',
    prioritize: 'prioritize',
    preempt: 'preempt',
    ...(delegated ? { bind: 'bind' } : {}),
  };
  const config = {
    apiVersion: 'kubescheduler.config.k8s.io/v1',
    kind: 'KubeSchedulerConfiguration',
    clientConnection: {
      kubeconfig: o.kubeconfig,
      contentType: 'application/json',
      acceptContentTypes: 'application/json',
      qps: 5000,
      burst: 5000,
    },
    leaderElection: { leaderElect: false },
    podInitialBackoffSeconds: o.podInitialBackoffSeconds ?? 1,
    podMaxBackoffSeconds: o.podMaxBackoffSeconds ?? 2,
    ...(o.percentageOfNodesToScore === undefined ? {} : { percentageOfNodesToScore: o.percentageOfNodesToScore }),
    profiles: [profile],
    ...(ext
      ? {
          extenders: [
            {
              urlPrefix: `${ext.url}/scheduler`,
              filterVerb: verbs.filter,
              prioritizeVerb: verbs.prioritize,
              ...(verbs.preempt ? { preemptVerb: verbs.preempt } : {}),
              ...(verbs.bind ? { bindVerb: verbs.bind } : {}),
              weight: 5,
              nodeCacheCapable: ext.nodeCacheCapable,
              httpTimeout: `${ext.httpTimeoutSeconds ?? 30}s`,
              ignorable: false,
              managedResources: [],
            },
          ],
        }
      : {}),
  };
  return JSON.stringify(config, null, 2);
}

export interface KubeSchedulerProcess {
  child: ChildProcess;
  /** Everything it logged so far (klog on stderr). */
  log(): string;
  stop(): Promise<void>;
}

/** Starts `binary` with the configuration written into `dir`; `-v=2` logs each scheduling decision. */
export async function startKubeScheduler(
  binary: KubeSchedulerBinary,
  dir: string,
  options: SchedulerConfigOptions,
  extraArgs: string[] = [],
): Promise<KubeSchedulerProcess> {
  const configFile = join(dir, `kube-scheduler-${process.hrtime.bigint()}.yaml`);
  await writeFile(configFile, schedulerConfig(options));
  const child = spawn(binary.path, ['--config', configFile, '--secure-port=0', '-v=2', ...extraArgs], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  dieWithTestProcess(child);
  const chunks: string[] = [];
  child.stderr!.setEncoding('utf8').on('data', (d: string) => chunks.push(d));
  const exited = once(child, 'exit');
  return {
    child,
    log: () => chunks.join(''),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * What kube-scheduler `version` writes after "0/N nodes are available: <reasons>." once every one of `nodes` nodes
 * failed a filter and preemption cannot help. Up to v1.36, DynamicResources' PostFilter says "no new claims to
 * deallocate" there even for a pod without ResourceClaims; from v1.37 it says nothing (it only logs that:
 * kubernetes#140222).
 */
export function unschedulableTail(version: string, nodes: number): string {
  const minor = Number(version.split('.')[1]);
  const deallocate = minor < 37 ? ' no new claims to deallocate,' : '';
  return `${deallocate} preemption: 0/${nodes} nodes are available: ${nodes} Preemption is not helpful for scheduling.`;
}
