// Shared fixtures for the cluster-state file tests: temp files, and waiting for store events by promise.
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ClusterStore, StoreEvent } from '../../../src/cluster/store.ts';
import type { Kind } from '../../../src/cluster/types.ts';
import { tempDir as scratchDir } from '../../helpers/temp-dir.ts';

export const TIMEOUT_MS = 10_000;

export function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Resolves with the first event of `kind` that satisfies `match`, from now on. */
export function nextEvent<K extends Kind>(
  store: ClusterStore,
  kind: K,
  match: (e: StoreEvent<K>) => boolean = () => true,
): Promise<StoreEvent<K>> {
  let off = () => {};
  const found = new Promise<StoreEvent<K>>((resolve) => {
    off = store.on(kind, (e) => {
      if (match(e)) resolve(e);
    });
  });
  return withTimeout(found, `a ${kind} event`).finally(off);
}

/** Collects every event of the given kinds until stopped. */
export function recordEvents(store: ClusterStore, kinds: readonly Kind[]): { events: StoreEvent[]; stop: () => void } {
  const events: StoreEvent[] = [];
  const offs = kinds.map((k) => store.on(k, (e) => events.push(e)));
  return {
    events,
    stop: () => {
      for (const off of offs) off();
    },
  };
}

export async function tempDir(): Promise<{
  dir: string;
  file: (name: string, text: string) => Promise<string>;
  cleanup: () => Promise<void>;
}> {
  const dir = await scratchDir('cluster-state-test-');
  return {
    dir,
    file: async (name, text) => {
      const path = join(dir, name);
      await writeFile(path, text);
      return path;
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

export const NODE_A = `apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels:
    kubernetes.io/hostname: node-a
    topology.kubernetes.io/zone: zone-a
status:
  allocatable:
    cpu: "4"
    memory: 8Gi
    pods: "110"
`;

export const POD_WEB = `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
spec:
  containers:
  - name: web
    image: nginx
    resources:
      requests:
        cpu: 100m
`;
