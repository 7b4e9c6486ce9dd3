// In-process timing of one verb on the local-storage shape (bench/synthetic.ts LOCAL_STORAGE_SHAPE), called directly
// or through app.inject, for profiling: p50/p90/p99 wall time and process CPU per call. Not run by run.ts.
// Scenarios: filter-0, filter-1, filter-3 (500 names; 0, 1 or 2 local + 1 CSI claims), prioritize-3 (filter's
// feasible names), preempt-3 (100 candidates x 3 lower-priority victims). --alloc DIR samples allocations (collected
// ones included) during the timed loop into DIR/alloc.heapprofile. --pods N cycles through N distinct pending pods (8
// by default); --events N applies N PV and claim updates to the store before each call, as a burst's binds bring them
// (their time is not the call's).
// Run: ./node_modules/.bin/node --cpu-prof --cpu-prof-dir=/tmp/prof bench/profile-verbs.ts [--nodes 5000] [--seconds 5]
//        [--scenario filter-3] [--inject] [--alloc DIR] [--pods 8] [--events 0]
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { pino } from 'pino';
import { ClusterStateSource } from '../src/cluster/state-file/source.ts';
import { VolumeController } from '../src/cluster/state-file/volume-controller.ts';
import { ClusterStateWriter } from '../src/cluster/state-file/writer.ts';
import type { Pod } from '../src/cluster/types.ts';
import { applySettings, defaultSettings } from '../src/config.ts';
import { filter } from '../src/extender/filter.ts';
import { preempt } from '../src/extender/preempt.ts';
import { prioritize } from '../src/extender/prioritize.ts';
import type { ExtenderArgs, ExtenderFilterResult } from '../src/extender/wire.ts';
import { createExtender } from '../src/wiring.ts';
import {
  candidateNames,
  generateCluster,
  LOCAL_STORAGE_SHAPE,
  lowerPriorityPodsByNode,
  metaVictims,
} from './synthetic.ts';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '5000' },
    seconds: { type: 'string', default: '5' },
    scenario: { type: 'string', default: 'filter-3' },
    // Sample allocations (collected ones included) during the timed loop; writes <dir>/alloc.heapprofile.
    alloc: { type: 'string' },
    // Through app.inject (routing, JSON parse, schema validation, the verb, serialization; no socket).
    inject: { type: 'boolean', default: false },
    pods: { type: 'string', default: '8' },
    events: { type: 'string', default: '0' },
  },
});
const PODS = Number(values.pods);
const EVENTS = Number(values.events);
const cluster = generateCluster({
  ...LOCAL_STORAGE_SHAPE,
  nodes: Number(values.nodes),
  seed: 1,
  pendingPerKind: Math.max(50, PODS),
});
const dir = await mkdtemp(join(tmpdir(), 'te-prof-'));
const file = join(dir, 'cluster.json');
await writeFile(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: cluster.objects }));
// Preempt's victims: running pods of lower priority than the 3-claim preemptor, by node (as bench/results.ts).
const victimsByNode = lowerPriorityPodsByNode(cluster.objects, cluster.pending.localAndCsi[0].spec.priority ?? 0);
cluster.objects.length = 0;
const source = new ClusterStateSource({ file, watch: false });
const extender = await createExtender({
  settings: applySettings(defaultSettings(), {}, (k) => k),
  source,
  writer: new ClusterStateWriter(source),
  logger: pino({ level: 'silent' }),
  onStore: (store) => new VolumeController(store, source).start(),
});
await extender.start();
await extender.app.ready(); // routes' schemas compiled before anything is timed
await rm(dir, { recursive: true, force: true });
const pods: Record<string, Pod[]> = {
  'filter-3': cluster.pending.localAndCsi,
  'filter-1': cluster.pending.localClaim,
  'filter-0': cluster.pending.noClaims,
  'prioritize-3': cluster.pending.localAndCsi,
  'preempt-3': cluster.pending.localAndCsi,
};
const list = pods[values.scenario as string];
const step = Math.floor(cluster.nodeNames.length / 8);
let bodies = Array.from(
  { length: PODS },
  (_, i) =>
    ({
      Pod: list[i % list.length],
      Nodes: null,
      NodeNames: candidateNames(cluster.nodeNames, 500, (i % 8) * step),
    }) as unknown as ExtenderArgs,
);
const verb: (args: ExtenderArgs, deps: typeof extender.verbs) => unknown = values.scenario?.startsWith('prioritize')
  ? prioritize
  : values.scenario?.startsWith('preempt')
    ? preempt
    : filter;
