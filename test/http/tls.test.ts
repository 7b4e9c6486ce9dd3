// HTTPS as kube-scheduler uses it: tlsConfig.caData/serverName to trust us, certFile/keyFile as its client
// certificate when --client-ca-file is set, HTTP/2 negotiated by ALPN, and certificates rotated under a running server.
import assert from 'node:assert/strict';
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import http2 from 'node:http2';
import https from 'node:https';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { loadSettings, SettingsError } from '../../src/config.ts';
import { type Pem, TestCa } from '../helpers/certs.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const ca = new TestCa('extender-ca');
const otherCa = new TestCa('someone-else');
const schedulerCert = ca.client('kube-scheduler');
const strangerCert = otherCa.client('kube-scheduler');
const filterBody = JSON.stringify({ Pod: { metadata: { name: 'p', uid: 'p' } }, Nodes: null, NodeNames: [] });

let dir: string;
let files: { tlsCertFile: string; tlsKeyFile: string; clientCaFile: string };
let ext: TestExtender;
let port: number;

function writeServerCert(pem: Pem) {
  writeFileSync(files.tlsCertFile, pem.cert);
  writeFileSync(files.tlsKeyFile, pem.key);
}

before(async () => {
  dir = await tempDir('tls-test-');
  files = { tlsCertFile: join(dir, 'tls.crt'), tlsKeyFile: join(dir, 'tls.key'), clientCaFile: join(dir, 'ca.crt') };
  writeServerCert(ca.server('first'));
  writeFileSync(files.clientCaFile, ca.pem);
  ext = await createTestExtender([], files);
  await ext.extender.app.listen({ host: '127.0.0.1', port: 0 });
  port = (ext.extender.app.server.address() as { port: number }).port;
});
after(async () => {
  await ext.close();
  await rm(dir, { recursive: true, force: true });
});

/** One HTTP/1.1 request over TLS, trusting the extender's CA as kube-scheduler's caData does. */
function https1(method: string, path: string, client?: Pem): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        servername: 'localhost',
        port,
        method,
        path,
        ca: ca.pem,
        ...client,
        agent: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.end(method === 'POST' ? filterBody : undefined);
  });
}

describe('mutual TLS with --client-ca-file', () => {
  it('refuses a scheduler verb from a client without a certificate', async () => {
    const res = await https1('POST', '/scheduler/filter');
    assert.equal(res.status, 401);
    assert.match(
      JSON.parse(res.body).message,
      /client certificate signed by the extender.s client CA is required \(no client certificate was presented\)/,
    );
  });

  it('refuses a scheduler verb from a client whose certificate another CA signed', async () => {
    const res = await https1('POST', '/scheduler/filter', strangerCert);
    assert.equal(res.status, 401);
  });

  it('refuses the ops API without a client certificate', async () => {
    assert.equal((await https1('GET', '/api/v1/nodes')).status, 401);
  });

  it('serves a scheduler verb to a client whose certificate the client CA signed', async () => {
    const res = await https1('POST', '/scheduler/filter', schedulerCert);
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse(res.body).NodeNames, []);
  });

  it('answers /healthz and /readyz without a client certificate (kubelet probes present none)', async () => {
    assert.equal((await https1('GET', '/healthz')).status, 200);
    assert.equal((await https1('GET', '/readyz')).status, 200);
  });
});

describe('HTTP/2', () => {
  it('negotiates h2 by ALPN and serves the verbs over it', async () => {
    const session = http2.connect(`https://localhost:${port}`, { ca: ca.pem, ...schedulerCert });
    try {
      await new Promise<void>((resolve, reject) => session.once('connect', () => resolve()).once('error', reject));
      assert.equal(session.alpnProtocol, 'h2');
      const stream = session.request({
        ':method': 'POST',
        ':path': '/scheduler/filter',
        'content-type': 'application/json',
      });
      stream.end(filterBody);
      const [status, body] = await new Promise<[number, string]>((resolve, reject) => {
        let status = 0;
        let body = '';
        stream.on('response', (headers) => {
          status = Number(headers[':status']);
        });
        stream.setEncoding('utf8');
        stream.on('data', (c) => {
          body += c;
        });
        stream.on('end', () => resolve([status, body]));
        stream.on('error', reject);
      });
      assert.equal(status, 200);
      assert.deepEqual(JSON.parse(body).NodeNames, []);
    } finally {
      session.close();
    }
  });
});

