// Test PKI made at test time: a CA and certificates it signs, as PEM. Keys come from node:crypto (fast, native);
// node-forge only assembles and signs the X.509 certificates.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import forge from 'node-forge';

export interface Pem {
  cert: string;
  key: string;
}

function keyPair() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const key = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const forgeKey = forge.pki.privateKeyFromPem(key) as forge.pki.rsa.PrivateKey;
  return { key, forgeKey, publicKey: forge.pki.setRsaPublicKey(forgeKey.n, forgeKey.e) };
}

function certificate(
  commonName: string,
  publicKey: forge.pki.PublicKey,
  issuer: { cert: forge.pki.Certificate | null; key: forge.pki.rsa.PrivateKey },
  extensions: object[],
): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  cert.serialNumber = `01${randomBytes(8).toString('hex')}`;
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 24 * 3600_000);
  cert.setSubject([{ name: 'commonName', value: commonName }]);
  cert.setIssuer(issuer.cert ? issuer.cert.subject.attributes : [{ name: 'commonName', value: commonName }]);
  cert.setExtensions(extensions);
  cert.sign(issuer.key, forge.md.sha256.create());
  return cert;
}

export class TestCa {
  readonly pem: string;
  readonly #cert: forge.pki.Certificate;
  readonly #key: forge.pki.rsa.PrivateKey;

  constructor(name = 'test-ca') {
    const { forgeKey, publicKey } = keyPair();
    this.#key = forgeKey;
    this.#cert = certificate(name, publicKey, { cert: null, key: forgeKey }, [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ]);
    this.pem = forge.pki.certificateToPem(this.#cert);
  }

  /** A server certificate for localhost and 127.0.0.1. */
  server(commonName = 'localhost'): Pem {
    return this.#issue(commonName, { serverAuth: true }, [
      { type: 2, value: 'localhost' },
      { type: 7, ip: '127.0.0.1' },
    ]);
  }

  /** A client certificate, as kube-scheduler's tlsConfig.certFile would be. */
  client(commonName = 'kube-scheduler'): Pem {
    return this.#issue(commonName, { clientAuth: true }, []);
  }

  #issue(commonName: string, usage: object, altNames: object[]): Pem {
    const { key, publicKey } = keyPair();
    const extensions: object[] = [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', ...usage },
    ];
    if (altNames.length > 0) extensions.push({ name: 'subjectAltName', altNames });
    const cert = certificate(commonName, publicKey, { cert: this.#cert, key: this.#key }, extensions);
    return { cert: forge.pki.certificateToPem(cert), key };
  }
}
