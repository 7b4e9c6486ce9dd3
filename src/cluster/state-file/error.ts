// A cluster-state file the loader cannot trust. The message names the file, the object and what is wrong,
// because the CLI prints it as the whole explanation before exiting 1.

export class ClusterStateError extends Error {
  readonly file: string;
  constructor(file: string, message: string) {
    super(`${file}: ${message}`);
    this.name = 'ClusterStateError';
    this.file = file;
  }
}

const REASONS: Record<string, string> = {
  ENOENT: 'it does not exist',
  EACCES: 'permission denied',
  EISDIR: 'it is a directory',
};

/** Why a file could not be read, in words (`it does not exist`) rather than errno's (`ENOENT: no such file ...`). */
export const unreadableReason = (err: unknown): string =>
  REASONS[(err as NodeJS.ErrnoException).code ?? ''] ?? (err as Error).message;
