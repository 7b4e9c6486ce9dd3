// The README is the operator's reference: it must name every setting and the two commands CI runs.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { it } from 'node:test';
import { settingsReference } from '../../src/config.ts';

const readme = await readFile('README.md', 'utf8');

it('README documents every setting with its YAML key, flag and environment variable', () => {
  for (const r of settingsReference()) {
    assert.ok(readme.includes(`| \`${r.key}\` | \`${r.flag}\` | \`${r.env}\` |`), `README lacks the row for ${r.key}`);
  }
});

it('README gives the two commands that .ci/run runs', async () => {
  assert.match(readme, /npm ci && npm start/);
  assert.match(readme, /npm ci && npm test/);
  const ci = await readFile('.ci/run', 'utf8');
  assert.match(ci, /^npm ci$/m);
  assert.match(ci, /^npm test$/m);
});
