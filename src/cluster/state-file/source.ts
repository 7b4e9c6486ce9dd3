// The embedded default source: cluster state from a file as `kubectl get -o yaml|json` prints it, watched for edits.
// A reload applies the difference through `store.replace`, so subscribers see add/update/delete events as from a watch;
// a reload that fails is logged and changes nothing.

import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { pino } from 'pino';
import type { Log } from '../../log.ts';
import { compactHeap } from '../compact-heap.ts';
import type { KindStatus, Source } from '../source.ts';
import type { ClusterStore } from '../store.ts';
import { KINDS } from '../types.ts';
import { fileDigest, type ParsedClusterState, type ReadProgress, readClusterState } from './parse.ts';
import { ClusterState } from './state.ts';

export { ClusterStateError } from './error.ts';

const PROGRESS_EVERY_MS = 2000;
const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

export interface ClusterStateSourceOptions {
  file: string;
  logger?: Log;
  /** Reload when the file changes (default true). */
  watch?: boolean;
  /** Quiet period after the last change event before reloading (default 100 ms): editors write in bursts. */
  debounceMs?: number;
}

export class ClusterStateSource implements Source {
  readonly description: string;
  /** The current objects, shared with the cluster-state writer and the simulated volume controller. */
  readonly state = new ClusterState();
  /** The file it serves. */
  readonly file: string;
  readonly #logger: Log;
  readonly #watch: boolean;
  readonly #debounceMs: number;
  #watcher: FSWatcher | undefined;
  #timer: NodeJS.Timeout | undefined;
  #reloads: Promise<void> = Promise.resolve();
  #loaded = false;
  #stopped = false;
  #relists = 0;
  /** A digest of the file last applied, not its text: a cluster-sized file is hundreds of MiB. */
  #appliedDigest: string | undefined;

  constructor(options: ClusterStateSourceOptions) {
    this.file = options.file;
    this.#logger = options.logger ?? pino({ level: 'silent' });
    this.#watch = options.watch ?? true;
    this.#debounceMs = options.debounceMs ?? 100;
    this.description = `cluster-state ${options.file}`;
  }

  /** Loads the file into the store (every kind becomes synced); throws ClusterStateError when the file is unusable. */
  async start(store: ClusterStore): Promise<void> {
    const { parsed, digest } = await this.#read();
    this.state.applyFile(parsed.objects);
    this.#appliedDigest = digest;
    this.#loaded = true;
    this.state.attach(store);
    this.#logger.info(
      { file: this.file, counts: this.#counts(), compacted: compactHeap() },
      'cluster-state file loaded',
    );
    if (this.#watch) this.#startWatching();
  }

  /**
   * Re-reads the file now and applies the difference. Throws ClusterStateError and keeps the current state when the file
   * is unusable. Reloads run one at a time, in call order.
   */
  reload(): Promise<void> {
    const run = this.#reloads.then(() => this.#reloadOnce());
    this.#reloads = run.catch(() => {});
    return run;
  }

  status(): KindStatus[] {
    // The file is read directly: there is no watch that could fall silent or need restarting.
    return KINDS.map((kind) => ({
      kind,
      synced: this.#loaded,
      silentForMs: this.#loaded ? 0 : undefined,
      stale: false,
      relists: this.#relists,
      watchRestarts: 0,
    }));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#watcher?.close();
    this.#watcher = undefined;
    await this.#reloads;
  }

  async #reloadOnce(): Promise<void> {
    if (this.#stopped) return;
    // A touch, or an event for a neighbouring file, changes nothing: compare digests before parsing anything.
    if (this.#stopped || (await fileDigest(this.file)) === this.#appliedDigest) return;
    const { parsed, digest } = await this.#read();
    if (this.#stopped) return;
    this.state.applyFile(parsed.objects);
    this.#appliedDigest = digest;
    this.#relists++;
    this.#logger.info(
      { file: this.file, counts: this.#counts(), compacted: compactHeap() },
      'cluster-state file reloaded',
    );
  }

  async #read(): Promise<{ parsed: ParsedClusterState; digest: string }> {
    const started = performance.now();
    let logged = started;
    const figures = ({ bytes, totalBytes, objects }: ReadProgress, now: number) => {
      const seconds = Math.max((now - started) / 1000, 0.001);
      return {
        file: this.file,
        objects,
        readMiB: mib(bytes),
        totalMiB: mib(totalBytes),
        seconds: Math.round(seconds * 10) / 10,
        mibPerSecond: Math.round((bytes / 2 ** 20 / seconds) * 10) / 10,
        objectsPerSecond: Math.round(objects / seconds),
      };
    };
    let last: ReadProgress | undefined;
    // A cluster-sized file takes seconds to read: say how far it is, every few seconds, rather than stay silent.
    const read = await readClusterState(this.file, (progress) => {
      last = progress;
      const now = performance.now();
      if (now - logged < PROGRESS_EVERY_MS) return;
      logged = now;
      const f = figures(progress, now);
      this.#logger.info(
        f,
        `cluster-state: read ${f.readMiB} of ${f.totalMiB} MiB, ${f.objects} objects (${f.mibPerSecond} MiB/s)`,
      );
    });
    if (last) {
      const f = figures(last, performance.now());
      this.#logger.info(f, `cluster-state: read ${f.objects} objects, ${f.totalMiB} MiB in ${f.seconds} s`);
    }
    for (const [kind, count] of read.parsed.skipped) {
      this.#logger.warn(
        { file: this.file, kind, count },
        `cluster-state: skipping ${count} ${kind} object(s): kind ${kind} is not used for scheduling`,
      );
    }
    return read;
  }

  #startWatching(): void {
    // Watch the directory, not the file: editors save by writing a new file and renaming it over the old one,
    // which would leave a watch on the old inode deaf. A mounted ConfigMap changes by swapping its `..data` symlink.
    const name = basename(this.file);
    this.#watcher = watch(dirname(this.file), (_event, filename) => {
      if (filename === null || filename === name || filename.startsWith('..')) this.#schedule();
    });
    this.#watcher.on('error', (err) =>
      this.#logger.error({ err, file: this.file }, 'cluster-state: watching the file failed'),
    );
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.reload().catch((err: unknown) =>
        this.#logger.error(
          { err, file: this.file },
          `cluster-state reload failed, keeping the current state: ${(err as Error).message}`,
        ),
      );
    }, this.#debounceMs);
  }

  #counts(): Record<string, number> {
    return Object.fromEntries(KINDS.map((kind) => [kind, this.state.count(kind)]));
  }
}
