// The pino-backed Logger the composition root hands to every part. JSON lines on stdout (what log shippers
// read); pretty, coloured lines when stdout is a terminal (what a person reads).
import { type DestinationStream, type Logger as Pino, pino } from 'pino';
import type { LogFields, Logger } from './logger.js';

export type LogLevelSetting = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface PinoLoggerOptions {
  readonly level: LogLevelSetting;
  /** Where lines go; defaults to stdout (pretty on a TTY). */
  readonly destination?: DestinationStream;
  readonly name?: string;
}

export function createPinoLogger(options: PinoLoggerOptions): Logger {
  const base = { level: options.level, name: options.name ?? 'rollgate' };
  if (options.destination !== undefined) return wrap(pino(base, options.destination));
  if (process.stdout.isTTY) return wrap(pino({ ...base, transport: { target: 'pino-pretty' } }));
  return wrap(pino(base));
}

function wrap(instance: Pino): Logger {
  return {
    debug: (message: string, fields?: LogFields) => instance.debug(fields ?? {}, message),
    info: (message: string, fields?: LogFields) => instance.info(fields ?? {}, message),
    warn: (message: string, fields?: LogFields) => instance.warn(fields ?? {}, message),
    error: (message: string, fields?: LogFields) => instance.error(fields ?? {}, message),
    child: (fields: LogFields) => wrap(instance.child(fields)),
    infoEnabled: () => instance.isLevelEnabled('info'),
  };
}
