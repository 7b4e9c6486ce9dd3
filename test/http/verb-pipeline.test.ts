// Every scheduler verb passes the same pipeline (src/http/verb-pipeline.ts): not synced, queue, client gone, deadline,
// metrics. preempt once skipped the queue: it was computed for clients that had left and never counted as started.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify from 'fastify';
import { type VerbStages, verbPipeline } from '../../src/http/verb-pipeline.ts';
import { VerbQueue } from '../../src/http/verb-queue.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { node, pod } from '../helpers/objects.ts';
import { httpRequest, openSocket, roundTrip } from '../helpers/raw-http.ts';

const p = pod('p', { uid: 'p' });
const BODIES = {
  filter: { Pod: p, Nodes: null, NodeNames: ['node-a', 'node-b'] },
  prioritize: { Pod: p, Nodes: null, NodeNames: ['node-a', 'node-b'] },
  preempt: { Pod: p, NodeNameToMetaVictims: { 'node-a': { Pods: [{ UID: 'x' }], NumPDBViolations: 0 } } },
  bind: { PodName: 'p', PodNamespace: 'default', PodUID: 'p', Node: 'node-a' },
};
const VERBS = Object.keys(BODIES) as (keyof typeof BODIES)[];

const metric = async (t: TestExtender, name: string, labels: string) => {
  const text = (await t.request.get('/metrics')).text;
  const line = new RegExp(`^topology_extender_${name}\\{${labels}\\} (\\d+)$`, 'm');
  return Number(line.exec(text)?.[1] ?? 0);
};

it('a route of the verb table that names no verb fails the build: none can skip the pipeline', async () => {
  const stages: VerbStages = {
    admission: { started: () => {} },
    queue: new VerbQueue({ deadlineMs: 5000 }),
    metrics: {} as VerbStages['metrics'], // never reached: the build fails first
    synced: () => true,
  };
  const app = Fastify();
  const table = verbPipeline(stages, async (verbs) => {
    verbs.post('/forgot', async () => ({}));
  });
  await assert.rejects(
    async () => await app.register(table),
    /POST \/forgot: a verb route names its verb \(config\.verb\)/,
  );
});

describe('every verb waits its turn in the verb queue', () => {
  let t: TestExtender;
  // Every verb waits a few event-loop turns for its turn: all of them are past a deadline of a microsecond.
  before(async () => {
    t = await createTestExtender([node('node-a'), node('node-b'), p], { verbDeadlineSeconds: 1e-6 });
  });
  after(() => t.close());

  it('every verb past its deadline, preempt included, is answered the same 503 uncomputed and counted as dropped', async () => {
    for (const verb of VERBS) {
      const res = await t.request.post(`/scheduler/${verb}`).send(BODIES[verb]);
      assert.equal(res.status, 503, verb);
      assert.deepEqual(Object.keys(res.body), ['statusCode', 'error', 'message'], verb);
      assert.equal(res.body.error, 'Service Unavailable', verb);
      assert.match(
        res.body.message,
        new RegExp(`^${verb}: waited .* past its 0.000001 s deadline \\(verbDeadlineSeconds\\)`),
      );
      assert.equal(await metric(t, 'verb_started_total', `verb="${verb}"`), 0, `${verb} started`);
      assert.equal(await metric(t, 'verb_dropped_total', `verb="${verb}",reason="deadline"`), 1, `${verb} dropped`);
      assert.equal(await metric(t, 'verb_results_total', `verb="${verb}",outcome="dropped"`), 1, `${verb} outcome`);
    }
  });
});

describe('preempt over real sockets', () => {
  let t: TestExtender;
  let port: number;
  before(async () => {
    t = await createTestExtender([node('node-a'), node('node-b'), p]);
    await t.extender.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.extender.app.server.address() as { port: number }).port;
  });
  after(() => t.close());

  const open = () => openSocket(port);

  it('preempt whose client left before its turn is dropped as client_gone like every verb, and not counted as started', async () => {
    // Abandoned preempts and filters interleaved: preempt is to be treated as filter is.
    const burst = 20;
    const verbs = ['preempt', 'filter'] as const;
    const sockets = await Promise.all(Array.from({ length: 2 * burst + 2 }, open));
    for (const s of sockets) assert.match(await roundTrip(s, httpRequest('GET', '/healthz')), /^HTTP\/1.1 200/);
    const counts = async () => {
      const out: Record<string, { started: number; gone: number }> = {};
      for (const verb of verbs) {
        out[verb] = {
          started: await metric(t, 'verb_started_total', `verb="${verb}"`),
          gone: await metric(t, 'verb_dropped_total', `verb="${verb}",reason="client_gone"`),
        };
      }
      return out;
    };
    const before = await counts();
    const real = { preempt: sockets.pop()!, filter: sockets.pop()! };
    // kube-scheduler gave up on these: each request is sent and its connection closed at once.
    sockets.forEach((s, i) => {
      const verb = verbs[i % 2];
      s.end(httpRequest('POST', `/scheduler/${verb}`, JSON.stringify(BODIES[verb])));
    });
    const answers = await Promise.all(
      verbs.map((verb) =>
        roundTrip(real[verb], httpRequest('POST', `/scheduler/${verb}`, JSON.stringify(BODIES[verb]))),
      ),
    );
    for (const answer of answers) assert.match(answer, /^HTTP\/1.1 200/);
    assert.match(answers[0], /"NodeNameToMetaVictims":\{"node-a":/);
    for (const s of Object.values(real)) s.destroy();
    await t.waitFor(() => sockets.every((s) => s.destroyed));
    const after = await counts();
    for (const verb of verbs) {
      const skipped = after[verb].gone - before[verb].gone;
      // Each abandoned verb is skipped in the queue, or never reached a handler (its close was read first).
      assert.ok(skipped >= burst / 2, `only ${skipped} of ${burst} abandoned ${verb}s were skipped`);
      assert.equal(after[verb].started - before[verb].started, 1, `only the real ${verb} was started`);
    }
  });
});
