// Two plugin sets over one cache: the extender verbs run only the volume plugins (kube-scheduler runs the rest of its
// default profile itself, so the verbs' cost stays the volume plugins'), explain and simulate run the whole default
// profile in kube-scheduler's order around the very same volume plugin objects.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { defaultProfileFramework } from '../../src/ops/profile.ts';
import { DEFAULT_PROFILE_PLUGINS } from '../../src/plugins/default-profile.ts';
import { PLUGIN_NAMES } from '../../src/plugins/names.ts';
import { NODE_RESOURCES_FIT } from '../../src/plugins/node-resources-fit.ts';
import { cluster } from './helpers.ts';

it("the verbs' framework holds the volume plugins and nothing else", () => {
  const { deps } = cluster([]);
  assert.deepEqual(
    deps.framework.plugins.map((p) => p.name),
    [...PLUGIN_NAMES],
  );
});

it("explain's and simulate's profile is the default profile, the volume plugins after NodeResourcesFit, shared", () => {
  const { deps } = cluster([]);
  const profile = defaultProfileFramework(deps).plugins;
  const at = DEFAULT_PROFILE_PLUGINS.indexOf(NODE_RESOURCES_FIT) + 1;
  assert.deepEqual(
    profile.map((p) => p.name),
    [...DEFAULT_PROFILE_PLUGINS.slice(0, at), ...PLUGIN_NAMES, ...DEFAULT_PROFILE_PLUGINS.slice(at)],
  );
  for (const p of deps.framework.plugins) assert.ok(profile.includes(p), `${p.name} is the verbs' own object`);
});
