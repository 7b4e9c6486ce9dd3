// The live source against the fake API server, through the real client-node transport and Watch.
import assert from 'node:assert/strict';
import { after, afterEach, beforeEach, describe, test } from 'node:test';
import pkg from '../../../package.json' with { type: 'json' };
import { KubeSource, type KubeSourceOptions } from '../../../src/cluster/kube/source.ts';
import { loadKubeConfig } from '../../../src/cluster/kubeconfig.ts';
import type { StoreEvent } from '../../../src/cluster/store.ts';
import { ClusterStore } from '../../../src/cluster/store.ts';
import { KINDS } from '../../../src/cluster/types.ts';
import { type RecordingLogger, recordingLogger } from '../../helpers/log.ts';
import { FakeApiServer, writeKubeconfig } from './fake-apiserver.ts';
import { node, pod, storageObjects, waitFor, workloadObjects } from './helpers.ts';

interface Harness {
  server: FakeApiServer;
  store: ClusterStore;
  source: KubeSource;
  logger: RecordingLogger;
}

const running: Harness[] = [];

async function harness(
  seed: (server: FakeApiServer) => void,
  options: Partial<KubeSourceOptions> = {},
  serverOptions: ConstructorParameters<typeof FakeApiServer>[0] = {},
): Promise<Harness> {
  const server = new FakeApiServer({ bookmarkIntervalMs: 50, ...serverOptions });
  await server.start();
  seed(server);
  const kubeConfig = loadKubeConfig({ kubeconfig: await writeKubeconfig(server.url) });
  const logger = recordingLogger();
  const source = new KubeSource({
    kubeConfig,
    logger,
    pageSize: 2,
    // The source's own default: only the tests about staleness set a short threshold, and they silence the watches
    // themselves, so a slow machine never turns a watch stale (and logs a warning) in the others.
    staleAfterMs: 60_000,
    backoff: { initialMs: 20, maxMs: 200, jitter: 0.2 },
    ...options,
  });
  const h = { server, store: new ClusterStore(), source, logger };
  running.push(h);
  return h;
}

afterEach(async () => {
  for (const h of running.splice(0)) {
    const before = h.logger.records.length;
    await h.source.stop();
    // Stopping is quiet: no errors and no warnings, whatever state the watches were in.
    assert.deepEqual(
      h.logger.records.slice(before).filter((r) => r.level === 'error' || r.level === 'warn'),
      [],
    );
    assert.deepEqual(h.logger.at('error'), []);
    await h.server.stop();
  }
});
after(() => {
  assert.equal(running.length, 0);
});

const nodeNames = (store: ClusterStore) => [...store.list('Node')].map((n) => n.metadata.name).sort();

