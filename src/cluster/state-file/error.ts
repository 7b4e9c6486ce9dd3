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
