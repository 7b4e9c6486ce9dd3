// What the real kube-scheduler makes of a KubeSchedulerConfiguration: it validates the configuration at startup and
// logs the plugins each profile runs at each extension point. The binaries come from test/e2e/kube-scheduler.ts.
import { spawn } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { stringify } from 'yaml';
import { tempDir } from './temp-dir.ts';

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
  const dir = await tempDir('kube-scheduler-config-');
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
