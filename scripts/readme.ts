// Rewrites docs/configuration.md's table of settings from the settings schema in src/config.ts; a test checks it is current.
import { readFile, writeFile } from 'node:fs/promises';
import { settingsTable } from '../src/config.ts';

const FILE = 'docs/configuration.md';
const text = await readFile(FILE, 'utf8');
const table = /^\| YAML key \|.*\n(?:\|.*\n)*/m;
if (!table.test(text)) throw new Error(`${FILE} has no configuration table (a line starting "| YAML key |")`);
await writeFile(FILE, text.replace(table, `${settingsTable()}\n`));
process.stdout.write(`wrote the configuration table in ${FILE}\n`);
