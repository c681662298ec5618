// vLLM's dev routes (VLLM_SERVER_DEV_MODE=1): pause/resume, abort, sleep/wake_up, runtime LoRA loading, native
// weight transfer, prefix-cache reset; plus the twin's own /_twin/ledger and /_twin/state for the CLI.
import type { TwinContext } from './context.js';
import { type PauseMode, UNLABELLED_WEIGHT_VERSION, type WakeTag } from './engine.js';
import { FastApiError, jsonObjectBody, VllmError } from './errors.js';
import { type Exchange, sendEmpty, sendJson, sendText } from './exchange.js';
import { isRecord } from './util.js';

const PAUSE_MODES: readonly string[] = ['abort', 'wait', 'keep'];

function pauseMode(query: URLSearchParams): PauseMode {
  const mode = query.get('mode') ?? 'abort';
  if (!PAUSE_MODES.includes(mode)) {
    throw new VllmError(400, `1 validation error:\n  query.mode: Input should be 'abort', 'wait' or 'keep'`);
  }
  return mode as PauseMode;
}

function boolQuery(query: URLSearchParams, key: string, fallback: boolean): boolean {
  const v = query.get(key);
  if (v === null) return fallback;
  return !['false', '0', 'no', 'off'].includes(v.toLowerCase());
}

function requiredString(body: Record<string, unknown>, key: string): string {
  const v = body[key];
  if (typeof v !== 'string') throw new VllmError(400, `1 validation error:\n  body.${key}: Field required`);
  return v;
}

