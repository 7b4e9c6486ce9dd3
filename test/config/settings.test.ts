// Settings: one table, four sources, and errors that name the setting and what it allows.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { envName, flagName, loadSettings, SETTING_NAMES, SettingsError } from '../../src/config.ts';
import { tempDir } from '../helpers/temp-dir.ts';

async function configFile(text: string): Promise<string> {
  const dir = await tempDir('settings-');
  const file = join(dir, 'config.yaml');
  await writeFile(file, text);
  return file;
}

describe('defaults', () => {
  it('serves on 127.0.0.1:8888 with a 32 MiB body limit, a 600 s bind timeout and every plugin enabled', () => {
    const s = loadSettings([], {});
    assert.equal(s.host, '127.0.0.1');
    assert.equal(s.port, 8888);
    assert.equal(s.bodyLimit, 32 * 1024 * 1024);
    assert.equal(s.bindTimeoutSeconds, 600);
    assert.deepEqual(s.disabledPlugins, []);
    assert.deepEqual(s.storageScoringShape, [
      { utilization: 0, score: 10 },
      { utilization: 100, score: 0 },
    ]);
  });
});

describe('precedence: defaults < config file < environment < flags', () => {
  it('takes each setting from the strongest source that sets it', async () => {
    const file = await configFile('port: 7000\nhost: 0.0.0.0\nlogLevel: debug\nbindTimeoutSeconds: 30\n');
    const s = loadSettings(['--config', file, '--port', '9000'], {
      TOPOLOGY_EXTENDER_PORT: '8000',
      TOPOLOGY_EXTENDER_LOG_LEVEL: 'warn',
    });
    assert.equal(s.port, 9000, 'flag beats env and file');
    assert.equal(s.logLevel, 'warn', 'env beats file');
    assert.equal(s.host, '0.0.0.0', 'file beats default');
    assert.equal(s.bindTimeoutSeconds, 30);
  });

  it('reads lists and shapes from flags, env and YAML alike', async () => {
    const file = await configFile(
      'disabledPlugins: [volume-zone]\nstorageScoringShape:\n- {utilization: 0, score: 0}\n- {utilization: 100, score: 10}\n',
    );
    const fromFile = loadSettings(['--config', file], {});
    assert.deepEqual(fromFile.disabledPlugins, ['VolumeZone'], 'kebab-case is an alias of the upstream name');
    assert.deepEqual(fromFile.storageScoringShape[1], { utilization: 100, score: 10 });
    const fromEnv = loadSettings([], {
      TOPOLOGY_EXTENDER_DISABLED_PLUGINS: 'NodeVolumeLimits, volume-restrictions',
      TOPOLOGY_EXTENDER_STORAGE_SCORING_SHAPE: '0:0,50:5,100:10',
    });
    assert.deepEqual(fromEnv.disabledPlugins, ['NodeVolumeLimits', 'VolumeRestrictions']);
    assert.equal(fromEnv.storageScoringShape.length, 3);
    assert.equal(loadSettings(['--body-limit', '64Mi'], {}).bodyLimit, 64 * 1024 * 1024);
    assert.equal(loadSettings(['--in-cluster'], {}).inCluster, true);
  });

  it('has no health listener unless --health-port is given, then on every address unless --health-host says', () => {
    assert.equal(loadSettings([], {}).healthPort, undefined);
    const s = loadSettings(['--health-port', '8889'], {});
    assert.deepEqual([s.healthHost, s.healthPort], ['0.0.0.0', 8889]);
    const env = loadSettings([], { TOPOLOGY_EXTENDER_HEALTH_PORT: '9000', TOPOLOGY_EXTENDER_HEALTH_HOST: '10.0.0.7' });
    assert.deepEqual([env.healthHost, env.healthPort], ['10.0.0.7', 9000]);
  });

  it('names every setting as flag --kebab-case and env TOPOLOGY_EXTENDER_SCREAMING_SNAKE', () => {
    assert.equal(flagName('clusterState'), 'cluster-state');
    assert.equal(envName('clusterState'), 'TOPOLOGY_EXTENDER_CLUSTER_STATE');
    assert.ok(SETTING_NAMES.includes('port'));
  });
});

describe('invalid settings name the setting and the allowed values', () => {
  const cases: [string, () => unknown, RegExp][] = [
    ['a port out of range', () => loadSettings(['--port', '70000'], {}), /--port="70000".*integer from 0 to 65535/],
    [
      'a log level',
      () => loadSettings([], { TOPOLOGY_EXTENDER_LOG_LEVEL: 'loud' }),
      /TOPOLOGY_EXTENDER_LOG_LEVEL="loud".*fatal, error, warn, info, debug, trace, silent/,
    ],
    [
      'a plugin name',
      () => loadSettings(['--disabled-plugins', 'volume-magic'], {}),
      /--disabled-plugins.*VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone/,
    ],
    [
      'a shape with descending utilization',
      () => loadSettings(['--storage-scoring-shape', '100:0,0:10'], {}),
      /strictly ascending/,
    ],
    [
      'a body limit that is not a size',
      () => loadSettings(['--body-limit', 'lots'], {}),
      /--body-limit="lots".*byte size/,
    ],
    ['a health port out of range', () => loadSettings(['--health-port=70000'], {}), /--health-port.*0 to 65535/],
    ['a bind timeout of zero', () => loadSettings(['--bind-timeout-seconds', '0'], {}), /integer from 1/],
    ['an unknown flag', () => loadSettings(['--prot', '1'], {}), /--prot/],
    [
      'a cluster-state file combined with a kubeconfig',
      () => loadSettings(['--cluster-state', 'a.yaml', '--kubeconfig', 'k'], {}),
      /cannot be combined/,
    ],
  ];
  for (const [what, load, message] of cases) {
    it(`rejects ${what}`, () => {
      assert.throws(load, (err: unknown) => err instanceof SettingsError && message.test(err.message));
    });
  }

  it('rejects an unknown key in the config file, naming the file', async () => {
    const file = await configFile('prot: 1\n');
    assert.throws(
      () => loadSettings(['--config', file], {}),
      (err: unknown) => err instanceof SettingsError && err.message.includes('prot') && err.message.includes(file),
    );
  });

  it('rejects a config file that is not a YAML mapping', async () => {
    const file = await configFile('- a\n- b\n');
    assert.throws(() => loadSettings(['--config', file], {}), /must be a YAML mapping/);
  });
});
