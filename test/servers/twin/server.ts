// startMockVllm(): the engine twin as a real node:http server. Routing, request records, faults that act before
// any route (status, hang, reset, slow-first-byte), and the handle tests hold.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRng } from '../../../src/algorithms/rng.js';
import { agentPolicy } from './agent-policy.js';
import { templateFor } from './chat-template.js';
import type { ResolvedOptions, RouteRequest, TwinContext } from './context.js';
import { Engine } from './engine.js';
import { errorBodyWriter, FastApiError, VllmError } from './errors.js';
import { type Exchange, sendDetail, sendEmpty, sendJson, sendText, sendVllmError } from './exchange.js';
import { FaultBook, parseFaultSpec } from './faults.js';
import { Ledger } from './ledger.js';
import { renderMetrics } from './metrics.js';
import { defaultRespond } from './respond.js';
import { DEV_PATHS, handleDevRoute } from './routes-dev.js';
import { handleChat, handleCompletions } from './routes-openai.js';
import { handleResponses } from './routes-responses.js';
import { handleSglangChat, handleSglangCompletions } from './routes-sglang.js';
import { handleSglangControlRoute, handleSglangGenerate, SGLANG_CONTROL_PATHS } from './routes-sglang-native.js';
import {
  handleChatRender,
  handleCompletionsRender,
  handleDetokenize,
  handleGenerate,
  handleTokenize,
} from './routes-tokens.js';
import { DEFAULT_SAMPLING } from './sampler.js';
import { tokenizerFor } from './tokenizer.js';
import type { MockFault, MockRequestRecord, MockVllm, MockVllmOptions, TwinDialect } from './types.js';
import { isRecord } from './util.js';

// SGLang's native /generate is a generation route too (faults apply to it by default).
const GENERATION_PATHS = ['/v1/chat/completions', '/v1/completions', '/v1/responses', '/generate'];

type BodyHandler = (ctx: TwinContext, request: RouteRequest) => void | Promise<void>;

/** POST routes that take a JSON object body with vLLM's error shapes. */
const VLLM_BODY_ROUTES: Record<string, BodyHandler> = {
  '/v1/chat/completions': handleChat,
  '/v1/completions': handleCompletions,
  '/v1/responses': handleResponses,
  '/tokenize': handleTokenize,
  '/detokenize': handleDetokenize,
  '/v1/chat/completions/render': handleChatRender,
  '/v1/completions/render': handleCompletionsRender,
  '/inference/v1/generate': handleGenerate,
};

/** SGLang's OpenAI routes and its native /generate (flat error bodies). */
const SGLANG_BODY_ROUTES: Record<string, BodyHandler> = {
  '/v1/chat/completions': handleSglangChat,
  '/v1/completions': handleSglangCompletions,
  '/generate': handleSglangGenerate,
};

type ControlHandler = typeof handleDevRoute;

/** What a dialect adds to the shared routes: its body routes and its control (weights, cache, pause) routes. */
interface DialectRoutes {
  readonly body: Readonly<Record<string, BodyHandler>>;
  readonly control: ControlHandler;
  readonly controlPaths: ReadonlySet<string>;
  /** `owned_by` of /v1/models. */
  readonly owner: string;
}

const DIALECTS: Record<TwinDialect, DialectRoutes> = {
  vllm: { body: VLLM_BODY_ROUTES, control: handleDevRoute, controlPaths: DEV_PATHS, owner: 'vllm' },
  sglang: {
    body: SGLANG_BODY_ROUTES,
    // The twin's own /_twin/ledger and /_twin/state live with vLLM's dev routes; SGLang serves them too.
    control: async (ctx, ex, request) =>
      (await handleSglangControlRoute(ctx, ex, request)) ||
      (request.path.startsWith('/_twin/') && (await handleDevRoute(ctx, ex, request))),
    controlPaths: SGLANG_CONTROL_PATHS,
    owner: 'sglang',
  },
};

