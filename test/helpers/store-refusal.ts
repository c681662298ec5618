import { StoreError } from '../../src/store/core/errors.js';

/** `code:param` of the StoreError `run` throws, or 'ok' when it throws nothing; any other error propagates. */
export function refusalOf(run: () => unknown): string {
  try {
    run();
  } catch (error: unknown) {
    if (error instanceof StoreError) return `${error.code}:${error.param ?? ''}`;
    throw error;
  }
  return 'ok';
}
