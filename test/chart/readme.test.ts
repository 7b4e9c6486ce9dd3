// The README's Helm section is complete (test/chart/lifecycle.test.ts runs its commands) and its RBAC matches the chart.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { grants, type PolicyRule, parseObjects, renderChart } from '../helpers/chart.ts';

const readme = readFileSync('README.md', 'utf8');
const commands = [...readme.matchAll(/^helm (install|upgrade|get|uninstall) .*$/gm)].map((m) => m[0]);

describe('README Helm commands', () => {
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
});