function resolveOptions(options: MockVllmOptions): ResolvedOptions {
  const model = options.model ?? 'mock-model';
  const tokenizer = options.tokenizer ?? 'chars';
  const randomOrder =
    options.randomOrder === true ? {} : options.randomOrder === false ? undefined : options.randomOrder;
  return {
    model,
    served: new Set([model, ...(options.aliases ?? [])]),
    anyModel: options.anyModel ?? false,
    maxModelLen: options.maxModelLen ?? 32_768,
    tokensPerChunk: Math.max(1, options.tokensPerChunk ?? 1),
    latencyMs: options.latencyMs ?? 0,
    ttftMs: options.ttftMs ?? 0,
    interTokenMs: options.interTokenMs ?? 0,
    maxTokens: options.maxTokens,
    floorLogprobEvery: options.floorLogprobEvery ?? 0,
    returnTokensAsTokenIds: options.returnTokensAsTokenIds ?? false,
    logprobsMode: options.logprobsMode ?? 'raw',
    reasoning: options.reasoning ?? false,
    reasoningParser: options.reasoningParser === undefined ? 'qwen3' : options.reasoningParser,
    reasoningField: options.reasoningField ?? 'reasoning',
    enablePromptTokensDetails: options.enablePromptTokensDetails ?? false,
    paceNonStream: options.paceNonStream ?? false,
    stopStringIds: options.stopStringIds ?? (tokenizer === 'qwen3' ? 'vllm' : 'cut'),
    randomOrder: randomOrder ? { maxDelayMs: randomOrder.maxDelayMs ?? 50 } : undefined,
    defaultSampling: DEFAULT_SAMPLING,
    dialect: options.dialect ?? 'vllm',
    metrics: options.metrics ?? true,
    routedExperts: options.routedExperts ?? null,
  };
}

