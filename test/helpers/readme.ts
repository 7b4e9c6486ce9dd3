// The operator's documentation as tests read it: README.md, then the pages under docs/ and the chart's README, and the
// KubeSchedulerConfiguration examples in them, as operators copy them.
import { readdirSync, readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

/** README.md first, then docs/*.md by name, then the chart's README: the order their examples run in. */
export const DOC_FILES: readonly string[] = [
  'README.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
  'charts/topology-extender/README.md',
];

/** Each documentation file with its text, in DOC_FILES' order. */
export function docs(): { file: string; text: string }[] {
  return DOC_FILES.map((file) => ({ file, text: readFileSync(file, 'utf8') }));
}

/** Every ```yaml block of the documentation that is a whole KubeSchedulerConfiguration, parsed. */
export function readmeSchedulerConfigs(): Record<string, unknown>[] {
  return docs()
    .flatMap(({ text }) => [...text.matchAll(/^```yaml\n([\s\S]*?)^```/gm)])
    .flatMap((m) => parseAllDocuments(m[1]).map((d) => d.toJS() as Record<string, unknown> | null))
    .filter((o): o is Record<string, unknown> => o?.kind === 'KubeSchedulerConfiguration');
}
