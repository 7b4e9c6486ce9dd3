// The production path: HTTPS with the cluster CA verified, as a real kubeconfig has it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KubeSource } from '../../../src/cluster/kube/source.ts';
import { KubeWriter } from '../../../src/cluster/kube/writer.ts';
import { loadKubeConfig } from '../../../src/cluster/kubeconfig.ts';
import { ClusterStore } from '../../../src/cluster/store.ts';
import { WriteError } from '../../../src/cluster/writer.ts';
import { tempDir } from '../../helpers/temp-dir.ts';
import { FakeApiServer, writeKubeconfig } from './fake-apiserver.ts';
import { node, pod, waitFor } from './helpers.ts';

/** A self-signed certificate for 127.0.0.1, or undefined when openssl is not installed. */
async function selfSigned(): Promise<{ key: string; cert: string } | undefined> {
  const dir = await tempDir('fake-tls-');
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=fake-apiserver',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
  } catch {
    return undefined;
  }
  return { key: await readFile(join(dir, 'key.pem'), 'utf8'), cert: await readFile(join(dir, 'cert.pem'), 'utf8') };
}

const pem = await selfSigned();

describe('over HTTPS with the CA verified', { skip: pem ? false : 'openssl not installed' }, () => {
  let server: FakeApiServer;
  before(async () => {
    server = new FakeApiServer({ tls: pem, bookmarkIntervalMs: 50 });
    await server.start();
    server.add(node('node-a'), node('node-b'), node('node-c'), pod('web'));
  });
  after(() => server.stop());

  test('the source syncs and watches, and the writer binds', async () => {
    const kubeConfig = loadKubeConfig({ kubeconfig: await writeKubeconfig(server.url, undefined, pem!.cert) });
    const store = new ClusterStore();
    const source = new KubeSource({ kubeConfig, pageSize: 1, kinds: ['Node', 'Pod'] });
    await source.start(store);
    try {
      assert.equal(store.count('Node'), 3);
      const writer = new KubeWriter({ kubeConfig });
      const p = server.get('Pod', 'web', 'default')!;
      await writer.bindPod({ namespace: 'default', name: 'web', uid: p.metadata.uid! }, 'node-b');
      await waitFor('the binding seen by the watch', () => store.get('Pod', 'default/web')?.spec.nodeName === 'node-b');
    } finally {
      await source.stop();
    }
  });

  test('a server certificate the CA does not vouch for is refused', async () => {
    const other = await selfSigned();
    const kubeConfig = loadKubeConfig({ kubeconfig: await writeKubeconfig(server.url, undefined, other!.cert) });
    const writer = new KubeWriter({ kubeConfig, retries: 0 });
    await assert.rejects(writer.getPod('default', 'web'), (err: unknown) => {
      assert.ok(err instanceof WriteError);
      assert.equal(err.reason, 'NetworkError');
      assert.match(err.message, /certificate/);
      return true;
    });
  });
});
