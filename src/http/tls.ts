// HTTPS for the extender: kube-scheduler's `tlsConfig` (caData/serverName, and certFile/keyFile for mutual TLS).
// Certificates are read from files and re-read when they change, so cert-manager or a Secret rotation reaches a
// running server without a restart: new handshakes get the new context, open connections keep theirs.
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import type { SecureContextOptions, TLSSocket, Server as TlsServer } from 'node:tls';
import { createSecureContext } from 'node:tls';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  /** When set, the protected routes require a client certificate signed by this CA. */
  clientCaFile?: string;
}

function read(file: string, what: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new Error(`cannot read the ${what} ${file}: ${(err as Error).message}`);
  }
}

/** The files as a secure context; throws naming the file when one is unreadable or the pair does not match. */
export function readSecureContext(files: TlsFiles): SecureContextOptions {
  const options: SecureContextOptions = {
    cert: read(files.certFile, 'TLS certificate'),
    key: read(files.keyFile, 'TLS key'),
    ...(files.clientCaFile ? { ca: read(files.clientCaFile, 'client CA') } : {}),
  };
  try {
    createSecureContext(options);
  } catch (err) {
    throw new Error(`cannot use ${files.certFile} with ${files.keyFile}: ${(err as Error).message}`);
  }
  return options;
}

/** Options for http2.createSecureServer: HTTP/2 by ALPN, HTTP/1.1 for older clients and probes. */
export function secureServerOptions(files: TlsFiles) {
  return {
    allowHTTP1: true,
    ...readSecureContext(files),
    // Asked for, checked per route: kubelet's HTTPS probes and Prometheus present no client certificate.
    requestCert: Boolean(files.clientCaFile),
    rejectUnauthorized: false,
  };
}

/**
 * Re-reads the files when one changes (stat polling follows the symlinks Kubernetes swaps on a Secret update).
 * A half-written rotation (new cert, old key) is logged and retried on the next change; the old context stays.
 */
export function reloadOnChange(server: TlsServer, files: TlsFiles, logger: Logger, intervalMs = 1000): () => void {
  const paths = [files.certFile, files.keyFile, files.clientCaFile].filter((p): p is string => Boolean(p));
  const reload = () => {
    try {
      server.setSecureContext(readSecureContext(files));
      logger.info({ certFile: files.certFile }, 'TLS certificates reloaded');
    } catch (err) {
      logger.warn(
        { err: (err as Error).message },
        'TLS certificates changed but cannot be used yet; keeping the old ones',
      );
    }
  };
  for (const p of paths) watchFile(p, { persistent: false, interval: intervalMs }, reload);
  return () => {
    for (const p of paths) unwatchFile(p, reload);
  };
}

/** onRequest hook: 401 unless the connection presented a client certificate that the client CA verified. */
export async function requireClientCertificate(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  // For HTTP/2 requests `socket` is a proxy to the session's TLS socket: the same fields answer.
  const socket = request.raw.socket as TLSSocket;
  if (socket.authorized) return;
  const presented = Object.keys(socket.getPeerCertificate()).length > 0;
  const why = presented ? String(socket.authorizationError) : 'no client certificate was presented';
  await reply.code(401).send({
    statusCode: 401,
    error: 'Unauthorized',
    message: `a client certificate signed by the extender's client CA is required (${why})`,
  });
}
