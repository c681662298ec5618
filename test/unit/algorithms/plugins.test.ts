// The plugin runtime: option errors name the key, modules load by path, a failing plugin never takes
// the host down, abort stops a plugin cleanly, and progress renders for TTYs and pipes.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadDatasets } from '../../../src/algorithms/datasets.js';
import { validateAlgorithmConfigs } from '../../../src/algorithms/loader.js';
import { createProgressReporter } from '../../../src/algorithms/progress.js';
import { type StartAlgorithmsDeps, startAlgorithms } from '../../../src/algorithms/start.js';
import { silentLogger } from '../../../src/logger.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';

const cfg = (use: string, options: Record<string, unknown> = {}) => ({ use, options, data: {} });

describe('validateAlgorithmConfigs', () => {
  it('names the bad key of a built-in', async () => {
    await expect(validateAlgorithmConfigs([cfg('evaluate'), cfg('apo', { beamWidth: 0 })])).rejects.toThrow(
      /algorithms\[1\] \(apo\): invalid options: options\.beamWidth/,
    );
    await expect(validateAlgorithmConfigs([cfg('apo', { optimizer: { gradientModel: 3 } })])).rejects.toThrow(
      /options\.optimizer\.gradientModel/,
    );
    await expect(validateAlgorithmConfigs([cfg('evaluate', { typo: 1 })])).rejects.toThrow(/typo/);
    await expect(validateAlgorithmConfigs([cfg('apo'), cfg('evaluate')])).resolves.toBeUndefined();
  });
});

describe('startAlgorithms', () => {
  let dir: string;
  let store: MemoryStore;
  let lines: string[];
  let deps: StartAlgorithmsDeps;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rollgate-plugins-'));
    store = new MemoryStore();
    lines = [];
    deps = {
      store,
      gateway: { attemptBaseUrl: () => null },
      logger: silentLogger,
      baseDir: dir,
      progressOutput: { write: (s: string) => lines.push(s), isTTY: false },
    };
  });
  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs a module given by path and writes its result to the report', async () => {
    await writeFile(
      join(dir, 'plugin.mjs'),
      `export function createAlgorithm(options) {
         return { name: 'mine', async run(ctx) {
           const r = await ctx.store.addResources({ p: { resource_type: 'prompt_template', template: options.t, engine: 'f-string' } });
           ctx.progress.note('hello');
           return { resources_id: r.resources_id };
         } };
       }`,
    );
    const handle = startAlgorithms([cfg('./plugin.mjs', { t: 'x' })], deps);
    const [outcome] = await handle.done;
    expect(outcome).toMatchObject({ name: 'mine', status: 'succeeded', error: null });
    const report = JSON.parse(await readFile(outcome?.reportPath ?? '', 'utf8'));
    expect(report.result.resources_id).toBe((await store.getLatestResources())?.resources_id);
    expect(lines.join('')).toContain('hello');
    await handle.close();
  });

  it('reports a plugin that throws, keeps going with the next one, and never rejects', async () => {
    await writeFile(
      join(dir, 'bad.mjs'),
      `export function createAlgorithm() { return { name: 'bad', async run() { throw new Error('boom'); } }; }`,
    );
    await writeFile(join(dir, 'nofactory.mjs'), 'export const x = 1;');
    const handle = startAlgorithms(
      [cfg('./bad.mjs'), cfg('./nofactory.mjs'), cfg('./missing.mjs'), cfg('nope'), cfg('evaluate')],
      deps,
    );
    const outcomes = await handle.done;
    expect(outcomes.map((o) => o.status)).toEqual(['failed', 'failed', 'failed', 'failed', 'failed']);
    expect(outcomes[0]?.error).toBe('algorithms[0] (./bad.mjs): boom');
    expect(outcomes[1]?.error).toMatch(/does not export a createAlgorithm/);
    expect(outcomes[2]?.error).toMatch(/cannot load algorithm module \.\/missing\.mjs/);
    expect(outcomes[3]?.error).toMatch(/unknown algorithm "nope"/);
    expect(outcomes[4]?.error).toMatch(/evaluate needs data\.val/);
    const report = JSON.parse(await readFile(outcomes[0]?.reportPath ?? '', 'utf8'));
    expect(report).toMatchObject({ algorithm: 'bad', status: 'failed', error: 'algorithms[0] (./bad.mjs): boom' });
    await handle.close();
  });

  it('aborts a running plugin on close', async () => {
    await writeFile(
      join(dir, 'wait.mjs'),
      `export function createAlgorithm() { return { name: 'wait', run(ctx) {
         return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => {
           const e = new Error('stopped'); e.name = 'AbortError'; reject(e);
         }));
       } }; }`,
    );
    const handle = startAlgorithms([cfg('./wait.mjs'), cfg('./wait.mjs')], deps);
    setTimeout(() => void handle.close(), 100).unref();
    const outcomes = await handle.done;
    expect(outcomes.map((o) => o.status)).toEqual(['aborted']);
    await handle.close();
  });

  it('stops waiting for a plugin that ignores its signal after the grace period', async () => {
    await writeFile(
      join(dir, 'deaf.mjs'),
      `export function createAlgorithm() { return { name: 'deaf', run: () => new Promise(() => {}) }; }`,
    );
    const handle = startAlgorithms([cfg('./deaf.mjs')], { ...deps, closeGraceMs: 50 });
    await new Promise((r) => setTimeout(r, 200));
    const t0 = Date.now();
    await handle.close();
    expect(Date.now() - t0).toBeLessThan(2000);
  });
});

describe('datasets', () => {
  it('parses JSONL, skips blank lines and names the file and line of bad JSON', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rollgate-data-'));
    try {
      await writeFile(join(dir, 'ok.jsonl'), '{"a":1}\n\n"text"\n');
      await writeFile(join(dir, 'bad.jsonl'), '{"a":1}\n{oops\n');
      expect(await loadDatasets({ train: 'ok.jsonl' }, dir)).toEqual({ train: [{ a: 1 }, 'text'], val: null });
      await expect(loadDatasets({ val: 'bad.jsonl' }, dir)).rejects.toThrow(/bad\.jsonl:2: not valid JSON/);
      await expect(loadDatasets({ val: 'none.jsonl' }, dir)).rejects.toThrow(/cannot read dataset/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('progress reporter', () => {
  it('redraws one line on a TTY', () => {
    let t = 0;
    const out: string[] = [];
    const p = createProgressReporter({
      output: { write: (s: string) => out.push(s) },
      name: '[x]',
      isTTY: true,
      now: () => t,
    });
    p.phase('work', 4);
    t = 1000;
    p.advance(4);
    p.note('done');
    p.close();
    p.close();
    const text = out.join('');
    expect(text).toContain('\r\x1b[K[x] work [########################] 4/4 1.0s');
    expect(text).toContain('[x] done\n');
  });

  it('writes plain milestone lines otherwise', () => {
    const out: string[] = [];
    const p = createProgressReporter({ output: { write: (s: string) => out.push(s) }, name: '[x]', now: () => 0 });
    p.phase('work', 4);
    for (let i = 0; i < 4; i++) p.advance();
    p.close();
    expect(out).toEqual([
      '[x] work: started (4)\n',
      '[x] work: 1/4\n',
      '[x] work: 2/4\n',
      '[x] work: 3/4\n',
      '[x] work: done 4/4 in 0.0s\n',
    ]);
    expect(out.join('')).not.toContain('\x1b');
  });
});
