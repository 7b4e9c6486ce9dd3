// docs/operating.md's Helm section is complete (test/chart/lifecycle.test.ts runs its commands), its RBAC matches the
// chart, the chart's own README gives only commands that test runs, and the KubeSchedulerConfigurations of the README
// and docs/ that delegate binding delegate every volume decision (test/chart/kube-scheduler.test.ts loads them into the
// real kube-scheduler).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { PLUGIN_NAMES } from '../../src/plugins/names.ts';
import { CHART, grants, helm, type PolicyRule, parseObjects, renderChart } from '../helpers/chart.ts';
import { readmeSchedulerConfigs } from '../helpers/readme.ts';

const readme = readFileSync('docs/operating.md', 'utf8');
const commands = [...readme.matchAll(/^helm (install|upgrade|get|uninstall) .*$/gm)].map((m) => m[0]);
const chartReadme = readFileSync(`${CHART}/README.md`, 'utf8');

describe('docs/operating.md Helm commands', () => {
  it('gives install (both modes), notes, upgrade and uninstall', () => {
    for (const re of [
      /^helm install .*--namespace kube-system$/m,
      /--set mode=extender/,
      /^helm get notes /m,
      /^helm upgrade /m,
      /^helm uninstall /m,
    ]) {
      assert.ok(
        commands.some((c) => re.test(c)),
        `a command matching ${re}`,
      );
    }
  });

  it("documents in its RBAC section the same grants as the chart's ClusterRole for delegated binding", async () => {
    const section = readme.slice(readme.indexOf('### RBAC'));
    const yaml = section.slice(section.indexOf('```yaml') + 7, section.indexOf('```', section.indexOf('```yaml') + 7));
    const documented = parseObjects(yaml).find((o) => o.kind === 'ClusterRole') as unknown as { rules: PolicyRule[] };
    const chart = (await renderChart(['--set', 'delegateVolumeBinding=true'])).find(
      (o) => o.kind === 'ClusterRole' && o.metadata.name.endsWith('-extender'),
    ) as unknown as { rules: PolicyRule[] };
    assert.deepEqual(grants(documented.rules), grants(chart.rules));
  });

  it("helm show readme prints the chart's README", async () => {
    assert.equal((await helm(['show', 'readme', CHART])).trim(), chartReadme.trim());
  });

  it("the chart's README (helm show readme) gives only commands of docs/operating.md, which lifecycle.test.ts runs", () => {
    const shown = [...chartReadme.matchAll(/^helm .*$/gm)].map((m) => m[0]);
    assert.ok(shown.length >= 3, 'install, notes and upgrade');
    for (const c of shown) assert.ok(commands.includes(c), c);
  });
});

describe("docs/operating.md: the sidecar's effective permissions (mode scheduler: one ServiceAccount for both containers)", () => {
  it("names every role the chart binds to the pod's ServiceAccount", async () => {
    const objects = await renderChart([]);
    const sa = objects.find((o) => o.kind === 'ServiceAccount')?.metadata.name;
    const bound = objects
      .filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding')
      .map((o) => o as unknown as { roleRef: { kind: string; name: string }; subjects: { name: string }[] })
      .filter((b) => b.subjects.some((s) => s.name === sa))
      .map((b) => b.roleRef);
    const start = readme.indexOf("**The sidecar's effective permissions");
    assert.ok(start > 0, 'a paragraph on them');
    const paragraph = readme.slice(start, readme.indexOf('\n\n', start));
    assert.ok(bound.length >= 4);
    for (const role of bound) {
      // The chart's own roles are named after the release; upstream's by their names.
      const shown = role.name.endsWith('-extender')
        ? 'ClusterRole'
        : role.name.endsWith('-leader-election')
          ? 'Lease'
          : `\`${role.name}\``;
      assert.ok(paragraph.includes(shown), `${role.kind} ${role.name}`);
    }
  });
});

describe('KubeSchedulerConfigurations of the README and docs/', () => {
  interface Profile {
    plugins?: Record<string, { enabled?: { name: string }[]; disabled?: { name: string }[] }>;
  }
  const configs = readmeSchedulerConfigs() as { extenders?: { bindVerb?: string }[]; profiles?: Profile[] }[];

  it('include one where the extender binds (bindVerb) and one where kube-scheduler does', () => {
    assert.ok(configs.some((c) => c.extenders?.some((e) => e.bindVerb)));
    assert.ok(configs.some((c) => c.extenders?.length && !c.extenders.some((e) => e.bindVerb)));
  });

  it('with bindVerb, disable in every profile each volume plugin the extender runs, at multiPoint, and enable none again', () => {
    for (const config of configs.filter((c) => c.extenders?.some((e) => e.bindVerb))) {
      assert.ok(config.profiles?.length, 'names its profiles');
      for (const profile of config.profiles ?? []) {
        const off = new Set((profile.plugins?.multiPoint?.disabled ?? []).map((p) => p.name));
        assert.deepEqual(
          PLUGIN_NAMES.filter((n) => !off.has(n)),
          [],
        );
        for (const set of Object.values(profile.plugins ?? {})) {
          assert.ok(!(set.enabled ?? []).some((p) => (PLUGIN_NAMES as readonly string[]).includes(p.name)));
        }
      }
    }
  });
});
