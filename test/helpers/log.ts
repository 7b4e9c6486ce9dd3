// A real pino logger that remembers what it was told, for the tests that assert what is logged.
import { pino } from 'pino';

export interface LogRecord {
  level: string;
  msg: string;
  /** The fields logged beside the message (an `err` as pino serializes it: type, message, stack). */
  obj: Record<string, unknown>;
}

export function recordingLogger() {
  const records: LogRecord[] = [];
  let waiters: { level: string; resolve: (r: LogRecord) => void }[] = [];
  const write = (line: string) => {
    const { level, msg, ...obj } = JSON.parse(line);
    const record: LogRecord = { level: pino.levels.labels[level], msg: msg ?? '', obj };
    records.push(record);
    const matched = waiters.filter((w) => w.level === record.level);
    waiters = waiters.filter((w) => w.level !== record.level);
    for (const w of matched) w.resolve(record);
  };
  const logger = pino({ level: 'trace', base: undefined, timestamp: false }, { write });
  return Object.assign(logger, {
    records,
    at: (level: string) => records.filter((r) => r.level === level),
    /** The next record of `level` logged from now on. */
    next: (level: string) => new Promise<LogRecord>((resolve) => waiters.push({ level, resolve })),
  });
}

export type RecordingLogger = ReturnType<typeof recordingLogger>;
