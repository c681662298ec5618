// Resolves `"use"` to a plugin: a built-in name (`apo`, `evaluate`, `rl`) or a path to a module that
// exports `createAlgorithm(options)`. Built-in options are validated by each built-in's own zod schema, at
// config load (`validateAlgorithmConfigs`) and again when the plugin is created.
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AlgorithmConfig } from '../../config/schema.js';
import { AlgorithmConfigError } from './errors.js';
import type { Algorithm, AlgorithmModule } from './types.js';

export const BUILT_IN_ALGORITHMS = ['apo', 'evaluate', 'rl'] as const;
export type BuiltInAlgorithm = (typeof BUILT_IN_ALGORITHMS)[number];

interface BuiltInModule extends AlgorithmModule {
  /** Throws AlgorithmConfigError naming the bad key. */
  validateOptions?(options: unknown, label: string): void;
}

function isBuiltIn(use: string): use is BuiltInAlgorithm {
  return (BUILT_IN_ALGORITHMS as readonly string[]).includes(use);
}

export function algorithmLabel(config: Pick<AlgorithmConfig, 'use'>, index: number): string {
  return `algorithms[${index}] (${config.use})`;
}

function toModule(value: unknown, source: string): BuiltInModule {
  if (typeof value !== 'object' || value === null) throw new AlgorithmConfigError(`${source} is not a module`);
  const mod = value as Record<string, unknown>;
  if (typeof mod.createAlgorithm !== 'function') {
    throw new AlgorithmConfigError(`${source} does not export a createAlgorithm(options) function`);
  }
  return mod as unknown as BuiltInModule;
}

async function importBuiltIn(name: BuiltInAlgorithm): Promise<BuiltInModule> {
  switch (name) {
    case 'apo':
      return toModule(await import('./apo/index.js'), 'built-in apo');
    case 'evaluate':
      return toModule(await import('./evaluate/index.js'), 'built-in evaluate');
    case 'rl': {
      // Loaded by name so this file compiles whether or not the RL data plane is part of the build.
      const specifier = './rl/index.js';
      try {
        return toModule(await import(specifier), 'built-in rl');
      } catch (error) {
        if (error instanceof AlgorithmConfigError) throw error;
        throw new AlgorithmConfigError('built-in rl is not available in this build', { cause: error });
      }
    }
  }
}

/** Imports the module behind `use`; relative paths resolve against `baseDir` (the config file's folder). */
export async function importAlgorithmModule(use: string, baseDir: string): Promise<BuiltInModule> {
  if (isBuiltIn(use)) return importBuiltIn(use);
  const looksLikePath = use.startsWith('.') || isAbsolute(use) || use.startsWith('file:');
  if (!looksLikePath) {
    throw new AlgorithmConfigError(
      `unknown algorithm "${use}": use one of ${BUILT_IN_ALGORITHMS.join(', ')} or a path like ./my-plugin.js`,
    );
  }
  const url = use.startsWith('file:') ? use : pathToFileURL(isAbsolute(use) ? use : resolve(baseDir, use)).href;
  let mod: unknown;
  try {
    mod = await import(url);
  } catch (error) {
    throw new AlgorithmConfigError(`cannot load algorithm module ${use}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return toModule(mod, `algorithm module ${use}`);
}

export async function createAlgorithmFromConfig(
  config: AlgorithmConfig,
  options: { index: number; baseDir: string },
): Promise<Algorithm> {
  const label = algorithmLabel(config, options.index);
  const mod = await importAlgorithmModule(config.use, options.baseDir);
  mod.validateOptions?.(config.options, label);
  let algorithm: Algorithm;
  try {
    algorithm = await mod.createAlgorithm(config.options);
  } catch (error) {
    if (error instanceof AlgorithmConfigError) throw new AlgorithmConfigError(`${label}: ${error.message}`);
    throw new AlgorithmConfigError(`${label}: createAlgorithm failed: ${(error as Error).message}`, { cause: error });
  }
  if (typeof algorithm !== 'object' || algorithm === null || typeof algorithm.run !== 'function') {
    throw new AlgorithmConfigError(`${label}: createAlgorithm must return { name, run(ctx) }`);
  }
  return algorithm;
}

/** Checks every built-in's options (modules given by path are checked when they load). */
export async function validateAlgorithmConfigs(configs: readonly AlgorithmConfig[]): Promise<void> {
  for (const [index, config] of configs.entries()) {
    if (!isBuiltIn(config.use)) continue;
    const mod = await importBuiltIn(config.use);
    mod.validateOptions?.(config.options, algorithmLabel(config, index));
  }
}
