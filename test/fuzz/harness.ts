// The fuzz rig: a real gateway on a socket in front of the engine twin, one route family at a time. Every case is
// a mutated valid request, sent with a deadline, and judged by three rules: no 5xx unless the twin itself answered
// one (a relayed backend error is the backend's), no hang, and an error body in the API's own shape. After the
// family the store must still take a write and give it back unchanged.
import { createRng } from '../../src/algorithms/rng.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { type MockVllm, startEngineTwin } from '../servers/mock-vllm.js';
import { mutate, type SeedRequest, type WireRequest } from './mutate.js';

export interface FuzzContext {
  readonly url: string;
  readonly twin: MockVllm;
  /** A started rollout and its attempt, for routes that need existing ids. */
  readonly rid: string;
  readonly aid: string;
}

export interface Family {
  readonly name: string;
  seeds(ctx: FuzzContext): SeedRequest[];
}

export interface FuzzFailure {
  readonly case: number;
  readonly request: string;
  readonly problem: string;
}

export interface FamilyResult {
  readonly cases: number;
  readonly failures: FuzzFailure[];
  readonly statuses: Record<number, number>;
}

/** The suite's seed and case count: fixed by default so CI is reproducible, overridable to explore. */
export function fuzzSettings(): { seed: number; cases: number } {
  const seed = Number.parseInt(process.env.ROLLGATE_FUZZ_SEED ?? '', 10);
  const cases = Number.parseInt(process.env.ROLLGATE_FUZZ_CASES ?? '', 10);
  return { seed: Number.isFinite(seed) ? seed : 20_261_201, cases: Number.isFinite(cases) && cases > 0 ? cases : 250 };
}

/** Bounds every request: a gateway that stops answering fails the case instead of the whole run. */
const CASE_DEADLINE_MS = 10_000;
/** Bodies of the gateway's answers are read up to this much; an answer past it is still judged by its head. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export interface FuzzRig {
  readonly ctx: FuzzContext;
  readonly gw: TestGateway;
  close(): Promise<void>;
}

export async function startFuzzRig(): Promise<FuzzRig> {
  const twin = await startEngineTwin();
  let gw: TestGateway | undefined;
  try {
    gw = await startTestGateway({
      // 1 MiB keeps the oversized-body cases cheap while still crossing the limit.
      server: { bodyLimitBytes: 1024 * 1024 },
      models: [{ name: 'mock-model', backends: [{ url: twin.url }] }],
    });
    const started = await postJson(gw.url, '/v1/agl/rollouts', { input: 'fuzz' });
    const ctx: FuzzContext = { url: gw.url, twin, rid: started.rollout_id, aid: started.attempt.attempt_id };
    const opened = gw;
    return {
      ctx,
      gw: opened,
      async close() {
        await opened.close();
        await twin.close();
      },
    };
  } catch (error) {
    await gw?.close();
    await twin.close();
    throw error;
  }
}

async function postJson(url: string, path: string, body: unknown): Promise<any> {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(CASE_DEADLINE_MS),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${path}: ${response.status} ${text}`);
  return JSON.parse(text);
}

function describeRequest(request: WireRequest): string {
  return `${request.method} ${request.path.slice(0, 160)} [${request.label.join(' ')}]`;
}

/** The Messages API's own paths (un-prefixed or attributed); any other path is an OpenAI-shaped 404. */
const MESSAGES_PATH = /^(?:\/rollout\/[^/]+\/attempt\/[^/]+)?(?:\/v1)?\/messages(?:\/count_tokens)?$/;

/** The error shape a request's API promises, checked on the parsed body. Null when it holds. */
function errorShapeProblem(
  request: WireRequest,
  answer: { url: string; contentType: string; text: string },
): string | null {
  const { contentType, text } = answer;
  // The path as the server saw it: fetch resolves `..` and `.` segments before sending.
  const path = new URL(answer.url).pathname;
  if (path === '/v1/traces') {
    // OTLP answers in the request's encoding (protobuf when unknown) with a google.rpc.Status.
    if (contentType.startsWith('application/x-protobuf')) return null;
    if (!contentType.startsWith('application/json')) return `OTLP error with content-type ${contentType}`;
    const body: unknown = JSON.parse(text);
    const ok =
      typeof body === 'object' &&
      body !== null &&
      'message' in body &&
      typeof body.message === 'string' &&
      'code' in body;
    return ok ? null : `OTLP error body not a Status: ${text.slice(0, 200)}`;
  }
  if (!contentType.startsWith('application/json')) return `error with content-type "${contentType}"`;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return `error body is not JSON: ${text.slice(0, 200)}`;
  }
  const error = typeof body === 'object' && body !== null && 'error' in body ? body.error : undefined;
  const message = typeof error === 'object' && error !== null && 'message' in error ? error.message : undefined;
  const type = typeof error === 'object' && error !== null && 'type' in error ? error.type : undefined;
  if (typeof message !== 'string' || typeof type !== 'string') return `error body not shaped: ${text.slice(0, 200)}`;
  const anthropic = MESSAGES_PATH.test(path) || request.headers['anthropic-version'] !== undefined;
  const top = typeof body === 'object' && body !== null && 'type' in body ? body.type : undefined;
  if (anthropic && top !== 'error') return `Messages API error not in Anthropic's shape: ${text.slice(0, 200)}`;
  return null;
}

