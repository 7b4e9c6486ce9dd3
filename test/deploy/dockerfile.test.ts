// The container image cannot be built here (no engine), so its recipe is checked as data: base image, install
// without dev dependencies, the chart's non-root user, an entrypoint that runs in and out of a cluster, and a build
// context that holds what the Dockerfile copies and nothing heavy.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DockerfileParser, type JSONInstruction } from 'dockerfile-ast';
import { parse as parseYaml } from 'yaml';
import { loadSettings } from '../../src/config.ts';
import { CHART, renderChart } from '../helpers/chart.ts';

// CommonJS whose types claim an ES default export: take module.exports as it is.
const dockerignore = createRequire(import.meta.url)(
  '@balena/dockerignore',
) as typeof import('@balena/dockerignore').default;

const dockerfile = DockerfileParser.parse(readFileSync('Dockerfile', 'utf8'));
const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
  bin: Record<string, string>;
  engines: { node: string };
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const instructions = dockerfile.getInstructions();
const lastFrom = instructions.findLastIndex((i) => i.getKeyword() === 'FROM');
const finalStage = instructions.slice(lastFrom);
const args = (keyword: string, stage = finalStage) =>
  stage.filter((i) => i.getKeyword() === keyword).map((i) => i.getArgumentsContent() ?? '');
/** The final stage's ENV KEY=VALUE settings. */
const imageEnv = () =>
  Object.fromEntries(
    args('ENV').flatMap((a) => a.split(/\s+/).map((kv) => kv.split('=') as [string, string])),
  ) as NodeJS.ProcessEnv;

describe('Dockerfile', () => {
  it('builds every stage on the Node 24 LTS slim image that package.json requires', () => {
    const froms = dockerfile.getFROMs().map((f) => f.getImageName() + (f.getImageTag() ? `:${f.getImageTag()}` : ''));
    assert.ok(froms.length >= 2, 'multi-stage');
    for (const image of froms) assert.equal(image, 'node:24-slim');
    assert.equal(pkg.engines.node, '>=24');
  });

  it('installs production dependencies only, in the final stage', () => {
    const runs = args('RUN');
    assert.ok(
      runs.some((r) => /\bnpm ci --omit=dev\b/.test(r)),
      runs.join('\n'),
    );
    for (const r of args('RUN', instructions)) {
      if (/\bnpm (ci|install)\b/.test(r)) assert.match(r, /--omit=dev/, `every install omits dev dependencies: ${r}`);
    }
    // What the server imports at run time must then be a production dependency.
    const sources = readdirSync('src', { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    for (const file of sources) {
      for (const [, spec] of readFileSync(join('src', file), 'utf8').matchAll(/^import [^;]*? from '([^'.][^']*)'/gm)) {
        if (spec.startsWith('node:')) continue;
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
        assert.ok(pkg.dependencies[name], `src/${file} imports ${name}, which is not a production dependency`);
      }
    }
  });

  it('runs as a non-root user, set after the install', () => {
    const user = args('USER').at(-1);
    assert.ok(user, 'a USER in the final stage');
    const uid = user.split(':')[0];
    assert.match(uid, /^\d+$/, 'numeric, so that runAsNonRoot can verify it');
    assert.notEqual(Number(uid), 0);
    const userAt = finalStage.findLastIndex((i) => i.getKeyword() === 'USER');
    const installAt = finalStage.findIndex((i) => i.getKeyword() === 'RUN');
    assert.ok(userAt > installAt);
  });

  it('enters the CLI through the package bin, `serve` by default, without --in-cluster: it runs outside a cluster too', () => {
    const json = (keyword: string) =>
      (finalStage.find((i) => i.getKeyword() === keyword) as JSONInstruction | undefined)
        ?.getJSONStrings()
        .map((s) => s.getJSONValue());
    assert.deepEqual(json('ENTRYPOINT'), ['node', pkg.bin['topology-extender']]);
    const command = json('CMD');
    assert.deepEqual(command, ['serve']);
    // As `docker run IMAGE` starts it: the image's environment, no flags; a cluster-state file makes it runnable.
    const settings = loadSettings([...command.slice(1), '--cluster-state', 'examples/cluster.yaml'], imageEnv());
    assert.equal(settings.inCluster, false);
    assert.equal(settings.host, '0.0.0.0', "reachable through a published port: a container's loopback is its own");
  });

  it("runs as the chart's user, so that the chart's runAsUser and the image agree", async () => {
    const [uid, gid] = (args('USER').at(-1) ?? '').split(':').map(Number);
    const values = parseYaml(readFileSync(`${CHART}/values.yaml`, 'utf8')) as {
      podSecurityContext: { runAsUser: number; runAsGroup: number };
    };
    assert.deepEqual([uid, gid], [values.podSecurityContext.runAsUser, values.podSecurityContext.runAsGroup]);
    const pod = (await renderChart()).find((o) => o.kind === 'Deployment') as unknown as {
      spec: { template: { spec: { securityContext: { runAsUser: number } } } };
    };
    assert.equal(pod.spec.template.spec.securityContext.runAsUser, uid);
  });

  it('copies files that exist and that .dockerignore keeps in the build context', () => {
    const ignore = dockerignore().add(readFileSync('.dockerignore', 'utf8').split('\n'));
    const fromContext = instructions.filter((i) => i.getKeyword() === 'COPY' && !/--from=/.test(i.getTextContent()));
    const sources = fromContext.flatMap((i) =>
      i
        .getArguments()
        .slice(0, -1)
        .map((a) => a.getValue()),
    );
    assert.ok(sources.includes('src/') && sources.includes('bin/'));
    for (const s of sources) {
      assert.ok(existsSync(s), `${s} exists`);
      assert.ok(!ignore.ignores(s.replace(/\/$/, '')), `${s} is in the build context`);
    }
    for (const heavy of ['node_modules', '.git', 'test', 'bench'])
      assert.ok(ignore.ignores(heavy), `${heavy} is left out`);
  });
});