if (verb === preempt) {
  // 100 candidates with 3 victims each, from each body's window of the node order.
  bodies = bodies.map(
    (b, i) =>
      ({
        Pod: b.Pod,
        NodeNameToVictims: null,
        NodeNameToMetaVictims: metaVictims(cluster.nodeNames, victimsByNode, i * step),
      }) as unknown as ExtenderArgs,
  );
}
if (verb === prioritize) {
  bodies = bodies.map(
    (b) => ({ ...b, NodeNames: (filter(b, extender.verbs) as ExtenderFilterResult).NodeNames }) as ExtenderArgs,
  );
}
const first = verb(bodies[0], extender.verbs) as ExtenderFilterResult;
console.log('answer sample:', JSON.stringify(first).slice(0, 300));
const session = values.alloc ? new Session() : undefined;
const post = (method: string, params?: object) =>
  new Promise<unknown>((resolve, reject) =>
    session!.post(method, params, (err, result) => (err ? reject(err) : resolve(result))),
  );
if (session) {
  session.connect();
  await post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
}
const texts = bodies.map((b) => JSON.stringify(b));
// Collect what loading left behind first: its major GCs would otherwise be charged to the first seconds of calls.
setFlagsFromString('--expose-gc');
(runInNewContext('gc') as () => void)();
// --events: PV and claim updates with a new resourceVersion each, as the watch applies them.
const volumes = [...extender.store.list('PersistentVolume')];
const claims = [...extender.store.list('PersistentVolumeClaim')];
let resourceVersion = 1_000_000_000;
let eventsCpuUs = 0;
const applyEvents = () => {
  const cpuAt = process.cpuUsage();
  for (let e = 0; e < EVENTS; e++) {
    const pvTurn = e % 3 === 0;
    const from = pvTurn ? volumes : claims;
    // Through JSON, as a watch event reaches the store (objects of the shapes JSON.parse and trimming give).
    const updated = JSON.parse(JSON.stringify(from[Math.floor(Math.random() * from.length)]));
    updated.metadata.resourceVersion = String(++resourceVersion);
    if (pvTurn) extender.store.upsert('PersistentVolume', updated as (typeof volumes)[number]);
    else extender.store.upsert('PersistentVolumeClaim', updated as (typeof claims)[number]);
  }
  const used = process.cpuUsage(cpuAt);
  eventsCpuUs += used.user + used.system;
};
const cpuBefore = process.cpuUsage();
const samples: number[] = [];
const end = performance.now() + Number(values.seconds) * 1000;
let i = 0;
while (performance.now() < end) {
  if (EVENTS > 0) applyEvents();
  const t0 = performance.now();
  if (values.inject) {
    const res = await extender.app.inject({
      method: 'POST',
      url: `/scheduler/${values.scenario?.split('-')[0]}`,
      headers: { 'content-type': 'application/json' },
      payload: texts[i++ % texts.length],
    });
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${res.body}`);
  } else {
    verb(bodies[i++ % bodies.length], extender.verbs);
  }
  samples.push(performance.now() - t0);
}
const cpu = process.cpuUsage(cpuBefore);
if (session) {
  const { profile } = (await post('HeapProfiler.stopSampling')) as { profile: unknown };
  await writeFile(join(values.alloc as string, 'alloc.heapprofile'), JSON.stringify(profile));
}
samples.sort((a, b) => a - b);
const q = (p: number) => samples[Math.floor(p * samples.length)].toFixed(3);
console.log(
  `${values.scenario}: ${i} calls, p50 ${q(0.5)} ms, p90 ${q(0.9)} ms, p99 ${q(0.99)} ms, ` +
    `CPU ${((cpu.user + cpu.system - eventsCpuUs) / 1000 / i).toFixed(3)} ms per call` +
    (EVENTS > 0 ? ` (${PODS} pods, ${EVENTS} PV and claim updates before each call, their CPU left out)` : ''),
);
await extender.close();
process.exit(0);
