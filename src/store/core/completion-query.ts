// Validation of completion-log cursors, shared by every backend so they reject the same input the same way.
import { StoreError } from './errors.js';
import type { CompletionQuery } from './types.js';

const DEFAULT_COMPLETIONS_LIMIT = 1000;

export function validateCompletionQuery(query: CompletionQuery): { after: number; limit: number } {
  const after = query.after ?? 0;
  const limit = query.limit ?? DEFAULT_COMPLETIONS_LIMIT;
  if (!Number.isSafeInteger(after) || after < 0) {
    throw new StoreError('invalid_argument', 'after must be a non-negative integer', { param: 'after' });
  }
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new StoreError('invalid_argument', 'limit must be a positive integer', { param: 'limit' });
  }
  return { after, limit };
}
