// bench-helper
// The floor for bench/results.ts: an HTTP server doing only HTTP + JSON on the extender's request bodies, with the
// same framework and body limit, answering each verb in its wire shape without deciding anything (filter keeps every
// candidate, prioritize scores 0). What a verb costs beyond this is the extender's own work.
// Run: ./node_modules/.bin/node bench/floor-server.ts   (prints {"port":N} on stdout when listening)
import Fastify from 'fastify';

interface Args {
  Pod?: unknown;
  Nodes?: { items?: { metadata?: { name?: string } }[] } | null;
  NodeNames?: string[] | null;
}

const app = Fastify({ bodyLimit: 32 * 2 ** 20, keepAliveTimeout: 65_000 });
app.setSerializerCompiler(() => (data) => JSON.stringify(data));
app.post('/scheduler/filter', async (request) => {
  const { Nodes, NodeNames } = request.body as Args;
  return { Nodes: Nodes ?? null, NodeNames: NodeNames ?? null, FailedNodes: {}, FailedAndUnresolvableNodes: {} };
});
app.post('/scheduler/prioritize', async (request) => {
  const { Nodes, NodeNames } = request.body as Args;
  const names = NodeNames ?? (Nodes?.items ?? []).map((n) => n.metadata?.name ?? '');
  return names.map((Host) => ({ Host, Score: 0 }));
});
app.post('/scheduler/preempt', async (request) => {
  const { NodeNameToMetaVictims } = request.body as { NodeNameToMetaVictims?: unknown };
  return { NodeNameToMetaVictims: NodeNameToMetaVictims ?? {} };
});
app.post('/scheduler/bind', async () => ({ Error: '' }));
app.get('/healthz', async () => 'ok');
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
if (!address || typeof address === 'string') throw new Error('no TCP address');
console.log(JSON.stringify({ port: address.port }));
