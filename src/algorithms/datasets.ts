// Datasets for algorithms: JSONL files, one task (any JSON value) per non-empty line.
import { readFile } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import type { JsonValue } from '../store/core/types.js';
import { AlgorithmConfigError } from './errors.js';
import type { Datasets } from './types.js';

export function parseJsonl(text: string, source: string): JsonValue[] {
  const tasks: JsonValue[] = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      tasks.push(JSON.parse(line) as JsonValue);
    } catch (error) {
      throw new AlgorithmConfigError(`${source}:${i + 1}: not valid JSON`, { cause: error });
    }
  });
  return tasks;
}

export async function loadJsonl(path: string): Promise<JsonValue[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new AlgorithmConfigError(`cannot read dataset ${path}`, { cause: error });
  }
  return parseJsonl(text, path);
}

/** Loads `data.train` / `data.val`; relative paths are resolved against `baseDir` (the config file's folder). */
export async function loadDatasets(data: { train?: string; val?: string }, baseDir: string): Promise<Datasets> {
  const load = (path: string | undefined) =>
    path === undefined ? Promise.resolve(null) : loadJsonl(isAbsolute(path) ? path : resolve(baseDir, path));
  const [train, val] = await Promise.all([load(data.train), load(data.val)]);
  return { train, val };
}
