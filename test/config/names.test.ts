// One set of names on every surface an operator reads: the README with docs/ and the chart's README, `--help`, the OpenAPI document and the code name
// the volume plugins as kube-scheduler does (the kebab-case spellings only as accepted input) and every setting as
// src/config.ts defines it. A plugin renamed in one place, or a setting added without its flag in --help, fails here.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ClusterStore } from '../../src/cluster/store.ts';
import type { ClusterWriter } from '../../src/cluster/writer.ts';
import { envName, flagName, loadSettings, SETTING_NAMES } from '../../src/config.ts';
import { buildVolumePlugins } from '../../src/plugins/index.ts';
import { PLUGIN_NAMES } from '../../src/plugins/names.ts';
import { docs } from '../helpers/readme.ts';

const surfaces = {
  'README.md, docs/ and the chart README': docs()
    .map((d) => d.text)
    .join('\n'),
  '--help': execFileSync(process.execPath, ['src/main.ts', '--help'], { encoding: 'utf8' }),
  'openapi/openapi.json': readFileSync('openapi/openapi.json', 'utf8'),
};

// Any spelling of the four plugins' names without spaces (CamelCase, kebab, snake, any case). A path is not a plugin
// name: neither plugins/volume-binding.ts nor a code span with a slash (upstream's `volumebinding/binder.go`).
const PATH_SPAN = /`[^`\n]*\/[^`\n]*`/g;
const PLUGIN_SPELLING =
  /(?<![\w/-])(volume[-_]?(?:binding|zone|restrictions)|node[-_]?volume[-_]?limits?)(?![\w-]|\.\w)/gi;

describe('plugin names', () => {
  it('the plugins built by default are the ones PLUGIN_NAMES lists, named as kube-scheduler names them', () => {
    const plugins = buildVolumePlugins({ store: new ClusterStore(), writer: {} as ClusterWriter });
    assert.deepEqual(
      plugins.map((p) => p.name),
      [...PLUGIN_NAMES],
    );
    assert.deepEqual([...PLUGIN_NAMES].sort(), [
      'NodeVolumeLimits',
      'VolumeBinding',
      'VolumeRestrictions',
      'VolumeZone',
    ]);
  });

  for (const [surface, text] of Object.entries(surfaces)) {
    it(`${surface} names every plugin, and only by its upstream name`, () => {
      for (const name of PLUGIN_NAMES) assert.ok(new RegExp(`\\b${name}\\b`).test(text), `${surface} names ${name}`);
      const others = [...text.replace(PATH_SPAN, '').matchAll(PLUGIN_SPELLING)]
        .map((m) => m[1])
        .filter((s) => !PLUGIN_NAMES.includes(s as never));
      assert.deepEqual(others, [], `${surface} spells a plugin another way`);
    });
  }

  it('the kebab-case spellings are accepted as input and mean the upstream names', () => {
    const kebab = ['volume-restrictions', 'node-volume-limits', 'volume-binding', 'volume-zone'];
    assert.deepEqual(loadSettings(['--disabled-plugins', kebab.join(',')], {}).disabledPlugins, [...PLUGIN_NAMES]);
  });
});

describe('setting names', () => {
  it('--help gives every setting with its flag and environment variable', () => {
    for (const key of SETTING_NAMES) {
      assert.match(surfaces['--help'], new RegExp(`--${flagName(key)}\\s+${envName(key)}\\b`), key);
    }
  });

  it('docs/configuration.md names every setting by its config-file key, flag and environment variable', () => {
    const configuration = readFileSync('docs/configuration.md', 'utf8');
    for (const key of SETTING_NAMES) {
      for (const name of [`\`${key}\``, `\`--${flagName(key)}\``, `\`${envName(key)}\``]) {
        assert.ok(configuration.includes(name), `docs/configuration.md names ${name}`);
      }
    }
  });

  for (const [surface, text] of Object.entries(surfaces)) {
    it(`${surface} uses no flag or environment variable of this extender that is not a setting`, () => {
      const envs = new Set(SETTING_NAMES.map(envName));
      const unknownEnvs = [...text.matchAll(/\bTOPOLOGY_EXTENDER_[A-Z0-9_]+\b/g)]
        .map((m) => m[0])
        .filter((e) => !envs.has(e) && e !== 'TOPOLOGY_EXTENDER_');
      assert.deepEqual(unknownEnvs, []);
    });
  }

  it('the OpenAPI document names settings by their config-file keys', () => {
    const doc = surfaces['openapi/openapi.json'];
    const settingLike = [...doc.matchAll(/\b[a-z]+(?:[A-Z][a-z]+)*(?:Seconds|Plugins|Shape|Accounting|Limit|Size)\b/g)]
      .map((m) => m[0])
      .filter((w) => !SETTING_NAMES.includes(w as never));
    assert.deepEqual([...new Set(settingLike)], []);
  });
});
