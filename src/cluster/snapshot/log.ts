// The slice of a pino logger the snapshot mode uses, so tests can pass a recorder and the CLI its pino instance.

export interface SnapshotLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const silentLogger: SnapshotLogger = {
  info() {},
  warn() {},
  error() {},
};
