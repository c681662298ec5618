// Validates a plugin's `options` object with its own zod schema; the error names every bad key.
import type { z } from 'zod';
import { AlgorithmConfigError } from './errors.js';

export function parseAlgorithmOptions<S extends z.ZodType>(schema: S, options: unknown, label: string): z.output<S> {
  const result = schema.safeParse(options ?? {});
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => {
    const path = ['options', ...issue.path.map(String)].join('.');
    return `${path}: ${issue.message}`;
  });
  throw new AlgorithmConfigError(`${label}: invalid options: ${lines.join('; ')}`);
}
