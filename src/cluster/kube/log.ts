// The slice of a pino logger the live source and writer use; tests pass a recorder, the CLI its pino instance.

export interface KubeLogger {
  debug?(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const silentKubeLogger: KubeLogger = {
  info() {},
  warn() {},
  error() {},
};
