// Where a V8 CPU profile (node --cpu-prof, e.g. bench/scheduler-throughput.ts --profile DIR) spent its time: self time
// by area of the extender (verbs, bind, watch decoding, store and cache, logging, HTTP, GC, idle) and the top
// functions, as markdown for bench/RESULTS.md. `--from-ms N` skips the profile's first N ms (the initial list of a
// big cluster) and `--to-ms M` what follows M ms, so that what remains is one burst.
// Run: ./node_modules/.bin/node bench/profile-summary.ts FILE.cpuprofile [--from-ms N] [--to-ms M] [--top 15]
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'from-ms': { type: 'string', default: '0' },
    'to-ms': { type: 'string', default: 'Infinity' },
    top: { type: 'string', default: '15' },
  },
});
if (positionals.length !== 1) {
  console.error('usage: profile-summary.ts FILE.cpuprofile [--from-ms N] [--to-ms M] [--top 15]');
  process.exit(2);
}
const profile = JSON.parse(await readFile(positionals[0], 'utf8')) as CpuProfile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));

/** The area a function belongs to, by its file: the first pattern that matches wins. */
const AREAS: [string, RegExp][] = [
  ['(garbage collector)', /^\(garbage collector\)$/],
  ['(idle)', /^\(idle\)$/],
  ['(program)', /^\(program\)$/],
  ['bind (src/extender/bind, volumes/binder, claim-hold)', /src\/(extender\/bind|volumes\/(binder|claim-hold))\.ts/],
  ['verbs: filter, prioritize (src/extender, plugins, framework)', /src\/(extender|plugins|framework)\//],
  ['volume decisions (src/volumes)', /src\/volumes\//],
  ['scheduler cache (src/cache)', /src\/cache\//],
  ['watch decoding and store (src/cluster)', /src\/cluster\//],
  ['pending report, explain (src/ops)', /src\/ops\//],
  ['HTTP (src/http, fastify, light-my-request)', /src\/http\/|node_modules\/(fastify|@fastify|find-my-way|avvio)/],
  ['logging (pino)', /node_modules\/(pino|sonic-boom|thread-stream)/],
  ['client-node and its HTTP client', /node_modules\/(@kubernetes|node-fetch|undici|ws)|node:internal\/deps\/undici/],
  ['Node internals (streams, net, timers)', /^node:/],
  ['other dependencies', /node_modules\//],
  ['other (src/)', /src\//],
];

function areaOf(frame: CallFrame): string {
  const key = frame.url || frame.functionName;
  if (!frame.url && /^(JSON|parse|stringify)/.test(frame.functionName)) return 'JSON (parse, stringify)';
  for (const [name, pattern] of AREAS) if (pattern.test(key)) return name;
  return frame.url ? 'other' : '(native and builtins)';
}

const from = Number(values['from-ms']) * 1000;
const to = Number(values['to-ms']) * 1000;
let at = 0;
let total = 0;
const selfByArea = new Map<string, number>();
const selfByFunction = new Map<string, number>();
for (let i = 0; i < profile.samples.length; i++) {
  at += profile.timeDeltas[i];
  if (at < from || at > to) continue;
  const delta = profile.timeDeltas[i + 1] ?? 0;
  const frame = byId.get(profile.samples[i])!.callFrame;
  total += delta;
  const area = areaOf(frame);
  selfByArea.set(area, (selfByArea.get(area) ?? 0) + delta);
  const file = frame.url.replace(/^.*\/(src|node_modules)\//, '$1/');
  const fn = `${frame.functionName || '(anonymous)'} ${file ? `${file}:${frame.lineNumber + 1}` : ''}`.trim();
  selfByFunction.set(fn, (selfByFunction.get(fn) ?? 0) + delta);
}
const busy = total - (selfByArea.get('(idle)') ?? 0);
const pct = (us: number, of: number) => `${((100 * us) / of).toFixed(1)} %`;
const ms = (us: number) => `${(us / 1000).toFixed(0)} ms`;
let md = `Profile \`${positionals[0].replace(/^.*\//, '')}\` from ${Number(values['from-ms']) / 1000} s${Number.isFinite(to) ? ` to ${to / 1e6} s` : ''}: ${ms(total)} sampled, ${ms(busy)} busy.\n\n`;
md += '| area | self time | of busy |\n|---|---:|---:|\n';
for (const [area, us] of [...selfByArea].sort((a, b) => b[1] - a[1])) {
  if (area === '(idle)') continue;
  md += `| ${area} | ${ms(us)} | ${pct(us, busy)} |\n`;
}
md += '\n| function (self time) | | of busy |\n|---|---:|---:|\n';
for (const [fn, us] of [...selfByFunction].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
  if (fn.startsWith('(idle)')) continue;
  md += `| \`${fn}\` | ${ms(us)} | ${pct(us, busy)} |\n`;
}
console.log(md);
