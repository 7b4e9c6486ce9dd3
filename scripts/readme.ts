// Rewrites the README's configuration table from the settings schema in src/config.ts; a test checks it is current.
import { readFile, writeFile } from 'node:fs/promises';
import { settingsTable } from '../src/config.ts';

const readme = await readFile('README.md', 'utf8');
const table = /^\| YAML key \|.*\n(?:\|.*\n)*/m;
if (!table.test(readme)) throw new Error('README.md has no configuration table (a line starting "| YAML key |")');
await writeFile('README.md', readme.replace(table, `${settingsTable()}\n`));
process.stdout.write('wrote the configuration table in README.md\n');