describe('KubeSource', () => {
  let h: Harness;

  describe('initial list', () => {
    beforeEach(async () => {
      h = await harness((s) => {
        s.add(node('node-a'), node('node-b'), node('node-c'), node('node-d'), node('node-e'));
        s.add(pod('web-1', { nodeName: 'node-a' }), pod('web-2'), pod('db-1', { namespace: 'data' }));
        s.add(...storageObjects());
      });
      await h.source.start(h.store);
    });

    test('start resolves once every kind is listed, and every kind counts as synced', () => {
      assert.deepEqual(h.store.unsyncedKinds(), []);
      assert.deepEqual(
        h.source.status().map((s) => s.kind),
        [...KINDS],
      );
      for (const s of h.source.status()) {
        assert.equal(s.synced, true, s.kind);
        assert.equal(s.stale, false, s.kind);
        assert.equal(s.relists, 0, s.kind);
      }
      assert.deepEqual(nodeNames(h.store), ['node-a', 'node-b', 'node-c', 'node-d', 'node-e']);
      assert.equal(h.store.count('Pod'), 3);
      for (const kind of KINDS) assert.ok(h.store.count(kind) >= 1, kind);
    });

    test('Services and controllers are kept as namespace, name and selector only (tens of thousands of ReplicaSets), Namespaces as their labels', () => {
      const rs = h.store.get('ReplicaSet', 'default/web-7d9f8')!;
      assert.deepEqual(
        { ...rs, metadata: { name: rs.metadata.name, namespace: rs.metadata.namespace } },
        {
          metadata: { name: 'web-7d9f8', namespace: 'default' },
          spec: { selector: { matchLabels: { app: 'web', 'pod-template-hash': '7d9f8' } } },
        },
      );
      assert.deepEqual(Object.keys(rs.metadata).sort(), ['name', 'namespace', 'resourceVersion', 'uid']);
      assert.deepEqual(h.store.get('Service', 'default/web')!.spec, { selector: { app: 'web' } });
      assert.deepEqual(h.store.get('ReplicationController', 'default/legacy')!.spec, { selector: { app: 'legacy' } });
      assert.deepEqual(h.store.get('StatefulSet', 'data/db')!.spec, { selector: { matchLabels: { app: 'db' } } });
      const ns = h.store.get('Namespace', 'data')!;
      assert.deepEqual(Object.keys(ns).sort(), ['metadata']);
      assert.deepEqual(ns.metadata.labels, { 'kubernetes.io/metadata.name': 'data', team: 'db' });
    });

    test('lists are paginated with limit and continue', () => {
      const nodeLists = h.server.requests.filter((r) => r.path === '/api/v1/nodes' && !r.watch);
      assert.equal(nodeLists.length, 3); // 5 nodes in pages of 2
      assert.ok(nodeLists.every((r) => r.query.limit === '2'));
      assert.equal(nodeLists[0].query.continue, undefined);
      assert.ok(nodeLists[1].query.continue);
    });

    test('watches ask for bookmarks from the list resourceVersion', async () => {
      const watch = await waitFor('a node watch', () =>
        h.server.requests.find((r) => r.path === '/api/v1/nodes' && r.watch),
      );
      assert.equal(watch.query.allowWatchBookmarks, 'true');
      assert.ok(Number(watch.query.resourceVersion) > 0);
      assert.ok(Number(watch.query.timeoutSeconds) >= 300);
    });

    test("lists and watches carry the kubeconfig's credentials", () => {
      assert.ok(h.server.requests.length > 0);
      assert.ok(h.server.requests.every((r) => r.authorization === 'Bearer fake-token'));
    });

    test('lists and watches identify the extender: User-Agent topology-extender/<package.json version>', async () => {
      await waitFor('a watch', () => h.server.requests.find((r) => r.watch));
      assert.ok(h.server.requests.some((r) => !r.watch));
      assert.deepEqual(
        new Set(h.server.requests.map((r) => r.userAgent)),
        new Set([`topology-extender/${pkg.version}`]),
      );
    });

    test('stored objects are trimmed and their timestamps are RFC 3339 strings', () => {
      const p = h.store.get('Pod', 'default/web-1')!;
      assert.equal(typeof p.metadata.creationTimestamp, 'string');
      assert.match(p.metadata.creationTimestamp!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.equal(p.spec.nodeName, 'node-a');
      assert.equal((p as { kind?: string }).kind, undefined);
      const n = h.store.get('Node', 'node-a')!;
      // Ready alone, for explain's lost-node note; its heartbeat would make every node update a change.
      assert.deepEqual(n.status?.conditions, [
        { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
      ]);
    });

    test('watch events reach the store: add, update, delete', async () => {
      h.server.add(node('node-f'));
      await waitFor('node-f added', () => h.store.get('Node', 'node-f'));
      h.server.update({ ...h.server.get('Pod', 'web-2', 'default')!, status: { phase: 'Running' } });
      await waitFor('web-2 running', () => h.store.get('Pod', 'default/web-2')?.status?.phase === 'Running');
      h.server.remove('Node', 'node-b');
      await waitFor('node-b deleted', () => !h.store.get('Node', 'node-b'));
    });

    test('each applied watch event is counted per kind with the size of its JSON; bookmarks are not', async () => {
      const of = (kind: string) => h.source.status().find((s) => s.kind === kind)!;
      const pods = of('Pod');
      const nodes = of('Node');
      const web2 = { ...h.server.get('Pod', 'web-2', 'default')!, status: { phase: 'Running' } };
      h.server.update(web2);
      await waitFor('web-2 running', () => h.store.get('Pod', 'default/web-2')?.status?.phase === 'Running');
      h.server.remove('Pod', 'web-1', 'default');
      await waitFor('web-1 deleted', () => !h.store.get('Pod', 'default/web-1'));
      assert.equal(of('Pod').watchEvents! - pods.watchEvents!, 2);
      // Each line is {"type":…,"object":…}: longer than the object alone.
      assert.ok(of('Pod').watchEventChars! - pods.watchEventChars! > JSON.stringify(web2).length);
      // Bookmarks flow all along (every 50 ms here) and count for nothing.
      const heard = () => Date.now() - of('Node').silentForMs!;
      const since = Date.now();
      await waitFor('a node bookmark', () => heard() > since);
      assert.equal(of('Node').watchEvents, nodes.watchEvents);
    });

    test('bookmarks keep the watch heard and move its resourceVersion on', async () => {
      const before = h.source.status().find((s) => s.kind === 'Node')!;
      assert.ok(before.silentForMs !== undefined);
      h.server.add(pod('unrelated'));
      // After a bookmark, a restarted node watch starts from the newer resourceVersion without replaying anything.
      const rv = String(h.server.resourceVersion);
      const resumedFromBookmark = () =>
        h.server.requests.find((r) => r.path === '/api/v1/nodes' && r.watch && r.query.resourceVersion === rv);
      // End the watches until one resumes from the bookmarked version: on a loaded machine the first bookmark may
      // not have been read yet when a watch ends, and that resumption is simply not the one this test is about.
      const resumed = await waitFor('node watch resumed from the bookmark', async () => {
        await new Promise((r) => setTimeout(r, 200));
        if (resumedFromBookmark()) return resumedFromBookmark();
        const watchesBefore = h.server.requests.filter((r) => r.path === '/api/v1/nodes' && r.watch).length;
        h.server.endWatches();
        await waitFor(
          'node watch restarted',
          () => h.server.requests.filter((r) => r.path === '/api/v1/nodes' && r.watch).length > watchesBefore,
        );
        return resumedFromBookmark();
      });
      assert.ok(resumed);
      // No node changes from here on, so only bookmarks can make the resumed watch heard again (no clock limit).
      const resumedAt = Date.now();
      const nodeHeardAt = () => Date.now() - h.source.status().find((s) => s.kind === 'Node')!.silentForMs!;
      await waitFor('a bookmark heard on the resumed node watch', () => nodeHeardAt() > resumedAt);
    });

    test('stop ends every watch without logging errors', async () => {
      await waitFor('all watches open', () => h.server.watchCount === KINDS.length);
      await h.source.stop();
      await waitFor('watches closed', () => h.server.watchCount === 0);
      assert.deepEqual(h.logger.at('error'), []);
      assert.deepEqual(h.logger.at('warn'), []);
    });
  });

  test('a list that fails is retried with backoff; start still resolves', async () => {
    h = await harness((s) => {
      s.add(node('node-a'));
      s.failNext('/api/v1/nodes', 3, 503);
    });
    await h.source.start(h.store);
    assert.deepEqual(nodeNames(h.store), ['node-a']);
    const warns = h.logger.at('warn').filter((r) => r.msg.startsWith('listing Node failed'));
    assert.equal(warns.length, 3);
    assert.ok(warns.every((w) => typeof (w.obj as { retryInMs?: number }).retryInMs === 'number'));
  });

  test('an analysis-only kind failing with a 5xx does not hold start back; it is retried, warned about once, and listed when it answers', async () => {
    h = await harness((s) => {
      s.add(node('node-a'), ...workloadObjects());
      s.failNext(/^\/api\/v1\/namespaces$/, 1_000_000, 503, 'GET', false);
    });
    await h.source.start(h.store);
    assert.deepEqual(nodeNames(h.store), ['node-a']);
    const namespaces = () => h.source.status().find((s) => s.kind === 'Namespace')!;
    assert.equal(namespaces().synced, false);
    assert.match(namespaces().error ?? '', /^503 /);
    await waitFor('retried', () => h.server.requests.filter((r) => r.path === '/api/v1/namespaces').length >= 3);
    const warns = h.logger.at('warn');
    assert.equal(warns.length, 1, 'one warning, not one per retry');
    assert.match(warns[0].msg, /^cannot list namespaces \(503 [^)]*\): InterPodAffinity's namespaceSelector matched/);
    h.server.clearFailures();
    await waitFor('listed once the server answers', () => namespaces().synced);
    assert.equal(namespaces().error, undefined);
    assert.equal(h.store.count('Namespace'), 1);
  });

  test('410 Gone on the watch relists, and objects that vanished meanwhile are deleted', async () => {
    h = await harness((s) => s.add(node('node-a'), node('node-b')));
    await h.source.start(h.store);
    const events: StoreEvent[] = [];
    h.store.on('Node', (e) => events.push(e));
    await waitFor('node watch open', () => h.server.watchCount === KINDS.length);

    // Changes the client cannot see, then the history is compacted and the stream breaks.
    h.server.silenceWatches(true);
    h.server.remove('Node', 'node-b');
    h.server.add(node('node-c'));
    h.server.compact();
    h.server.dropWatches();
    h.server.silenceWatches(false);

    await waitFor('relisted', () => h.source.status().find((s) => s.kind === 'Node')!.relists === 1);
    assert.deepEqual(nodeNames(h.store), ['node-a', 'node-c']);
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.obj.metadata.name}`),
      ['add node-c', 'delete node-b'],
    );
    assert.ok(h.logger.at('info').some((r) => r.msg.includes('410 Gone')));
    // Watching resumes after the relist.
    h.server.add(node('node-d'));
    await waitFor('node-d after relist', () => h.store.get('Node', 'node-d'));
  });

  test('a dropped watch reconnects with backoff and replays what happened meanwhile', async () => {
    h = await harness((s) => s.add(node('node-a')), { kinds: ['Node'] });
    await h.source.start(h.store);
    await waitFor('node watch open', () => h.server.watchCount === 1);
    h.server.failNext('/api/v1/nodes', 2, 500);
    h.server.dropWatches();
    h.server.add(node('node-b'));
    h.server.remove('Node', 'node-a');
    await waitFor('node-b replayed', () => h.store.get('Node', 'node-b'));
    await waitFor('node-a deletion replayed', () => !h.store.get('Node', 'node-a'));
    await waitFor('fresh after the errors', () => !h.source.status()[0].stale);
    const status = h.source.status()[0];
    assert.equal(status.relists, 0);
    assert.ok(status.watchRestarts >= 1);
    const failures = h.logger.at('warn').filter((r) => r.msg.startsWith('Node watch failed'));
    assert.ok(failures.length >= 2, `expected the drop and the injected 500s to be logged, got ${failures.length}`);
  });

  test('a watch failing again and again is stale before the silence threshold, and fresh once it delivers', async () => {
    h = await harness((s) => s.add(node('node-a')), { kinds: ['Node'], staleAfterMs: 60_000 });
    await h.source.start(h.store);
    await waitFor('watch open', () => h.server.watchCount === 1);
    h.server.failNext('/api/v1/nodes', 1_000, 503, 'GET', true);
    h.server.dropWatches();
    await waitFor('stale after repeated failures', () => h.source.status()[0].stale);
    assert.ok(h.source.status()[0].silentForMs! < 60_000);
    h.server.clearFailures();
    h.server.add(node('node-b'));
    await waitFor('node-b delivered', () => h.store.get('Node', 'node-b'));
    assert.equal(h.source.status()[0].stale, false);
  });

  test('a silent watch is restarted by the watchdog from where it was, and silence alone never makes the kind stale', async () => {
    h = await harness((s) => s.add(node('node-a')), { kinds: ['Node', 'Pod'], staleAfterMs: 300 });
    await h.source.start(h.store);
    await waitFor('watches open', () => h.server.watchCount === 2);
    const lists = () => h.server.requests.filter((r) => !r.watch).length;
    const listed = lists();
    h.server.silenceWatches(true);
    await waitFor('watchdog restarts', () => h.source.status().every((s) => s.watchRestarts >= 3));
    assert.deepEqual(
      h.source.status().map((s) => s.stale),
      [false, false],
      'a quiet kind is not stale',
    );
    assert.equal(lists(), listed, 'restarted watches resume from their resourceVersion: nothing is listed again');
    assert.ok(h.logger.at('info').some((r) => r.msg.includes('silent for more than 300 ms')));
    assert.equal(h.logger.at('warn').length, 0, 'a quiet kind is nothing to warn about');
    h.server.add(node('node-b'));
    h.server.silenceWatches(false);
    await waitFor('node-b delivered', () => h.store.get('Node', 'node-b'));
  });

  test('a watch whose connect hangs is given up by the watchdog, counts as a failure, and stop does not wait for it', async () => {
    h = await harness((s) => s.add(node('node-a')), { kinds: ['Node'], staleAfterMs: 300 });
    await h.source.start(h.store);
    await waitFor('watch open', () => h.server.watchCount === 1);
    const watchRequests = () => h.server.requests.filter((r) => r.watch).length;
    h.server.delay(60_000); // every answer hangs
    h.server.endWatches();
    await waitFor('the hanging connect abandoned and tried again', () => watchRequests() >= 3);
    assert.ok(h.source.status()[0].watchRestarts >= 2);
    await waitFor('stale after unanswered watch requests', () => h.source.status()[0].stale);
    await h.source.stop(); // would hang here for a minute if stop waited for the pending connect
  });

  test('a continue token that expires between pages restarts the list', async () => {
    h = await harness((s) => s.add(node('n1'), node('n2'), node('n3'), node('n4')), { kinds: ['Node'] });
    // Answers are delayed, so the history can be compacted while the second page request is in flight.
    h.server.delay(30);
    const started = h.source.start(h.store);
    await waitFor('second page asked', () =>
      h.server.requests.some((r) => r.path === '/api/v1/nodes' && r.query.continue),
    );
    h.server.compact();
    await started;
    h.server.delay(0);
    assert.deepEqual(nodeNames(h.store), ['n1', 'n2', 'n3', 'n4']);
    assert.ok(h.logger.at('info').some((r) => r.msg.includes('continue token expired')));
  });

  test('the description names the server', async () => {
    h = await harness(() => {});
    assert.equal(h.source.description, `kube ${h.server.url}`);
  });
});
