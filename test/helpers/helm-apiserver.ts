// Just enough of a Kubernetes API server for helm to install, upgrade and uninstall this chart against it: version,
// legacy discovery for the kinds the chart renders, and an in-memory object store with create, get, list (label
// selectors), update, patch (server-side apply and merge patch as whole-object writes) and delete. Release records
// are ordinary Secrets, so `lookup` and the release history work across helm processes.
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';

interface Resource {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

const r = (gv: string, plural: string, kind: string, namespaced = true): Resource => {
  const [group, version] = gv.includes('/') ? gv.split('/') : ['', gv];
  return { group, version, plural, kind, namespaced };
};

const RESOURCES: Resource[] = [
  r('v1', 'namespaces', 'Namespace', false),
  r('v1', 'configmaps', 'ConfigMap'),
  r('v1', 'secrets', 'Secret'),
  r('v1', 'services', 'Service'),
  r('v1', 'serviceaccounts', 'ServiceAccount'),
  r('apps/v1', 'deployments', 'Deployment'),
  r('policy/v1', 'poddisruptionbudgets', 'PodDisruptionBudget'),
  r('rbac.authorization.k8s.io/v1', 'clusterroles', 'ClusterRole', false),
  r('rbac.authorization.k8s.io/v1', 'clusterrolebindings', 'ClusterRoleBinding', false),
  r('rbac.authorization.k8s.io/v1', 'roles', 'Role'),
  r('rbac.authorization.k8s.io/v1', 'rolebindings', 'RoleBinding'),
];

export interface StoredObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [k: string]: unknown };
  [k: string]: unknown;
}

const groupVersion = (res: Resource) => (res.group ? `${res.group}/${res.version}` : res.version);

