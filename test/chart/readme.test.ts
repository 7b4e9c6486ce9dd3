// The README's Helm commands, run as written (against no cluster: installs as client-side dry runs).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { grants, helm, type PolicyRule, parseObjects, renderChart } from '../helpers/chart.ts';

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

  for (const command of commands.filter((c) => c.startsWith('helm install '))) {
    it(`runs: ${command}`, async () => {
      const args = command.split(/\s+/).slice(1);
      const out = JSON.parse(await helm([...args, '--dry-run=client', '-o', 'json'])) as {
        manifest: string;
        info: { notes: string };
      };
      assert.ok(parseObjects(out.manifest).some((o) => o.kind === 'Deployment'));
      assert.match(out.info.notes, /topology-scheduler|extenders:/);
    });
  }

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
