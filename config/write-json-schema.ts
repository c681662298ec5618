// Writes proxy.config.schema.json (editor completion and validation for proxy.config.json) from configSchema,
// so the two never drift: `npm run config:schema`, then commit the result.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { configSchema } from './schema.js';

export const SCHEMA_FILE = fileURLToPath(new URL('../proxy.config.schema.json', import.meta.url));

/** Input-side schema: keys with defaults are optional, as a user writes the file. */
export function configJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(configSchema, { io: 'input', target: 'draft-2020-12' }),
    title: 'rollgate proxy.config.json',
  };
}

function main(): void {
  writeFileSync(SCHEMA_FILE, `${JSON.stringify(configJsonSchema(), null, 2)}\n`);
  process.stdout.write(`wrote ${SCHEMA_FILE}\n`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main();