async function readCapped(response: Response): Promise<string> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size <= MAX_ANSWER_BYTES) chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** One case: null when it passed, else what went wrong. */
async function runCase(
  ctx: FuzzContext,
  request: WireRequest,
): Promise<{ status: number | null; problem: string | null }> {
  const twinBefore = ctx.twin.requests.length;
  const signal = AbortSignal.timeout(CASE_DEADLINE_MS);
  let response: Response;
  let text: string;
  try {
    response = await fetch(`${ctx.url}${request.path}`, {
      method: request.method,
      headers: request.headers,
      ...(request.body === undefined ? {} : { body: request.body }),
      signal,
    });
    text = await readCapped(response);
  } catch (error) {
    if (signal.aborted) return { status: null, problem: `no answer within ${CASE_DEADLINE_MS} ms (hang)` };
    const code = (error as { cause?: { code?: string } }).cause?.code;
    // An invalid path can be refused by fetch itself before any byte leaves; the gateway never saw it.
    if (error instanceof TypeError && code === undefined && !String(error.message).includes('fetch failed'))
      return { status: null, problem: null };
    return { status: null, problem: `connection failed: ${String(error)} ${code ?? ''}` };
  }
  const status = response.status;
  const contentType = response.headers.get('content-type') ?? '';
  if (status >= 500) {
    const twinFive = ctx.twin.requests.slice(twinBefore).some((r) => (r.status ?? 0) >= 500);
    if (!twinFive) return { status, problem: `${status} for a caller's mistake: ${text.slice(0, 300)}` };
  }
  if (status >= 400 && request.method !== 'HEAD') {
    const problem = errorShapeProblem(request, { url: response.url || `${ctx.url}${request.path}`, contentType, text });
    if (problem !== null) return { status, problem };
  }
  return { status, problem: null };
}

/** Runs `cases` mutated requests of one family; deterministic for a given seed. */
export async function fuzzFamily(options: {
  ctx: FuzzContext;
  family: Family;
  seed: number;
  cases: number;
}): Promise<FamilyResult> {
  const { ctx, family } = options;
  const rng = createRng(options.seed);
  const seeds = family.seeds(ctx);
  const failures: FuzzFailure[] = [];
  const statuses: Record<number, number> = {};
  for (let i = 0; i < options.cases; i++) {
    const request = mutate(rng.pick(seeds), { rng });
    const { status, problem } = await runCase(ctx, request);
    if (status !== null) statuses[status] = (statuses[status] ?? 0) + 1;
    if (problem !== null) failures.push({ case: i, request: describeRequest(request), problem });
  }
  return { cases: options.cases, failures, statuses };
}

/**
 * After a family: the gateway still records. A new rollout, a span under it, both read back as written; null when
 * all of that holds.
 */
export async function storeStillWorks(ctx: FuzzContext, tag: string): Promise<string | null> {
  const rollout = await postJson(ctx.url, '/v1/agl/rollouts', { input: { tag }, metadata: { fuzz: tag } });
  const rid: string = rollout.rollout_id;
  const aid: string = rollout.attempt.attempt_id;
  const spanId = `${Buffer.from(tag).toString('hex').padEnd(16, '0').slice(0, 16)}`;
  const span = {
    rollout_id: rid,
    attempt_id: aid,
    trace_id: `${'0'.repeat(31)}1`,
    span_id: spanId,
    parent_id: null,
    name: `after-${tag}`,
    status: { status_code: 'OK' },
    attributes: { 'fuzz.tag': tag, prompt_token_ids: [1, 2, 3] },
    events: [],
    links: [],
    start_time: 1_700_000_000,
    end_time: 1_700_000_001,
    context: null,
    parent: null,
    resource: { attributes: {}, schema_url: '' },
  };
  const stored = await postJson(ctx.url, '/v1/agl/spans', span);
  const got = (await (
    await fetch(`${ctx.url}/v1/agl/rollouts/${rid}`, { signal: AbortSignal.timeout(CASE_DEADLINE_MS) })
  ).json()) as { input?: unknown };
  if (JSON.stringify(got.input) !== JSON.stringify({ tag }))
    return `rollout input came back as ${JSON.stringify(got.input)}`;
  const found = await postJson(ctx.url, '/v1/agl/spans/search', { rollout_id: rid });
  const items: Array<{ span_id: string; name: string; attributes: Record<string, unknown>; sequence_id: number }> =
    found.items;
  const back = items.find((s) => s.span_id === spanId);
  if (back === undefined) return `span ${spanId} not found after the family (got ${items.length} spans)`;
  if (back.name !== span.name || back.attributes['fuzz.tag'] !== tag)
    return `span came back as ${JSON.stringify(back)}`;
  if (back.sequence_id !== stored.sequence_id)
    return `sequence id changed: ${stored.sequence_id} -> ${back.sequence_id}`;
  return null;
}

/**
 * Whether a plain chat call still answers 200 with a choice (the proxy path survived the family). A fuzzed pause
 * that was valid leaves the gateway paused, which is correct; both resume routes undo it first.
 */
export async function chatStillWorks(ctx: FuzzContext): Promise<string | null> {
  for (const path of ['/admin/resume', '/proxy/resume']) {
    const resumed = await fetch(`${ctx.url}${path}`, { method: 'POST', signal: AbortSignal.timeout(CASE_DEADLINE_MS) });
    if (resumed.status !== 200) return `${path}: ${resumed.status}`;
  }
  const response = await fetch(`${ctx.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: 'still there?' }], max_tokens: 4 }),
    signal: AbortSignal.timeout(CASE_DEADLINE_MS),
  });
  const text = await response.text();
  if (response.status !== 200) return `chat after the family: ${response.status} ${text.slice(0, 300)}`;
  const body = JSON.parse(text) as { choices?: unknown[] };
  return Array.isArray(body.choices) && body.choices.length > 0 ? null : `chat answer without choices: ${text}`;
}
