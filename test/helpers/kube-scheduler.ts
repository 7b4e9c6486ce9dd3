// Real kube-scheduler binaries for tests: KUBE_SCHEDULER_BIN, else each ../shared/bin/kube-scheduler-v*.xz unpacked
// once (xz -dc) into node_modules/.cache. Where there is none, callers skip with the reason this gives.
import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { stringify } from 'yaml';

const run = promisify(execFile);
const SHARED_BIN = resolve('..', 'shared', 'bin');
const CACHE = join('node_modules', '.cache', 'topology-extender');

export interface KubeSchedulerBinary {
  /** As `--version` prints it: `v1.35.4`. */
  version: string;
  path: string;
}

async function versionOf(path: string): Promise<string> {
  const { stdout } = await run(path, ['--version']);
  const version = /Kubernetes (v\d+\.\d+\.\d+\S*)/.exec(stdout)?.[1];
  if (!version) throw new Error(`${path} --version printed no Kubernetes version: ${stdout.trim()}`);
  return version;
}

async function unpack(xz: string, version: string): Promise<string> {
  const target = join(CACHE, `kube-scheduler-${version}`);
  try {
    if ((await stat(target)).size > 0) return target;
  } catch {}
  await mkdir(CACHE, { recursive: true });
  // Test files run in parallel: unpack aside, then rename into place atomically.
  const partial = `${target}.${process.pid}.partial`;
  await run('sh', ['-c', 'xz -dc "$1" > "$2"', 'sh', xz, partial], { maxBuffer: 1024 });
  await chmod(partial, 0o755);
  await rename(partial, target);
  return target;
}

let found: Promise<{ binaries: KubeSchedulerBinary[]; skip?: string }> | undefined;

/**
 * The binaries to run. A KUBE_SCHEDULER_BIN that does not exist or does not run is an error, never a skip; no
 * KUBE_SCHEDULER_BIN and no ../shared/bin gives an empty list and the reason.
 */
export function kubeSchedulerBinaries(): Promise<{ binaries: KubeSchedulerBinary[]; skip?: string }> {
  found ??= (async () => {
    const env = process.env.KUBE_SCHEDULER_BIN;
    if (env) {
      if (!existsSync(env)) throw new Error(`KUBE_SCHEDULER_BIN=${env} does not exist`);
      try {
        return { binaries: [{ version: await versionOf(env), path: env }] };
      } catch (err) {
        throw new Error(`KUBE_SCHEDULER_BIN=${env} does not run: ${(err as Error).message}`);
      }
    }
    const files = existsSync(SHARED_BIN)
      ? readdirSync(SHARED_BIN).filter((f) => /^kube-scheduler-v[\d.]+\.xz$/.test(f))
      : [];
    if (files.length === 0) {
      return { binaries: [], skip: `no kube-scheduler: KUBE_SCHEDULER_BIN is not set and ${SHARED_BIN} has none` };
    }
    const binaries: KubeSchedulerBinary[] = [];
    for (const f of files.sort()) {
      const version = f.slice('kube-scheduler-'.length, -'.xz'.length);
      binaries.push({ version, path: await unpack(join(SHARED_BIN, f), version) });
    }
    return { binaries };
  })();
  return found;
}

/** One entry of kube-scheduler's "the scheduler starts to work with those plugins" log line, per extension point. */
export type PluginSets = Record<string, { Enabled: { Name: string }[] | null }>;

/**
 * Starts kube-scheduler with a KubeSchedulerConfiguration (its clientConnection pointed at a closed loopback port)
 * and returns the plugins of each profile as it logs them once the configuration is loaded, validated and its
 * frameworks are built; rejects with kube-scheduler's own message when it exits first (a configuration error).
 */
export async function loadedPlugins(
  binary: string,
  config: Record<string, unknown>,
  timeoutMs = 60_000, // under test/run.ts's 120 s per test, so a hang reports kube-scheduler's log
): Promise<PluginSets[]> {
  const dir = await mkdtemp(join(tmpdir(), 'kube-scheduler-config-'));
  try {
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(
      kubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'none', cluster: { server: 'http://127.0.0.1:1' } }],
        users: [{ name: 'none', user: {} }],
        contexts: [{ name: 'none', context: { cluster: 'none', user: 'none' } }],
        'current-context': 'none',
      }),
    );
    const file = join(dir, 'config.yaml');
    await writeFile(file, stringify({ ...config, clientConnection: { kubeconfig } }));
    const child = spawn(binary, ['--config', file, '--secure-port=0', '-v=2'], { stdio: ['ignore', 'ignore', 'pipe'] });
    const log: string[] = [];
    const profiles: PluginSets[] = [];
    const profileCount = ((config.profiles as unknown[] | undefined) ?? [{}]).length;
    try {
      return await new Promise<PluginSets[]>((resolveLoaded, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`kube-scheduler loaded no plugins within ${timeoutMs} ms:\n${log.join('\n')}`)),
          timeoutMs,
        );
        createInterface(child.stderr).on('line', (line) => {
          log.push(line);
          const at = line.indexOf('"the scheduler starts to work with those plugins" Plugins=');
          if (at < 0) return;
          profiles.push(JSON.parse(line.slice(line.indexOf('Plugins=', at) + 'Plugins='.length)) as PluginSets);
          if (profiles.length === profileCount) {
            clearTimeout(timer);
            resolveLoaded(profiles);
          }
        });
        child.on('error', reject);
        child.on('exit', (code) => {
          clearTimeout(timer);
          const failed = log.filter((l) => /command failed|error|invalid/i.test(l) && !l.includes('flags.go'));
          reject(new Error(`kube-scheduler exited (${code}): ${(failed.length ? failed : log).join('\n')}`));
        });
      });
    } finally {
      child.kill('SIGKILL');
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The plugins enabled at any extension point of one profile. */
export function enabledPlugins(sets: PluginSets): Set<string> {
  return new Set(Object.values(sets).flatMap((s) => (s.Enabled ?? []).map((p) => p.Name)));
}