export class HelmApiServer {
  readonly objects = new Map<string, StoredObject>();
  #rv = 1;
  #server = createServer((req, res) => this.#handle(req, res));
  url = '';

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    this.#store(RESOURCES[0], { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-system' } });
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  /** A kubeconfig for this server, written into `dir`. */
  async kubeconfig(dir: string): Promise<string> {
    const file = join(dir, 'kubeconfig');
    await writeFile(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'fake', cluster: { server: this.url } }],
        users: [{ name: 'admin', user: { token: 'fake' } }],
        contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'admin' } }],
        'current-context': 'fake',
      }),
    );
    return file;
  }

  /** Stored objects of a kind (across namespaces). */
  list(kind: string): StoredObject[] {
    return [...this.objects.values()].filter((o) => o.kind === kind);
  }

  #key(res: Resource, name: string, namespace?: string) {
    return `${groupVersion(res)}/${res.plural}/${res.namespaced ? namespace : ''}/${name}`;
  }

  #store(res: Resource, obj: StoredObject, namespace?: string): StoredObject {
    const key = this.#key(res, obj.metadata.name, namespace);
    const old = this.objects.get(key);
    const stored: StoredObject = {
      ...obj,
      apiVersion: groupVersion(res),
      kind: res.kind,
      metadata: {
        ...obj.metadata,
        ...(res.namespaced ? { namespace } : {}),
        uid: (old?.metadata.uid as string | undefined) ?? randomUUID(),
        creationTimestamp: (old?.metadata.creationTimestamp as string | undefined) ?? new Date().toISOString(),
        resourceVersion: String(++this.#rv),
        generation: 1,
      },
    };
    this.objects.set(key, stored);
    return stored;
  }

  #handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const send = (code: number, payload: unknown) => {
        res.writeHead(code, { 'content-type': 'application/json' });
        res.end(JSON.stringify(payload));
      };
      const status = (code: number, reason: string, message: string) =>
        send(code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, message, code });
      try {
        // Bodies of writes are objects; a DELETE's body (DeleteOptions) is not needed.
        const protobuf = (req.headers['content-type'] ?? '').startsWith('application/vnd.kubernetes.protobuf');
        const body =
          req.method === 'DELETE' || raw.length === 0
            ? undefined
            : protobuf
              ? decodeProtobufSecret(raw)
              : (parseYaml(raw.toString('utf8')) as StoredObject);
        this.#route(req, body, send, status, res);
      } catch (err) {
        status(500, 'InternalError', (err as Error).message);
      }
    });
  }

  #route(
    req: IncomingMessage,
    body: StoredObject | undefined,
    send: (code: number, payload: unknown) => void,
    status: (code: number, reason: string, message: string) => void,
    res: ServerResponse,
  ) {
    const url = new URL(req.url ?? '/', 'http://x');
    const parts = url.pathname.split('/').filter(Boolean);
    const method = req.method ?? 'GET';
    if (url.pathname === '/version') return send(200, { major: '1', minor: '35', gitVersion: 'v1.35.2' });
    if (url.pathname === '/openapi/v3') return send(200, { paths: {} });
    if (url.pathname === '/openapi/v2') {
      // An empty protobuf Document: no schemas, so client-side validation has nothing to check against.
      res.writeHead(200, { 'content-type': 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf' });
      return res.end();
    }
    if (url.pathname === '/api') return send(200, { kind: 'APIVersions', versions: ['v1'] });
    if (url.pathname === '/apis') {
      const groups = [...new Set(RESOURCES.filter((x) => x.group).map(groupVersion))].map((gv) => {
        const [name, version] = gv.split('/');
        return { name, versions: [{ groupVersion: gv, version }], preferredVersion: { groupVersion: gv, version } };
      });
      return send(200, { kind: 'APIGroupList', apiVersion: 'v1', groups });
    }
    const [gv, rest] = parts[0] === 'api' ? [parts[1], parts.slice(2)] : [`${parts[1]}/${parts[2]}`, parts.slice(3)];
    if (rest.length === 0) {
      const resources = RESOURCES.filter((x) => groupVersion(x) === gv).map((x) => ({
        name: x.plural,
        singularName: x.kind.toLowerCase(),
        namespaced: x.namespaced,
        kind: x.kind,
        verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
      }));
      if (resources.length === 0) return status(404, 'NotFound', `no group version ${gv}`);
      return send(200, { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv, resources });
    }
    let namespace: string | undefined;
    let path = rest;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      path = rest.slice(2);
    }
    const [plural, name] = path;
    const resource = RESOURCES.find((x) => groupVersion(x) === gv && x.plural === plural);
    if (!resource) return status(404, 'NotFound', `the server could not find the requested resource ${url.pathname}`);
    if (name === undefined) {
      if (method === 'GET') {
        const selector = (url.searchParams.get('labelSelector') ?? '')
          .split(',')
          .filter(Boolean)
          .map((s) => s.split('='));
        const items = [...this.objects.entries()]
          .filter(([k]) => k.startsWith(`${groupVersion(resource)}/${resource.plural}/${namespace ?? ''}`))
          .map(([, o]) => o)
          .filter((o) => selector.every(([k, v]) => o.metadata.labels?.[k] === v));
        return send(200, {
          kind: `${resource.kind}List`,
          apiVersion: groupVersion(resource),
          metadata: { resourceVersion: String(this.#rv) },
          items,
        });
      }
      if (method === 'POST') {
        const obj = body!;
        if (this.objects.has(this.#key(resource, obj.metadata.name, namespace)))
          return status(409, 'AlreadyExists', `${plural} "${obj.metadata.name}" already exists`);
        return send(201, this.#store(resource, obj, namespace));
      }
      return status(405, 'MethodNotAllowed', `${method} on a collection`);
    }
    const key = this.#key(resource, name, namespace);
    const existing = this.objects.get(key);
    switch (method) {
      case 'GET':
        return existing ? send(200, existing) : status(404, 'NotFound', `${plural} "${name}" not found`);
      case 'PUT':
        return existing
          ? send(200, this.#store(resource, body!, namespace))
          : status(404, 'NotFound', `${plural} "${name}" not found`);
      case 'PATCH': {
        const patch = body!;
        const apply = (req.headers['content-type'] ?? '').includes('apply-patch');
        if (!existing && !apply) return status(404, 'NotFound', `${plural} "${name}" not found`);
        // Server-side apply by one manager (helm) owns the whole object: the applied object replaces it.
        const next = apply || !existing ? patch : mergePatch(existing, patch);
        return send(existing ? 200 : 201, this.#store(resource, next as StoredObject, namespace));
      }
      case 'DELETE':
        if (!existing) return status(404, 'NotFound', `${plural} "${name}" not found`);
        this.objects.delete(key);
        return send(200, { kind: 'Status', apiVersion: 'v1', status: 'Success', code: 200 });
      default:
        return status(405, 'MethodNotAllowed', method);
    }
  }
}

type Fields = Map<number, (Buffer | number)[]>;

/** Protobuf wire format, one level: field number -> values (varints as numbers, length-delimited as bytes). */
function protoFields(buf: Buffer): Fields {
  const out: Fields = new Map();
  let i = 0;
  const varint = () => {
    let n = 0;
    let shift = 0;
    let b: number;
    do {
      b = buf[i++];
      n += (b & 0x7f) * 2 ** shift;
      shift += 7;
    } while (b & 0x80);
    return n;
  };
  while (i < buf.length) {
    const tag = varint();
    const [field, wire] = [Math.floor(tag / 8), tag % 8];
    let value: Buffer | number;
    if (wire === 0) value = varint();
    else if (wire === 2) {
      const len = varint();
      value = buf.subarray(i, i + len);
      i += len;
    } else if (wire === 1 || wire === 5) {
      value = buf.subarray(i, i + (wire === 1 ? 8 : 4));
      i += wire === 1 ? 8 : 4;
    } else throw new Error(`protobuf wire type ${wire} not supported`);
    out.set(field, [...(out.get(field) ?? []), value]);
  }
  return out;
}

const str = (f: Fields, n: number) => (f.get(n)?.[0] as Buffer | undefined)?.toString('utf8');
const entries = (f: Fields, n: number, value: (b: Buffer) => string) =>
  Object.fromEntries(
    (f.get(n) ?? []).map((e) => {
      const kv = protoFields(e as Buffer);
      return [str(kv, 1) ?? '', value((kv.get(2)?.[0] as Buffer | undefined) ?? Buffer.alloc(0))];
    }),
  );

/**
 * A Secret as helm's release storage sends it (client-go protobuf: "k8s\0" + runtime.Unknown wrapping v1.Secret),
 * as the JSON object it stands for: name, namespace, labels, annotations, data, type.
 */
function decodeProtobufSecret(body: Buffer): StoredObject {
  const unknown = protoFields(body.subarray(4));
  const secret = protoFields(unknown.get(2)![0] as Buffer);
  const meta = protoFields(secret.get(1)![0] as Buffer);
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: str(meta, 1)!,
      ...(str(meta, 3) ? { namespace: str(meta, 3) } : {}),
      labels: entries(meta, 11, (b) => b.toString('utf8')),
      annotations: entries(meta, 12, (b) => b.toString('utf8')),
    },
    data: entries(secret, 2, (b) => b.toString('base64')),
    type: str(secret, 3) ?? 'Opaque',
  };
}

/** RFC 7386 JSON merge patch. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}