/** The common name of the certificate the server presents to a new connection. */
function servedCommonName(at = port): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: at, servername: 'localhost', ca: ca.pem }, () => {
      const cn = socket.getPeerCertificate().subject.CN;
      socket.end();
      resolve(String(cn));
    });
    socket.on('error', reject);
  });
}

async function waitForCommonName(expected: string, at = port): Promise<void> {
  // Bounds a hang only: the server polls the files about once a second.
  for (let i = 0; i < 300; i++) {
    if ((await servedCommonName(at)) === expected) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`the server never presented the certificate ${expected}`);
}

describe('certificate rotation', () => {
  it('keeps serving the old certificate while the new files are unusable, then picks up the rotated pair', async () => {
    assert.equal(await servedCommonName(), 'first');
    // A rotation caught half-way: a certificate that does not match the key on disk.
    writeFileSync(files.tlsCertFile, ca.server('half-way').cert);
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal(await servedCommonName(), 'first');
    writeServerCert(ca.server('rotated'));
    await waitForCommonName('rotated');
    const res = await https1('POST', '/scheduler/filter', schedulerCert);
    assert.equal(res.status, 200);
  });
});

describe('certificate rotation in a mounted Secret', () => {
  it('picks up a Secret update, which kubelet makes by swapping the ..data symlink, without a restart', async () => {
    // kubelet's layout: tls.crt -> ..data/tls.crt, ..data -> ..<timestamp>/; an update writes a new timestamped
    // directory and renames a new ..data link over the old one, so the files themselves never change in place.
    const mount = await tempDir('tls-secret-');
    const version = (n: number, pem: Pem) => {
      mkdirSync(join(mount, `..v${n}`));
      writeFileSync(join(mount, `..v${n}`, 'tls.crt'), pem.cert);
      writeFileSync(join(mount, `..v${n}`, 'tls.key'), pem.key);
      symlinkSync(`..v${n}`, join(mount, `..data_tmp`));
      renameSync(join(mount, '..data_tmp'), join(mount, '..data'));
    };
    version(1, ca.server('secret-v1'));
    symlinkSync('..data/tls.crt', join(mount, 'tls.crt'));
    symlinkSync('..data/tls.key', join(mount, 'tls.key'));
    const mounted = await createTestExtender([], {
      tlsCertFile: join(mount, 'tls.crt'),
      tlsKeyFile: join(mount, 'tls.key'),
    });
    try {
      await mounted.extender.app.listen({ host: '127.0.0.1', port: 0 });
      const mountedPort = (mounted.extender.app.server.address() as { port: number }).port;
      assert.equal(await servedCommonName(mountedPort), 'secret-v1');
      version(2, ca.server('secret-v2'));
      await waitForCommonName('secret-v2', mountedPort);
    } finally {
      await mounted.close();
      await rm(mount, { recursive: true, force: true });
    }
  });
});

describe('TLS settings', () => {
  it('requires --tls-cert-file and --tls-key-file together', () => {
    assert.throws(() => loadSettings(['--tls-cert-file', 'a.crt'], {}), SettingsError);
    assert.throws(() => loadSettings(['--tls-key-file', 'a.key'], {}), /go together/);
  });

  it('requires a serving certificate for --client-ca-file', () => {
    assert.throws(() => loadSettings(['--client-ca-file', 'ca.crt'], {}), /--client-ca-file needs --tls-cert-file/);
  });
});
