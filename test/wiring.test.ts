// Shutdown as the process runs it (src/wiring.ts close): past --shutdown-grace-seconds close-with-grace kills the
// process mid-stage, so the stage holding shutdown up must be named while it runs.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { pino } from 'pino';
import { ClusterStateSource } from '../src/cluster/state-file/source.ts';
import { ClusterStateWriter } from '../src/cluster/state-file/writer.ts';
import { defaultSettings } from '../src/config.ts';
import { createExtender } from '../src/wiring.ts';
import { tempDir } from './helpers/temp-dir.ts';

test('a shutdown stage still running after a second is named while it runs, so that a kill mid-way says where', {
  timeout: 30_000,
}, async () => {
  const file = join(await tempDir('topology-extender-test-'), 'cluster.json');
  const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } };
  await writeFile(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [namespace] }));
  const source = new ClusterStateSource({ file, watch: false });
  const messages: string[] = [];
  const { promise: named, resolve: nameSeen } = Promise.withResolvers<void>();
  const logs = new Writable({
    write(chunk, _encoding, done) {
      const { msg } = JSON.parse(String(chunk)) as { msg: string };
      messages.push(msg);
      if (msg === 'shutting down: still stopping the watches after 1 s') nameSeen();
      done();
    },
  });
  const extender = await createExtender({
    settings: defaultSettings(),
    source,
    writer: new ClusterStateWriter(source),
    logger: pino({ level: 'warn' }, logs),
  });
  await extender.start();
  // The watches stop only once shutdown has said it is waiting for them: without that line, close never ends and
  // the test's timeout fails it.
  const stop = source.stop.bind(source);
  source.stop = async () => {
    await named;
    await stop();
  };
  await extender.close();
  assert.ok(
    messages.some((m) => /^shutting down: stopping the watches took \d+ ms$/.test(m)),
    `logged: ${messages.join(' | ')}`,
  );
});