/** Handles a dev route; false when `path` is not one. */
export async function handleDevRoute(
  ctx: TwinContext,
  ex: Exchange,
  request: { method: string; path: string; query: URLSearchParams },
): Promise<boolean> {
  const { engine } = ctx;
  const { method, path, query } = request;
  const body = () => jsonObjectBody(ex.record.body, ex.record.rawBody);
  const route = `${method} ${path}`;
  switch (route) {
    case 'POST /pause':
      await engine.pause(pauseMode(query), boolQuery(query, 'clear_cache', true));
      sendJson(ex, 200, JSON.stringify({ status: 'paused' }));
      return true;
    // The twin's own: the engine loop hangs (or runs again) while /health keeps answering 200.
    case 'POST /_twin/hang':
      engine.setHung(true);
      sendJson(ex, 200, JSON.stringify({ hung: true }));
      return true;
    case 'POST /_twin/unhang':
      engine.setHung(false);
      sendJson(ex, 200, JSON.stringify({ hung: false }));
      return true;
    case 'POST /resume':
      engine.resume();
      sendJson(ex, 200, JSON.stringify({ status: 'resumed' }));
      return true;
    case 'GET /is_paused':
      sendJson(ex, 200, JSON.stringify({ is_paused: engine.paused }));
      return true;
    case 'POST /abort_requests': {
      if (!isRecord(ex.record.body)) throw new FastApiError(400, 'Invalid JSON format');
      const ids = ex.record.body.request_ids;
      const list = Array.isArray(ids) ? ids.filter((x): x is string => typeof x === 'string') : undefined;
      const aborted = engine.abortRequests(list);
      sendJson(ex, 200, JSON.stringify({ status: 'aborted', aborted }));
      return true;
    }
    case 'POST /sleep': {
      const level = Number.parseInt(query.get('level') ?? '1', 10);
      if (level !== 1 && level !== 2) throw new VllmError(400, `sleep level must be 1 or 2, got ${query.get('level')}`);
      await engine.sleep(level, pauseMode(query));
      sendEmpty(ex, 200);
      return true;
    }
    case 'POST /wake_up': {
      const tags = query.getAll('tags').filter((t): t is WakeTag => t === 'weights' || t === 'kv_cache');
      engine.wakeUp(tags);
      sendEmpty(ex, 200);
      return true;
    }
    case 'GET /is_sleeping':
      sendJson(ex, 200, JSON.stringify({ is_sleeping: engine.sleeping }));
      return true;
    case 'POST /reset_prefix_cache':
      engine.resetPrefixCache();
      sendEmpty(ex, 200);
      return true;
    case 'POST /v1/load_lora_adapter': {
      const b = body();
      const name = b.lora_name;
      const path = b.lora_path;
      if (typeof name !== 'string' || typeof path !== 'string' || name === '' || path === '') {
        throw new VllmError(400, "Both 'lora_name' and 'lora_path' must be provided.", 'InvalidUserInput');
      }
      engine.loadLora({ name, path, inplace: b.load_inplace === true });
      sendText(ex, `Success: LoRA adapter '${name}' added successfully.`);
      return true;
    }
    case 'POST /v1/unload_lora_adapter': {
      const name = body().lora_name;
      if (typeof name !== 'string' || name === '') {
        throw new VllmError(400, "'lora_name' needs to be provided to unload a LoRA adapter.", 'InvalidUserInput');
      }
      engine.unloadLora(name);
      sendText(ex, `Success: LoRA adapter '${name}' removed successfully.`);
      return true;
    }
    case 'POST /init_weight_transfer_engine':
      if (body().init_info === undefined) throw new FastApiError(400, "Missing 'init_info' in request body");
      sendJson(ex, 200, JSON.stringify({ message: 'Weight transfer initialized' }));
      return true;
    case 'POST /start_weight_update':
      sendJson(ex, 200, JSON.stringify({ message: 'Weight update started' }));
      return true;
    case 'POST /update_weights':
      if (body().update_info === undefined) throw new FastApiError(400, "Missing 'update_info' in request body");
      engine.updateWeights();
      sendJson(ex, 200, JSON.stringify({ message: 'Weights updated' }));
      return true;
    case 'POST /finish_weight_update': {
      const version = body().weight_version;
      if (typeof version === 'string') engine.setWeightVersion(version);
      else if (typeof version === 'number') engine.setWeightVersion(String(version));
      sendJson(ex, 200, JSON.stringify({ message: 'Weight update finished' }));
      return true;
    }
    case 'POST /update_weight_version': {
      const b = body();
      // vLLM names the field new_version; weight_version is accepted too.
      const raw = b.new_version ?? b.weight_version;
      const version = typeof raw === 'number' ? String(raw) : requiredString({ new_version: raw }, 'new_version');
      engine.setWeightVersion(version);
      sendJson(ex, 200, JSON.stringify({ success: true, new_version: version }));
      return true;
    }
    case 'GET /weight_info':
      // vLLM's engine starts with the label `default` and keeps it until a transfer or /update_weight_version sets one.
      sendJson(ex, 200, JSON.stringify({ weight_version: engine.weightVersion ?? UNLABELLED_WEIGHT_VERSION }));
      return true;
    case 'GET /_twin/ledger': {
      const id = query.get('response_id');
      const entries = id === null ? ctx.ledger.entries : ctx.ledger.byResponseId(id);
      sendJson(ex, 200, JSON.stringify({ entries }));
      return true;
    }
    case 'GET /_twin/state':
      sendJson(
        ex,
        200,
        JSON.stringify({
          paused: engine.paused,
          sleeping: engine.sleeping,
          sleep_level: engine.level,
          in_flight: engine.inFlight,
          weights: engine.weightsFor(null),
          adapters: [...engine.adapters.values()],
          cached_blocks: engine.cachedBlocks,
          tokenizer: ctx.tokenizer.name,
          logprobs_mode: ctx.options.logprobsMode,
        }),
      );
      return true;
    default:
      return false;
  }
}

/** Paths the dev routes serve (a wrong method on one is a 405). */
export const DEV_PATHS: ReadonlySet<string> = new Set([
  '/pause',
  '/resume',
  '/is_paused',
  '/abort_requests',
  '/sleep',
  '/wake_up',
  '/is_sleeping',
  '/reset_prefix_cache',
  '/v1/load_lora_adapter',
  '/v1/unload_lora_adapter',
  '/init_weight_transfer_engine',
  '/start_weight_update',
  '/update_weights',
  '/finish_weight_update',
  '/update_weight_version',
  '/weight_info',
  '/_twin/ledger',
  '/_twin/state',
  '/_twin/hang',
  '/_twin/unhang',
]);
