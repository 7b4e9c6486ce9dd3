// `explain`, `simulate`, `pending` and `storage` on a kubectl dump with no server: a table by default, the route's answer with -o json|yaml,
// the dump taken exactly as written unless --simulate-volume-controller, and bad input named in one line.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { analyze } from '../../src/cli/analyze.ts';
import { loadSettings } from '../../src/config.ts';
import { claim, localPV, node, pod, storageClass } from '../helpers/objects.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const EXAMPLE = 'examples/cluster.yaml';

describe('topology-extender explain', () => {
  it('a cached pod by NAMESPACE/NAME: the summary line and one table row per node', async () => {
    const out = await analyze('explain', ['default/db-0', '--cluster-state', EXAMPLE, '--nodes', 'node-b1,node-b2']);
    const lines = out.split('\n');
    assert.equal(
      lines[0],
      '0/2 nodes are available: 1 Insufficient cpu, 1 node(s) did not have enough free storage. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.',
    );
    assert.match(lines[2], /^NODE\s+VERDICT\s+PLUGIN\s+REASON\s+DETAIL$/);
    assert.match(
      lines[3],
      /^node-b1\s+UnschedulableAndUnresolvable\s+VolumeBinding\s+node\(s\) did not have enough free storage/,
    );
    assert.match(lines[3], /InsufficientCapacity \(CSIStorageCapacity kube-system\/csisc-fast-ssd-eu-west-1b 40Gi\)/);
  });

  it('-o json and -o yaml print the route answer', async () => {
    const json = JSON.parse(await analyze('explain', ['default/web-0', '--cluster-state', EXAMPLE, '-o', 'json']));
    assert.equal(json.pod, 'default/web-0');
    assert.equal(json.totalNodes, 9);
    const yaml = parse(await analyze('explain', ['default/web-0', '--cluster-state', EXAMPLE, '-o', 'yaml']));
    assert.deepEqual(yaml, json);
  });

  it('the dump exactly as written unless --simulate-volume-controller', async () => {
    const dir = await tempDir('analyze-');
    // A claim pre-bound to its PV by the user: the PV controller would complete the binding; as written it is unbound.
    const prebound = claim('data', { className: 'local' });
    prebound.spec.volumeName = 'pv-1';
    const dump = join(dir, 'dump.yaml');
    await writeFile(
      dump,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [node('n1'), storageClass('local'), localPV('pv-1', 'n1'), prebound, pod('app', { claims: ['data'] })],
      }),
    );
    const frozen = await analyze('explain', ['default/app', '--cluster-state', dump]);
    assert.match(
      frozen.split('\n')[0],
      /^0\/1 nodes are available: pod has unbound immediate PersistentVolumeClaims\. not found$/,
    );
    // A fully delegated kube-scheduler counts the extender's per-node answer instead, and goes on to preemption.
    const delegated = await analyze('explain', ['default/app', '--cluster-state', dump, '--delegated-volume-binding']);
    assert.equal(
      delegated.split('\n')[0],
      '0/1 nodes are available: 1 pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.',
    );
    const live = await analyze('explain', ['default/app', '--cluster-state', dump, '--simulate-volume-controller']);
    assert.equal(live.split('\n')[0], '1/1 nodes are available');
  });

  it('bad input: one message naming it', async () => {
    await assert.rejects(analyze('explain', ['--cluster-state', EXAMPLE]), /give the pod: -f FILE or NAMESPACE\/NAME/);
    await assert.rejects(analyze('explain', ['default/db-0', '--cluster-state', EXAMPLE, '-o', 'wide']), /-o must be/);
    await assert.rejects(
      analyze('explain', ['default/nope', '--cluster-state', EXAMPLE]),
      /: pod default\/nope is not in the cluster-state file examples\/cluster\.yaml$/,
    );
    for (const command of ['explain', 'simulate'] as const)
      await assert.rejects(
        analyze(command, ['-f', '/nonexistent.yaml', '--cluster-state', EXAMPLE]),
        /: -f \/nonexistent\.yaml: cannot read the file: it does not exist$/,
      );
    await assert.rejects(
      analyze('explain', ['-f', 'examples', '--cluster-state', EXAMPLE]),
      /-f examples: cannot read the file: it is a directory$/,
    );
    await assert.rejects(
      analyze('explain', ['default/db-0', '-f', 'examples/cluster.yaml', '--cluster-state', EXAMPLE]),
      /give the pod once: -f FILE or NAMESPACE\/NAME, not both/,
    );
    await assert.rejects(analyze('explain', ['x', '--bogus']), /Unknown option '--bogus'/);
  });

  it('a missing -f file: one line saying it does not exist, exit status 1, no stack', async () => {
    for (const command of ['explain', 'simulate']) {
      const run = promisify(execFile)(process.execPath, ['src/main.ts', command, '-f', '/nope.yaml']);
      await assert.rejects(run, (err: { code: number; stdout: string; stderr: string }) => {
        assert.equal(err.code, 1);
        assert.equal(
          err.stderr,
          `topology-extender ${command}: -f /nope.yaml: cannot read the file: it does not exist\n`,
        );
        assert.equal(err.stdout, '');
        return true;
      });
    }
  });
});

