// The one logger type every component takes: pino, a child of it, or fastify's request logger (pino underneath).
// Where none is given, pino({ level: 'silent' }). createLogger makes the process's root logger: JSON lines for log
// collectors, or one readable line per event for a person at a terminal.
import { type BaseLogger, type Bindings, type Logger, pino } from 'pino';

export interface Log extends Pick<BaseLogger, 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'> {
  child(bindings: Bindings): Log;
}

export const LOG_FORMATS = ['text', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Text on a terminal, JSON where a collector reads the lines (a pipe, a file, a container). */
export function defaultLogFormat(out: { isTTY?: boolean } = process.stdout, env = process.env): LogFormat {
  return out.isTTY && !env.KUBERNETES_SERVICE_HOST ? 'text' : 'json';
}

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
const LEVEL_COLORS: Record<number, string> = { 40: '\x1b[33m', 50: '\x1b[31m', 60: '\x1b[31m' };
// Present on every line (or redundant with the line's own layout): not repeated as key=value.
const IMPLIED = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'service', 'component']);

function fieldText(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value);
}

/**
 * One pino JSON line as `HH:MM:SS.mmm LEVEL [component] message key=value ...`. An error shows its message; its
 * stack only when `withStacks` (the log level is debug or trace).
 */
export function textLine(json: string, withStacks: boolean, color = false): string {
  const entry = JSON.parse(json) as Record<string, unknown>;
  const level = Number(entry.level);
  const time = new Date(Number(entry.time)).toISOString().slice(11, 23);
  let name = (LEVEL_NAMES[level] ?? String(level)).padEnd(5);
  if (color && LEVEL_COLORS[level]) name = `${LEVEL_COLORS[level]}${name}\x1b[0m`;
  const component = entry.component ? `[${entry.component}] ` : '';
  const fields: string[] = [];
  let stack = '';
  for (const [key, value] of Object.entries(entry)) {
    if (IMPLIED.has(key) || value === undefined) continue;
    const err = value as { message?: unknown; stack?: unknown; type?: unknown };
    if ((key === 'err' || key === 'error') && err && typeof err === 'object' && 'message' in err) {
      fields.push(`${key}=${fieldText(err.message)}`);
      if (withStacks && typeof err.stack === 'string') stack = `\n${err.stack.replace(/^/gm, '    ')}`;
      continue;
    }
    fields.push(`${key}=${fieldText(value)}`);
  }
  const msg = typeof entry.msg === 'string' ? entry.msg : '';
  return `${time} ${name} ${component}${msg}${fields.length ? `  ${fields.join(' ')}` : ''}${stack}\n`;
}

export interface LoggerOptions {
  level: string;
  format: LogFormat;
  out?: NodeJS.WritableStream & { isTTY?: boolean };
}

export function createLogger({ level, format, out = process.stdout }: LoggerOptions): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'topology-extender' },
    hooks: {
      // fastify logs "Server listening at" once per address (every interface for 0.0.0.0); main logs "listening"
      // once, with the address as a field.
      logMethod(args, method) {
        if (typeof args[0] === 'string' && args[0].startsWith('Server listening at ')) return;
        method.apply(this, args);
      },
    },
  };
  if (format === 'json') return pino(options);
  const withStacks = level === 'debug' || level === 'trace';
  const color = Boolean(out.isTTY) && !process.env.NO_COLOR;
  return pino(options, { write: (line: string) => out.write(textLine(line, withStacks, color)) });
}
