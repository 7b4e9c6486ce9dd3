// The checked-in OpenAPI document is valid and is exactly what the server serves.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, it } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';

let t: TestExtender;
before(async () => {
  t = await createTestExtender([]);
});
after(() => t.close());

it('openapi/openapi.json passes the OpenAPI validator', async () => {
  const doc = JSON.parse(await readFile('openapi/openapi.json', 'utf8'));
  await SwaggerParser.validate(doc);
});

it('openapi/openapi.json matches what the server serves at /openapi.json (run `npm run openapi` after route changes)', async () => {
  const served = await t.request.get('/openapi.json');
  assert.equal(served.status, 200);
  const checkedIn = JSON.parse(await readFile('openapi/openapi.json', 'utf8'));
  assert.deepEqual(served.body, checkedIn);
});

it('documents the four extender verbs and the ops views', async () => {
  const doc = JSON.parse(await readFile('openapi/openapi.json', 'utf8'));
  for (const path of ['/scheduler/filter', '/scheduler/prioritize', '/scheduler/preempt', '/scheduler/bind']) {
    assert.ok(doc.paths[path]?.post, `${path} is documented`);
  }
  for (const path of ['/api/v1/nodes', '/api/v1/nodes/{name}', '/api/v1/pods/assumed', '/api/v1/debug/cache-diff']) {
    assert.ok(doc.paths[path]?.get, `${path} is documented`);
  }
});

it('lists the 400, 413 and 415 answers of every verb', async () => {
  const doc = JSON.parse(await readFile('openapi/openapi.json', 'utf8'));
  for (const verb of ['filter', 'prioritize', 'preempt', 'bind']) {
    const responses = doc.paths[`/scheduler/${verb}`].post.responses;
    for (const status of ['200', '400', '413', '415']) assert.ok(responses[status], `${verb} lists ${status}`);
  }
});

it('serves swagger-ui at /docs', async () => {
  const res = await t.request.get('/docs/').redirects(1);
  assert.equal(res.status, 200);
  assert.match(res.text, /swagger/i);
});
