// A real kube-scheduler for end-to-end tests and benches: finds the binary, writes its configuration (the
// registrations the README documents) and runs it against the fake API server.
//
// Where the binary comes from: KUBE_SCHEDULER_BIN (must exist and run, else every caller fails with that message), or
// every ../shared/bin/kube-scheduler-v*.xz beside this repository, unpacked once into node_modules/.cache. With neither,
// callers skip with the reason, never pass silently.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { access, chmod, mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
// Full delegation disables in kube-scheduler exactly the volume plugins the extender runs.
import { PLUGIN_NAMES } from '../../src/plugins/names.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SHARED_BIN = resolve(ROOT, '..', 'shared', 'bin');
const CACHE = join(ROOT, 'node_modules', '.cache', 'kube-scheduler');

export interface KubeSchedulerBinary {
  path: string;
  /** As `--version` prints it, e.g. v1.35.4. */
  version: string;
}

export type KubeSchedulers = { binaries: KubeSchedulerBinary[]; skip?: undefined } | { binaries: []; skip: string };

async function versionOf(path: string): Promise<string> {
  const { stdout } = await run(path, ['--version'], { timeout: 30_000 });
  const match = /Kubernetes (v\d+\.\d+\.\d+\S*)/.exec(stdout);
  if (!match) throw new Error(`${path} --version printed no Kubernetes version: ${stdout.trim()}`);
  return match[1];
}

/** Unpacks `xz` into the cache once (atomically, so concurrent test files never run a half-written binary). */
async function unpack(xz: string): Promise<string> {
  const target = join(CACHE, xz.replace(/^.*\//, '').replace(/\.xz$/, ''));
  try {
    await access(target);
    return target;
  } catch {}
  await mkdir(CACHE, { recursive: true });
  const partial = `${target}.${process.pid}.partial`;
  try {
    await run('sh', ['-c', 'xz -dc "$1" > "$2"', 'unxz', xz, partial], { timeout: 120_000 });
  } catch (err) {
    throw new Error(`cannot unpack ${xz} (needs the xz command, Debian package xz-utils): ${(err as Error).message}`);
  }
  await chmod(partial, 0o755);
  await rename(partial, target);
  return target;
}

let found: Promise<KubeSchedulers> | undefined;

/** Every kube-scheduler available here, newest first; throws when KUBE_SCHEDULER_BIN names one that does not run. */
export function kubeSchedulers(): Promise<KubeSchedulers> {
  found ??= (async (): Promise<KubeSchedulers> => {
    const fromEnv = process.env.KUBE_SCHEDULER_BIN;
    if (fromEnv) {
      try {
        return { binaries: [{ path: fromEnv, version: await versionOf(fromEnv) }] };
      } catch (err) {
        throw new Error(`KUBE_SCHEDULER_BIN=${fromEnv} does not run: ${(err as Error).message}`);
      }
    }
    let files: string[];
    try {
      files = (await readdir(SHARED_BIN)).filter((f) => /^kube-scheduler-v[\d.]+\.xz$/.test(f));
    } catch {
      files = [];
    }
    if (files.length === 0) {
      return {
        binaries: [],
        skip: `no kube-scheduler: set KUBE_SCHEDULER_BIN, or put kube-scheduler-v*.xz in ${SHARED_BIN}`,
      };
    }
    const binaries = await Promise.all(
      files.map(async (f) => {
        const path = await unpack(join(SHARED_BIN, f));
        return { path, version: await versionOf(path) };
      }),
    );
    const key = (v: string) => v.slice(1).split('.').map(Number);
    return {
      binaries: binaries.sort((a, b) => {
        const [x, y] = [key(a.version), key(b.version)];
        return y[0] - x[0] || y[1] - x[1] || y[2] - x[2];
      }),
    };
  })();
  return found;
}

/** How kube-scheduler is told to use the extender: the README's registrations. */
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
