// Errors an algorithm setup raises for the user's mistakes (bad options, missing data, unloadable module).
// Messages name the config key so the user can fix the file without reading code.

export class AlgorithmConfigError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { cause: options?.cause });
    this.name = 'AlgorithmConfigError';
  }
}

/** A run was stopped by its AbortSignal (shutdown, Ctrl-C). */
export class AlgorithmAbortedError extends Error {
  constructor(message = 'algorithm aborted') {
    super(message);
    this.name = 'AlgorithmAbortedError';
  }
}

export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new AlgorithmAbortedError();
}

export function isAbortError(error: unknown): boolean {
  return (
    error instanceof AlgorithmAbortedError ||
    (error instanceof Error && (error.name === 'AbortError' || error.name === 'APIUserAbortError'))
  );
}
