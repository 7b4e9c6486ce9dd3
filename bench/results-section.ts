// bench-helper
// bench/RESULTS.md is written by several benchmarks: results.ts writes the head of the file, and each other benchmark
// owns one section between `<!-- NAME: written by bench/FILE -->` and `<!-- /NAME -->`, which the others keep.
import { readFile, writeFile } from 'node:fs/promises';

const SECTION = /<!-- ([\w.-]+): written by bench\/[^>]*-->[\s\S]*?<!-- \/\1 -->\n?/g;

/** The sections other benchmarks wrote into `text`, by name. */
export function sections(text: string): Map<string, string> {
  return new Map([...text.matchAll(SECTION)].map((m) => [m[1], m[0].endsWith('\n') ? m[0] : `${m[0]}\n`]));
}

/** Replaces (or appends) section `name` of `file` with `markdown`, which carries its own markers. */
export async function writeResultsSection(file: string, name: string, markdown: string): Promise<void> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const body = markdown.endsWith('\n') ? markdown : `${markdown}\n`;
  const existing = sections(text).get(name);
  await writeFile(
    file,
    existing ? text.replace(existing, body) : `${text}${text.endsWith('\n') || !text ? '' : '\n'}\n${body}`,
  );
}
