// The one logger type every component takes: pino, a child of it, or fastify's request logger (pino underneath).
// Where none is given, pino({ level: 'silent' }).
import type { BaseLogger, Bindings } from 'pino';

export interface Log extends Pick<BaseLogger, 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'> {
  child(bindings: Bindings): Log;
}