export async function startMockVllm(options: MockVllmOptions = {}): Promise<MockVllm> {
  const resolved = resolveOptions(options);
  const dialect = DIALECTS[resolved.dialect];
  const tokenizerName = options.tokenizer ?? 'chars';
  // Loaded here (about half a second for qwen3), not on the first request.
  const tokenizer = tokenizerFor(tokenizerName);
  const randomOrderSeed =
    typeof options.randomOrder === 'object' && options.randomOrder.seed !== undefined ? options.randomOrder.seed : 42;
  const maxRecorded = options.maxRecordedRequests ?? Number.POSITIVE_INFINITY;
  const ctx: TwinContext = {
    options: resolved,
    tokenizer,
    template: templateFor(tokenizerName),
    respond:
      options.respond ?? (options.policy === 'agent' ? agentPolicy({ steps: options.agentSteps }) : defaultRespond),
    engine: new Engine(Math.max(1, options.blockSize ?? 16), options.maxCachedBlocks),
    ledger: new Ledger(maxRecorded),
    random: createRng(randomOrderSeed).next,
  };
  const requests: MockRequestRecord[] = [];
  let requestCount = 0;
  const faultBook = new FaultBook();
  const waiters = new Set<() => void>();
  const live = new Set<Exchange>();
  let closing: Promise<void> | undefined;
  const notify = () => {
    for (const w of [...waiters]) w();
  };

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://twin');
    const record: MockRequestRecord = {
      seq: ++requestCount,
      method: req.method ?? 'GET',
      path: url.pathname,
      headers: req.headers,
      body: undefined,
      rawBody: '',
      receivedAt: Date.now(),
      faults: [],
      chunksSent: 0,
      tokensSent: 0,
      tokensGenerated: 0,
    };
    requests.push(record);
    // Trim in halves so the cost stays amortised O(1) per request.
    if (requests.length > maxRecorded * 2) requests.splice(0, requests.length - maxRecorded);
    const ex: Exchange = {
      record,
      req,
      res,
      faults: [],
      timers: new Set(),
      gone: false,
      notify,
      dialect: resolved.dialect,
    };
    live.add(ex);
    res.setHeader('server', 'uvicorn');
    res.on('close', () => {
      live.delete(ex);
      for (const t of ex.timers) clearTimeout(t);
      ex.timers.clear();
      if (!res.writableFinished) {
        ex.gone = true;
        record.abortedAt ??= Date.now();
      } else {
        record.completedAt ??= Date.now();
      }
      notify();
    });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      record.rawBody = Buffer.concat(chunks).toString('utf8');
      if (record.rawBody.length > 0) {
        try {
          record.body = JSON.parse(record.rawBody);
        } catch {
          record.body = undefined;
        }
      }
      notify();
      handle(ex, url.searchParams).catch((err: unknown) => {
        if (ex.res.headersSent || ex.gone) {
          ex.res.destroy();
          return;
        }
        if (err instanceof VllmError) return sendVllmError(ex, err);
        if (err instanceof FastApiError) return sendDetail(ex, err);
        sendVllmError(ex, new VllmError(500, err instanceof Error ? err.message : String(err), 'InternalServerError'));
      });
    });
    req.on('error', () => {
      ex.gone = true;
    });
  });

  const delay = (ex: Exchange, ms: number) =>
    new Promise<void>((resolve) => {
      if (ms <= 0 || ex.gone) return resolve();
      const t = setTimeout(() => {
        ex.timers.delete(t);
        resolve();
      }, ms);
      t.unref();
      ex.timers.add(t);
    });

  const handle = async (ex: Exchange, query: URLSearchParams): Promise<void> => {
    const { record } = ex;
    let faults: MockFault[];
    try {
      faults = faultBook.resolve(ex.req, record.path, record.body);
    } catch (err) {
      return sendVllmError(ex, new VllmError(400, err instanceof Error ? err.message : String(err)));
    }
    ex.faults = faults;
    record.faults = faults;
    notify();
    if (faults.some((f) => f.kind === 'reset')) {
      ex.req.socket.destroy();
      return;
    }
    if (faults.some((f) => f.kind === 'hang')) return;
    const slow = faults.find((f) => f.kind === 'slow-first-byte');
    if (slow) await delay(ex, slow.delayMs);
    if (ex.gone) return;
    const statusFault = faults.find((f) => f.kind === 'status');
    if (statusFault) {
      const headers: Record<string, string> = {};
      if (statusFault.retryAfter !== undefined) headers['retry-after'] = statusFault.retryAfter;
      const message = statusFault.message ?? `mock-vllm injected status ${statusFault.status}`;
      if (statusFault.html) {
        const html = `<html><head><title>${statusFault.status} Bad Gateway</title></head><body><h1>${message}</h1></body></html>\n`;
        record.status ??= statusFault.status;
        ex.res.writeHead(statusFault.status, {
          'content-type': 'text/html',
          'content-length': Buffer.byteLength(html),
          ...headers,
        });
        ex.res.end(html);
        return;
      }
      const type = statusFault.status >= 500 ? 'InternalServerError' : 'BadRequestError';
      const body = errorBodyWriter(resolved.dialect)(statusFault.status, message, type);
      return sendJson(ex, statusFault.status, body, headers);
    }

    const { method, path } = record;
    if (path === '/health' && method === 'GET') return sendEmpty(ex, 200);
    if (path === '/metrics' && method === 'GET' && resolved.metrics) {
      return sendText(
        ex,
        renderMetrics({ dialect: resolved.dialect, model: resolved.model, metrics: ctx.engine.metrics }),
      );
    }
    if (path === '/version' && method === 'GET' && resolved.dialect === 'vllm') {
      return sendJson(ex, 200, JSON.stringify({ version: '0.11.0-mock' }));
    }
    if (path === '/v1/models' && method === 'GET') {
      const created = Math.floor(Date.now() / 1000);
      const base = [...resolved.served].map((id) => ({
        id,
        object: 'model',
        created,
        owned_by: dialect.owner,
        root: resolved.model,
        parent: null,
        max_model_len: resolved.maxModelLen,
        permission: [],
      }));
      const adapters = [...ctx.engine.adapters.values()].map((a) => ({
        id: a.name,
        object: 'model',
        created,
        owned_by: dialect.owner,
        root: a.path,
        parent: resolved.model,
        max_model_len: null,
        permission: [],
      }));
      return sendJson(ex, 200, JSON.stringify({ object: 'list', data: [...base, ...adapters] }));
    }
    const handler = dialect.body[path];
    if (handler) {
      if (method !== 'POST') return sendJson(ex, 405, JSON.stringify({ detail: 'Method Not Allowed' }));
      if (!isRecord(record.body)) {
        return sendVllmError(
          ex,
          new VllmError(
            400,
            record.rawBody ? 'JSON decode error: the body is not a JSON object' : 'Field required: body',
            // SGLang turns request validation errors into its flat body with the status phrase as the type.
            resolved.dialect === 'sglang' ? 'Bad Request' : 'BadRequestError',
          ),
        );
      }
      return handler(ctx, { ex, body: record.body });
    }
    if (await dialect.control(ctx, ex, { method, path, query })) return;
    if (dialect.controlPaths.has(path)) return sendJson(ex, 405, JSON.stringify({ detail: 'Method Not Allowed' }));
    // FastAPI's default for unknown routes, which is what vLLM answers.
    return sendJson(ex, 404, JSON.stringify({ detail: 'Not Found' }));
  };

  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? 5_000;
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  return {
    url: `${origin}/v1`,
    baseUrl: origin,
    port,
    model: resolved.model,
    requests,
    ledger: ctx.ledger,
    setFault(fault, opts = {}) {
      const faults = typeof fault === 'string' ? parseFaultSpec(fault) : Array.isArray(fault) ? fault : [fault];
      faultBook.add(faults, {
        ...(opts.times !== undefined ? { times: opts.times } : {}),
        paths: opts.paths ?? GENERATION_PATHS,
      });
    },
    clearFaults() {
      faultBook.clear();
    },
    waitFor(predicate, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = requests.find(predicate);
          if (!hit) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(hit);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`mock-vllm: waitFor timed out after ${timeoutMs} ms`));
        }, timeoutMs);
        timer.unref();
        waiters.add(check);
        check();
      });
    },
    close() {
      if (closing) return closing;
      closing = new Promise<void>((resolve) => {
        for (const ex of live) {
          for (const t of ex.timers) clearTimeout(t);
          ex.gone = true;
        }
        // Frozen or queued generations would otherwise wait forever.
        ctx.engine.abortRequests();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
