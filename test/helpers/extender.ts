// A whole extender for tests: the cluster state is written to a temporary cluster-state file and served through the
// real cluster-state source and writer, the real cache, plugins, verbs and Fastify app; requests go through supertest.
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Logger, pino } from 'pino';
import supertest from 'supertest';
import { ClusterStateSource } from '../../src/cluster/state-file/source.ts';
import { VolumeController } from '../../src/cluster/state-file/volume-controller.ts';
import { ClusterStateWriter } from '../../src/cluster/state-file/writer.ts';
import type { AnyObject, Kind } from '../../src/cluster/types.ts';
import { applySettings, defaultSettings, type Settings } from '../../src/config.ts';
import { createExtender, type Extender } from '../../src/wiring.ts';
import { capacityAccountingUnderTest } from './capacity-accounting.ts';
import { tempDir } from './temp-dir.ts';

export interface TestExtender {
  request: ReturnType<typeof supertest.agent>;
  extender: Extender;
  source: ClusterStateSource;
  store: Extender['store'];
  cache: Extender['cache'];
  /** Adds or replaces an object as if the cluster changed, and waits until the store has it. */
  add(obj: AnyObject): Promise<void>;
  /** Waits (event-loop turns, bounded) until the predicate holds; throws naming the timeout otherwise. */
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export interface TestExtenderOptions {
  /** Run the simulated volume controller (completes bindings, provisions for selected-node claims). Default true. */
  volumeController?: boolean;
  /** Start the source (list the cluster) before returning. Default true; false leaves `extender.start()` to the test. */
  start?: boolean;
  /** Where the extender logs. Default: silent (or TEST_LOG_LEVEL's level on standard output). */
  logger?: Logger;
}

export async function createTestExtender(
  objects: readonly AnyObject[],
  settings: Partial<Settings> = {},
  options: TestExtenderOptions = {},
): Promise<TestExtender> {
  const dir = await tempDir('topology-extender-test-');
  const file = join(dir, 'cluster.json');
  // A file without objects is refused as a mistake: an empty cluster is a file with only a Namespace (not stored).
  const items = objects.length > 0 ? objects : [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } }];
  await writeFile(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  const source = new ClusterStateSource({ file, watch: false });
  const writer = new ClusterStateWriter(source);
  const extender = await createExtender({
    settings: applySettings(
      { ...defaultSettings(), capacityAccounting: capacityAccountingUnderTest() },
      settings as Record<string, unknown>,
      (k) => k,
    ),
    source,
    writer,
    logger: options.logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    onStore: options.volumeController === false ? undefined : (store) => new VolumeController(store, source).start(),
  });
  if (options.start !== false) await extender.start();
  await extender.app.ready();
  const request = supertest.agent(extender.app.server);
  // Generous: CI machines are shared, and a deadline here only bounds a hang, it measures nothing.
  const waitFor = async (predicate: () => boolean, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  return {
    request,
    extender,
    source,
    store: extender.store,
    cache: extender.cache,
    async add(obj) {
      source.state.commit(obj.kind as Kind, obj);
      await source.state.delivered();
    },
    waitFor,
    async close() {
      await extender.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
