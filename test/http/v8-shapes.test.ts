// V8 gives every object built from `{}` a map from one shared root, whose transitions (one per first property name)
// are capped at 1,536. Past the cap every object of a new shape gets a map of its own (at 5,000 nodes: 100,000 maps
// and descriptor arrays, 17 MB, and property reads no inline cache can follow), and some literals a property
// dictionary. ajv's code optimiser names every variable of every compiled validator in such objects, and at the app's
// start it filled the root: every PV, claim and node record trim.ts built from `{}` after that had a map of its own.
// V8's intrinsics need --allow-natives-syntax, so the check runs in a child process.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const helper = fileURLToPath(new URL('../helpers/extender.ts', import.meta.url));
// A shape no code built before: its first property is new to the root's transitions.
const key = `keyNeverSeen${process.pid}x${Date.now()}`;

const CHILD = `
const { createTestExtender } = await import(${JSON.stringify(helper)});
const t = await createTestExtender([]);
const record = {};
record[${JSON.stringify(key)}] = 1;
const twin = {};
twin[${JSON.stringify(key)}] = 2;
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)');
console.log(JSON.stringify({ recordsShareMap: sameMap(record, twin) }));
await t.close();
`;

describe('object shapes after the app has started', () => {
  it("leave room in V8's root map: two records of a shape new after the start share one map", async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--allow-natives-syntax', '--input-type=module', '-e', CHILD],
      { timeout: 60_000 },
    );
    assert.deepEqual(JSON.parse(stdout.trim().split('\n').at(-1)!), { recordsShareMap: true });
  });
});
