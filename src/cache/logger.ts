// The part of a pino logger the cache uses; a silent default keeps tests and tools quiet.
type LogFn = (obj: object, msg?: string) => void;

export interface CacheLogger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}

const noop: LogFn = () => {};

export const SILENT_LOGGER: CacheLogger = { debug: noop, info: noop, warn: noop, error: noop };
