// Shutdown as the process runs it (src/wiring.ts close): past --shutdown-grace-seconds close-with-grace kills the
// process mid-stage, so the stage holding shutdown up must be named while it runs.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { pino } from 'pino';
import { createTestExtender } from './helpers/extender.ts';

test('a shutdown stage still running after a second is named while it runs, so that a kill mid-way says where', {
  timeout: 30_000,
}, async () => {
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
  const t = await createTestExtender([], {}, { logger: pino({ level: 'warn' }, logs) });
  // The watches stop only once shutdown has said it is waiting for them: without that line, close never ends and
  // the test's timeout fails it.
  const stop = t.source.stop.bind(t.source);
  t.source.stop = async () => {
    await named;
    await stop();
  };
  await t.close();
  assert.ok(
    messages.some((m) => /^shutting down: stopping the watches took \d+ ms$/.test(m)),
    `logged: ${messages.join(' | ')}`,
  );
});
