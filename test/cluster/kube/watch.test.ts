// The reflector sets client-node's Watch inactivity timeout through a field client-node declares private. These tests
// fail on a client-node upgrade that renames or stops reading it, before any quiet watch in production would flap.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { Watch } from '@kubernetes/client-node';
import { watchWithInactivityTimeout } from '../../../src/cluster/kube/reflector.ts';
import { loadKubeConfig } from '../../../src/cluster/kubeconfig.ts';
import { FakeApiServer, writeKubeconfig } from './fake-apiserver.ts';

let server: FakeApiServer;
let kubeConfig: ReturnType<typeof loadKubeConfig>;
before(async () => {
  server = new FakeApiServer();
  await server.start();
  kubeConfig = loadKubeConfig({ kubeconfig: await writeKubeconfig(server.url) });
});
after(() => server.stop());

it("client-node's Watch keeps its inactivity timeout in requestTimeoutMs, 30 s by default", () => {
  assert.equal((new Watch(kubeConfig) as unknown as { requestTimeoutMs: number }).requestTimeoutMs, 30_000);
});

it('a watch silent for longer than the timeout the reflector sets ends with a TimeoutError, one on the default does not', async () => {
  const ended: string[] = [];
  const open = (watch: Watch, name: string) =>
    new Promise<Error | null>((resolve) => {
      // No allowWatchBookmarks: the fake API server sends nothing on these streams.
      void watch
        .watch(
          '/api/v1/nodes',
          {},
          () => {},
          (err) => {
            ended.push(name);
            resolve(err);
          },
        )
        .then((controller) => controllers.push(controller));
    });
  const controllers: AbortController[] = [];
  const onDefault = open(new Watch(kubeConfig), 'default');
  const err = await open(watchWithInactivityTimeout(kubeConfig, 200), 'short');
  assert.equal(err?.name, 'TimeoutError');
  assert.deepEqual(ended, ['short'], 'the watch on the 30 s default is still open');
  for (const c of controllers) c.abort();
  await onDefault;
});