describe('topology-extender simulate', () => {
  it('a StatefulSet from -f: replicas placed, and the first that does not fit', async () => {
    const dir = await tempDir('analyze-');
    const file = join(dir, 'sts.yaml');
    await writeFile(
      file,
      `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: default}
spec:
  replicas: 5
  template: {spec: {containers: [{name: nginx, image: nginx}]}}
  volumeClaimTemplates:
  - metadata: {name: www}
    spec: {accessModes: [ReadWriteOnce], storageClassName: local-storage, resources: {requests: {storage: 20Gi}}}
`,
    );
    const out = await analyze('simulate', ['-f', file, '--cluster-state', EXAMPLE]);
    const lines = out.trimEnd().split('\n');
    assert.equal(lines[0], '4/5 replicas placed');
    assert.match(lines[3], /^default\/web-0\s+node-\S+\s+\d+\s+default\/www-web-0 -> local-pv-/);
    assert.equal(
      lines.at(-1),
      "default/web-4 does not fit: 0/9 nodes are available: 9 node(s) didn't find available persistent volumes to bind. preemption: 0/9 nodes are available: 9 Preemption is not helpful for scheduling.",
    );
  });
});

describe('topology-extender pending and storage', () => {
  it("every pending pod: explain's line, its workload, preemption's victims; -o json is the route's answer", async () => {
    const answer = JSON.parse(await analyze('pending', ['--cluster-state', EXAMPLE, '-o', 'json']));
    assert.equal(answer.pods, 7);
    for (const p of answer.items) {
      const line = await analyze('explain', [`${p.namespace}/${p.name}`, '--cluster-state', EXAMPLE, '--limit', '0']);
      assert.equal(p.summary, line.split('\n')[0], p.name);
    }
    const ingest = answer.items.find((p: { name: string }) => p.name.startsWith('ingest-'));
    assert.deepEqual(ingest.preemption, { helps: true, node: 'node-c3', victims: ['batch/etl-worker-0'] });
    assert.equal(ingest.workload, 'Deployment/ingest');
    const table = await analyze('pending', ['--cluster-state', EXAMPLE, '--by', 'workload', '-n', 'default']);
    assert.match(table, /^3\s+-\s+default\/Deployment\/analytics\s+Insufficient cpu$/m);
  });

  it('storage: per class and zone, and per node with --by-node', async () => {
    const view = JSON.parse(await analyze('storage', ['--cluster-state', EXAMPLE, '--by-node', '-o', 'json']));
    const a1 = view.rows.filter((r: { storageClass: string; node: string }) => r.node === 'node-a1');
    assert.deepEqual(
      a1.map((r: { volumes: { available: { count: number }; bound: { count: number } } }) => [
        r.volumes.available.count,
        r.volumes.bound.count,
      ]),
      [[1, 1]],
    );
  });

  it('bad input: one message naming it', async () => {
    await assert.rejects(
      analyze('pending', ['--cluster-state', EXAMPLE, '--by', 'node']),
      /--by must be one of reason, workload, zone, got "node"/,
    );
    await assert.rejects(analyze('storage', ['--cluster-state', EXAMPLE, 'extra']), /storage takes no arguments/);
  });
});

it('simulateVolumeController: --no-simulate-volume-controller and the environment turn it off; default true', () => {
  assert.equal(loadSettings([], {}).simulateVolumeController, true);
  assert.equal(loadSettings(['--no-simulate-volume-controller'], {}).simulateVolumeController, false);
  assert.equal(
    loadSettings([], { TOPOLOGY_EXTENDER_SIMULATE_VOLUME_CONTROLLER: 'false' }).simulateVolumeController,
    false,
  );
});
