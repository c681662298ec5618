// The `rollgate` command line. Each subcommand lives in src/commands/<name>.ts and exports
// register<Name>Command(program); this file only lists them.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { registerAlgorithmCommand } from './commands/algorithm.js';
import { registerExportCommand } from './commands/export.js';
import { registerRunnerCommand } from './commands/runner.js';
import { registerServeCommand } from './commands/serve.js';
import { registerStoreCommand } from './commands/store.js';

export function buildProgram(): Command {
  const program = new Command('rollgate')
    .description('OpenAI-compatible gateway that records agent LLM calls with token ids for training')
    .showHelpAfterError();

  // ---- Subcommands: one register line each. ----
  registerServeCommand(program);
  registerRunnerCommand(program);
  registerAlgorithmCommand(program);
  registerExportCommand(program);
  registerStoreCommand(program);
  // ----------------------------------------------

  return program;
}

export async function runCli(argv: readonly string[] = process.argv): Promise<void> {
  await buildProgram().parseAsync([...argv]);
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) await runCli();
