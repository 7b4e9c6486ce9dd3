// Where the credentials come from: kubectl's resolution order, and errors that name the file.
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { describe, test } from 'node:test';
import { KubeConfigError, loadKubeConfig } from '../../src/cluster/kubeconfig.ts';
import { tempDir } from '../helpers/temp-dir.ts';

function config(name: string, server: string, current = true): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{ name: ${name}, cluster: { server: "${server}", certificate-authority: ca.crt } }]`,
    `users: [{ name: ${name}, user: { token: t-${name} } }]`,
    `contexts: [{ name: ${name}, context: { cluster: ${name}, user: ${name} } }]`,
    current ? `current-context: ${name}` : '',
    '',
  ].join('\n');
}

async function dir(): Promise<string> {
  return tempDir('kubeconfig-test-');
}

describe('loadKubeConfig', () => {
  test('an explicit file is used, with relative certificate paths resolved next to it', async () => {
    const d = await dir();
    const file = join(d, 'config');
    await writeFile(file, config('one', 'https://one.example:6443'));
    const kc = loadKubeConfig({ kubeconfig: file, env: {} });
    assert.equal(kc.getCurrentCluster()?.server, 'https://one.example:6443');
    assert.equal(kc.getCurrentCluster()?.caFile, join(d, 'ca.crt'));
  });

  test('an unreadable file is an error naming it', async () => {
    const file = join(await dir(), 'missing');
    assert.throws(
      () => loadKubeConfig({ kubeconfig: file, env: {} }),
      (err: Error) => err instanceof KubeConfigError && err.message.startsWith(`cannot read kubeconfig ${file}:`),
    );
  });

  test('a file that is not a kubeconfig is an error naming it', async () => {
    const file = join(await dir(), 'bad');
    await writeFile(file, 'clusters: [unclosed');
    assert.throws(() => loadKubeConfig({ kubeconfig: file, env: {} }), new RegExp(`invalid kubeconfig ${file}`));
  });

  test('a kubeconfig without a current context says so', async () => {
    const file = join(await dir(), 'config');
    await writeFile(file, config('one', 'https://one.example', false));
    assert.throws(() => loadKubeConfig({ kubeconfig: file, env: {} }), /no current cluster/);
  });

  test('KUBECONFIG files are merged in order, the first value winning; missing ones are skipped', async () => {
    const d = await dir();
    const a = join(d, 'a');
    const b = join(d, 'b');
    await writeFile(a, config('one', 'https://one.example'));
    await writeFile(b, config('two', 'https://two.example'));
    const kc = loadKubeConfig({ env: { KUBECONFIG: [join(d, 'nope'), a, b].join(delimiter) }, home: d });
    assert.equal(kc.getCurrentContext(), 'one');
    assert.deepEqual(
      kc.getContexts().map((c) => c.name),
      ['one', 'two'],
    );
  });

  test('KUBECONFIG naming only missing files is an error listing them', async () => {
    const d = await dir();
    assert.throws(
      () => loadKubeConfig({ env: { KUBECONFIG: join(d, 'x') }, home: d }),
      /none of the KUBECONFIG files exists/,
    );
  });

  test('without KUBECONFIG, ~/.kube/config is used', async () => {
    const home = await dir();
    await mkdir(join(home, '.kube'));
    await writeFile(join(home, '.kube', 'config'), config('home', 'https://home.example'));
    assert.equal(loadKubeConfig({ env: {}, home }).getCurrentCluster()?.server, 'https://home.example');
  });

  test('with nothing to find, the error says what was tried', async () => {
    const home = await dir();
    assert.throws(
      () => loadKubeConfig({ env: {}, home }),
      /no kubeconfig found: KUBECONFIG is unset, .*\.kube\/config/,
    );
  });

  test('in-cluster needs the service environment', () => {
    assert.throws(() => loadKubeConfig({ inCluster: true, env: {} }), /KUBERNETES_SERVICE_HOST/);
    assert.throws(() => loadKubeConfig({ inCluster: true, kubeconfig: 'x', env: {} }), /not both/);
  });
});
