// The configurations we ship, loaded by the real kube-scheduler (test/e2e/kube-scheduler.ts finds them):
// it validates a KubeSchedulerConfiguration at startup and then logs the plugins each profile runs at each extension
// point, so these tests check what kube-scheduler makes of the chart's configurations and those of README.md and docs/.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { PLUGIN_NAMES } from '../../src/plugins/names.ts';
import { kubeSchedulers } from '../e2e/kube-scheduler.ts';
import { dryRunInstall, renderChart, schedulerConfigOf } from '../helpers/chart.ts';
import { enabledPlugins, loadedPlugins, type PluginSets } from '../helpers/kube-scheduler-plugins.ts';
import { readmeSchedulerConfigs } from '../helpers/readme.ts';

const { binaries, skip } = await kubeSchedulers();

/** The volume plugins the extender runs itself that a profile still runs somewhere. */
const volumePluginsRun = (profile: PluginSets) => PLUGIN_NAMES.filter((name) => enabledPlugins(profile).has(name));

describe('kube-scheduler loads the configurations we ship', { skip }, () => {
  for (const { version, path } of binaries) {
    describe(`kube-scheduler ${version}`, () => {
      it("runs none of its volume plugins, at any extension point, with the chart's default configuration", async () => {
        const [profile] = await loadedPlugins(path, schedulerConfigOf(await renderChart(['--kube-version', version])));
        assert.deepEqual(volumePluginsRun(profile), []);
        assert.ok(enabledPlugins(profile).has('NodeResourcesFit'), 'its other plugins still run');
      });

      it('runs all of them in the filter-only registration (delegateVolumeBinding=false)', async () => {
        const flags = ['--kube-version', version, '--set', 'delegateVolumeBinding=false'];
        const [profile] = await loadedPlugins(path, schedulerConfigOf(await renderChart(flags)));
        assert.deepEqual(volumePluginsRun(profile), [...PLUGIN_NAMES]);
      });

      it("loads mode extender's NOTES.txt entry and plugins; with them it runs none of its volume plugins", async () => {
        const { notes } = await dryRunInstall(['--set', 'mode=extender']);
        const printed = parseNotes(notes);
        // The client certificate's paths exist only in the cluster's kube-scheduler container.
        for (const e of printed.extenders) delete e.tlsConfig;
        const [profile] = await loadedPlugins(path, { apiVersion, kind, ...printed });
        assert.deepEqual(volumePluginsRun(profile), []);
      });

      it('loads every README KubeSchedulerConfiguration; where the extender binds (bindVerb) it runs none of its volume plugins', async () => {
        const configs = readmeSchedulerConfigs();
        assert.ok(configs.length > 0);
        for (const config of configs) {
          const delegated = (config.extenders as { bindVerb?: string }[] | undefined)?.some((e) => e.bindVerb);
          for (const profile of await loadedPlugins(path, config)) {
            assert.deepEqual(volumePluginsRun(profile), delegated ? [] : [...PLUGIN_NAMES]);
          }
        }
      });

      it('refuses a configuration with a misspelt field, which kube-scheduler in a cluster would refuse at startup', async () => {
        const config = {
          apiVersion,
          kind,
          profiles: [{ schedulerName: 'x', plugins: { multiPoint: { disabled: [{ nam: 'VolumeBinding' }] } } }],
        };
        await assert.rejects(loadedPlugins(path, config), /unknown field.*nam/);
      });
    });
  }
});

const apiVersion = 'kubescheduler.config.k8s.io/v1';
const kind = 'KubeSchedulerConfiguration';

function parseNotes(notes: string): { extenders: { tlsConfig?: unknown }[]; profiles?: unknown[] } {
  return parseYaml(notes.slice(notes.indexOf('extenders:')));
}
