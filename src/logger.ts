// The logging surface `src/` depends on; app.ts supplies a pino-backed implementation.
// Messages are fixed strings; ids and numbers go in `fields`.

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
  /**
   * Whether `info` lines are written at all; absent means they are. Lets a per-call line be skipped, with the
   * object and the deferred write it costs, when the level leaves it out.
   */
  infoEnabled?(): boolean;
}

/** For tests and library use where no output is wanted. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};
