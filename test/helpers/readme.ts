// The README's KubeSchedulerConfiguration examples, as operators copy them.
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

/** Every ```yaml block of README.md that is a whole KubeSchedulerConfiguration, parsed. */
export function readmeSchedulerConfigs(): Record<string, unknown>[] {
  const readme = readFileSync('README.md', 'utf8');
  return [...readme.matchAll(/^```yaml\n([\s\S]*?)^```/gm)]
    .flatMap((m) => parseAllDocuments(m[1]).map((d) => d.toJS() as Record<string, unknown> | null))
    .filter((o): o is Record<string, unknown> => o?.kind === 'KubeSchedulerConfiguration');
}
