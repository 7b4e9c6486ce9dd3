// The operator's reference: docs/configuration.md names every setting, and the README the two commands CI runs.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { it } from 'node:test';
import { settingsTable } from '../../src/config.ts';

const readme = await readFile('README.md', 'utf8');
const configuration = await readFile('docs/configuration.md', 'utf8');

it('docs/configuration.md documents every setting as src/config.ts defines it (regenerate with npm run readme)', () => {
  assert.ok(
    configuration.includes(settingsTable()),
    'the configuration table differs from src/config.ts: npm run readme',
  );
});

it('README gives the two commands that .ci/run runs', async () => {
  assert.match(readme, /npm ci && npm start/);
  assert.match(readme, /npm ci && npm test/);
  const ci = await readFile('.ci/run', 'utf8');
  assert.match(ci, /^npm ci$/m);
  assert.match(ci, /^npm test$/m);
});
