// `rollgate algorithm --gateway URL --config F`: a plugin run in another process's shoes, through the
// gateway's store API (HttpStore), with the in-process runner answering the rollouts.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROMPT_RESOURCE_NAME, RULES, roomAgent, SEED_PROMPT } from '../../examples/apo-room-booking/room-booking.js';
import { registerAlgorithmCommand } from '../../src/commands/algorithm.js';
import { silentLogger } from '../../src/logger.js';
import { createRunner, type Runner } from '../../src/runner/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { type StandInModel, startRoomModel } from '../servers/apo-models.js';

const EXAMPLE_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../examples/apo-room-booking');

describe('rollgate algorithm', () => {
  let model: StandInModel;
  let gw: TestGateway;
  let runner: Runner;
  let dir: string;

  beforeAll(async () => {
    model = await startRoomModel();
    gw = await startTestGateway({
      models: [{ name: 'room-model', backends: [{ url: model.url, type: 'openai' }], health: { intervalMs: 0 } }],
    });
    runner = createRunner({
      store: gw.gateway.store,
      gatewayUrl: gw.url,
      agent: roomAgent({ model: 'room-model' }),
      concurrency: 8,
      backoff: { initialMs: 5, maxMs: 20 },
      logger: silentLogger,
    });
    dir = await mkdtemp(join(tmpdir(), 'rollgate-algo-cli-'));
  });

  afterAll(async () => {
    await runner?.close({ graceMs: 0 });
    await gw?.close();
    await model?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const run = async (args: string[]): Promise<number> => {
    const program = new Command('rollgate').exitOverride();
    registerAlgorithmCommand(program);
    const before = process.exitCode;
    await program.parseAsync(['node', 'rollgate', 'algorithm', ...args]);
    const code = Number(process.exitCode ?? 0);
    process.exitCode = before;
    return code;
  };

  it('evaluates the latest resources through the store API and writes the report', async () => {
    const good = [SEED_PROMPT.split('\n')[0], ...Object.values(RULES), ...SEED_PROMPT.split('\n').slice(1)].join('\n');
    const latest = await gw.gateway.store.addResources({
      [PROMPT_RESOURCE_NAME]: { resource_type: 'prompt_template', template: good, engine: 'f-string' },
    });
    const configPath = join(dir, 'eval.config.json');
    await writeFile(
      configPath,
      JSON.stringify({
        algorithms: [{ use: 'evaluate', data: { val: join(EXAMPLE_DIR, 'val.jsonl') } }],
      }),
    );
    const reportDir = join(dir, 'reports');
    const code = await run([
      '--gateway',
      gw.url,
      '--config',
      configPath,
      '--report-dir',
      reportDir,
      '--log-level',
      'silent',
    ]);
    expect(code).toBe(0);
    const [file] = await readdir(reportDir);
    const report = JSON.parse(await readFile(join(reportDir, file ?? ''), 'utf8'));
    expect(report.result).toMatchObject({
      resources_id: latest.resources_id,
      tasks: 8,
      mean_reward: 1,
      success_rate: 1,
    });
  });

  it('exits 2 naming the key of a bad option', async () => {
    const configPath = join(dir, 'bad.config.json');
    await writeFile(configPath, JSON.stringify({ algorithms: [{ use: 'apo', options: { beamRounds: -1 } }] }));
    const writes: string[] = [];
    const original = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => {
      writes.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      expect(await run(['--gateway', gw.url, '--config', configPath])).toBe(2);
    } finally {
      process.stderr.write = original;
    }
    expect(writes.join('')).toMatch(/algorithms\[0\] \(apo\): invalid options: options\.beamRounds/);
  });
});
