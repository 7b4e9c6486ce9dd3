// Child process for bench/live/time-to-ready.ts: a fake API server loaded with N nodes and M full pods, on its own
// heap and event loop so serving does not compete with the client's event loop. Prints one JSON line with the URL.
// Usage: node bench/live/fake-server-process.ts NODES PODS
import { FakeApiServer, type FakeObject } from '../../test/e2e/fake-apiserver.ts';
import { syntheticNode, syntheticPod } from './synthetic.ts';

const nodes = Number(process.argv[2] ?? 5_000);
const pods = Number(process.argv[3] ?? 150_000);
const server = new FakeApiServer({ bookmarkIntervalMs: 1_000 });
const started = performance.now();
server.load(
  (function* () {
    for (let i = 0; i < nodes; i++) yield syntheticNode(i) as unknown as FakeObject;
    for (let i = 0; i < pods; i++) {
      const nodeName = i % 50 === 0 ? undefined : `node-${String(i % nodes).padStart(5, '0')}`;
      yield syntheticPod(i, nodeName, { claim: i % 10 === 0 }) as unknown as FakeObject;
    }
  })(),
);
const url = await server.start();
console.log(JSON.stringify({ url, nodes, pods, loadMs: Math.round(performance.now() - started) }));
process.on('SIGTERM', () => {
  server.stop().then(() => process.exit(0));
});
