// A recording proxy between kube-scheduler and the extender: the tests assert on the verb calls the extender received
// (which pod, how many nodes, what it answered) without reading the extender's logs, and can take the extender away
// (a restart) while kube-scheduler keeps the same URL.
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '../cluster/kube/helpers.ts';

export interface VerbCall {
  verb: string;
  /** namespace/name of the pod the call is about. */
  pod: string;
  /** Candidate nodes sent (filter, prioritize, preempt), by name or as Node objects. */
  nodes: number;
  /** Full Node objects were sent (nodeCacheCapable: false). */
  fullNodes: boolean;
  /** preempt: the candidates sent, node → victim UIDs (from NodeNameToMetaVictims or the pods of NodeNameToVictims). */
  victims?: Record<string, string[]>;
  status: number;
  /** The extender's answer, parsed (undefined when it did not answer). */
  answer: unknown;
  /** Answered, or dropped because the extender was not there. */
  done: boolean;
}

export interface VerbRecorder {
  url: string;
  calls: VerbCall[];
  /** Where calls go; changed by a test that restarts the extender. */
  target: string;
  callsFor(pod: string, verb?: string): VerbCall[];
  /** The pod's calls once every one of them has been answered (or dropped). */
  answered(pod: string): Promise<VerbCall[]>;
  stop(): Promise<void>;
}

interface ExtenderArgs {
  Pod?: { metadata?: { name?: string; namespace?: string } };
  NodeNames?: string[] | null;
  Nodes?: { items?: unknown[] } | null;
  NodeNameToMetaVictims?: Record<string, { Pods?: { UID: string }[] | null }> | null;
  NodeNameToVictims?: Record<string, { Pods?: { metadata?: { uid?: string } }[] | null }> | null;
  PodName?: string;
  PodNamespace?: string;
}

/** node → victim UIDs of a preempt request, whichever form it came in. */
function victimsOf(args: ExtenderArgs): Record<string, string[]> | undefined {
  if (args.NodeNameToMetaVictims) {
    const meta = Object.entries(args.NodeNameToMetaVictims);
    return Object.fromEntries(meta.map(([node, v]) => [node, (v.Pods ?? []).map((p) => p.UID)]));
  }
  if (!args.NodeNameToVictims) return undefined;
  const full = Object.entries(args.NodeNameToVictims);
  return Object.fromEntries(full.map(([node, v]) => [node, (v.Pods ?? []).map((p) => p.metadata?.uid ?? '')]));
}

function describeRequest(verb: string, raw: string): Pick<VerbCall, 'pod' | 'nodes' | 'fullNodes' | 'victims'> {
  let args: ExtenderArgs = {};
  try {
    args = JSON.parse(raw) as ExtenderArgs;
  } catch {}
  if (verb === 'bind') return { pod: `${args.PodNamespace}/${args.PodName}`, nodes: 1, fullNodes: false };
  const meta = args.Pod?.metadata ?? {};
  const victims = args.NodeNameToMetaVictims ?? args.NodeNameToVictims;
  const nodes = victims ? Object.keys(victims).length : (args.NodeNames?.length ?? args.Nodes?.items?.length ?? 0);
  return {
    pod: `${meta.namespace ?? 'default'}/${meta.name}`,
    nodes,
    fullNodes: !!args.Nodes?.items,
    ...(verb === 'preempt' ? { victims: victimsOf(args) } : {}),
  };
}

export async function startVerbRecorder(target: string): Promise<VerbRecorder> {
  const calls: VerbCall[] = [];
  const recorder: VerbRecorder = {
    url: '',
    calls,
    target,
    callsFor: (pod, verb) => calls.filter((c) => c.pod === pod && (!verb || c.verb === verb)),
    answered: (pod) =>
      waitFor(`the extender's answers for ${pod}`, () => {
        const mine = recorder.callsFor(pod);
        return mine.every((c) => c.done) ? mine : undefined;
      }),
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const forward = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const verb = (req.url ?? '').replace(/^.*\//, '');
    const call: VerbCall = {
      verb,
      ...describeRequest(verb, body.toString('utf8')),
      status: 0,
      answer: undefined,
      done: false,
    };
    calls.push(call);
    const upstream = request(`${recorder.target}${req.url}`, {
      method: req.method,
      headers: { 'content-type': req.headers['content-type'] ?? 'application/json', 'content-length': body.length },
    });
    upstream.on('response', async (answer) => {
      const parts: Buffer[] = [];
      for await (const chunk of answer) parts.push(chunk as Buffer);
      const text = Buffer.concat(parts).toString('utf8');
      call.status = answer.statusCode ?? 0;
      try {
        call.answer = JSON.parse(text);
      } catch {
        call.answer = text;
      }
      res.writeHead(call.status, { 'content-type': answer.headers['content-type'] ?? 'application/json' });
      res.end(text);
      call.done = true;
    });
    // An extender that is down looks to kube-scheduler like a refused connection: drop ours.
    upstream.on('error', () => {
      call.done = true;
      res.destroy();
    });
    upstream.end(body);
  };

  const server: Server = createServer((req, res) => {
    forward(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  recorder.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return recorder;
}
