// Regenerates openapi/openapi.json and openapi/openapi.yaml from the routes the server registers.
// `npm test` fails when the checked-in files drift from what the server serves.
import { mkdir, writeFile } from 'node:fs/promises';
import { renderOpenApi } from '../src/openapi.ts';

const { json, yaml } = await renderOpenApi();
await mkdir('openapi', { recursive: true });
await writeFile('openapi/openapi.json', json);
await writeFile('openapi/openapi.yaml', yaml);
process.stdout.write('wrote openapi/openapi.json and openapi/openapi.yaml\n');
