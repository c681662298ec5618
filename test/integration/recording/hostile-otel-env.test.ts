// No OTEL_* variable may change what the store receives (docs/durability.md): two real `rollgate serve` processes
// in front of one engine twin, one started with every OpenTelemetry variable at its most hostile value (sampler off,
// SDK disabled, attribute values cut to one character, one attribute per span, no exporter, tiny batch queues).
// The same attributed calls (chat, completions, Responses and Anthropic Messages; stream and not) go to both, and
// each is stored whole in both, with the same messages, token ids and logprobs: a call is answered only once it is
// stored, whatever the environment says of telemetry.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type ServingProcess, startServe } from '../../helpers/cli-process.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';

type Obj = Record<string, any>;

/** Every OpenTelemetry SDK variable, set to the value that would lose or cut the most if it reached the store. */
const HOSTILE_OTEL_ENV: Readonly<Record<string, string>> = {
  OTEL_SDK_DISABLED: 'true',
  OTEL_TRACES_SAMPLER: 'always_off',
  OTEL_TRACES_SAMPLER_ARG: '0',
  OTEL_TRACES_EXPORTER: 'none',
  OTEL_METRICS_EXPORTER: 'none',
  OTEL_LOGS_EXPORTER: 'none',
  OTEL_PROPAGATORS: 'none',
  OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '1',
  OTEL_ATTRIBUTE_COUNT_LIMIT: '1',
  OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: '1',
  OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: '1',
  OTEL_SPAN_EVENT_COUNT_LIMIT: '0',
  OTEL_SPAN_LINK_COUNT_LIMIT: '0',
  OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT: '0',
  OTEL_LINK_ATTRIBUTE_COUNT_LIMIT: '0',
  OTEL_BSP_MAX_QUEUE_SIZE: '1',
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '1',
  OTEL_BSP_SCHEDULE_DELAY: '600000',
  OTEL_BSP_EXPORT_TIMEOUT: '1',
  OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:9/v1/traces',
  OTEL_RESOURCE_ATTRIBUTES: 'service.name=hostile',
  OTEL_SERVICE_NAME: 'hostile',
  OTEL_LOG_LEVEL: 'none',
};

/** Long enough that any length limit shows, unique per call so no cache or history joins two calls. */
function message(tag: string): string {
  return `${tag}: ${'the quick brown fox jumps over the lazy dog. '.repeat(8)}`;
}

interface CallCase {
  readonly name: string;
  readonly path: string;
  readonly body: (tag: string, stream: boolean) => Obj;
}

const CASES: readonly CallCase[] = [
  {
    name: 'chat',
    path: 'v1/chat/completions',
    body: (tag, stream) => ({
      model: mock.model,
      messages: [{ role: 'user', content: message(tag) }],
      max_tokens: 12,
      stream,
    }),
  },
  {
    name: 'completions',
    path: 'v1/completions',
    body: (tag, stream) => ({ model: mock.model, prompt: message(tag), max_tokens: 12, logprobs: 1, stream }),
  },
  {
    name: 'responses',
    path: 'v1/responses',
    body: (tag, stream) => ({ model: mock.model, input: message(tag), max_output_tokens: 12, stream }),
  },
  {
    name: 'anthropic messages',
    path: 'v1/messages',
    body: (tag, stream) => ({
      model: mock.model,
      max_tokens: 12,
      messages: [{ role: 'user', content: message(tag) }],
      stream,
    }),
  },
];

/** What differs between two runs of one call by nature: ids, times, the request id, the engine's response id. */
const PER_RUN_ATTRIBUTES = new Set<string>([
  A.ATTR_REQUEST_ID,
  A.ATTR_GEN_AI_RESPONSE_ID,
  A.ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
]);

function comparable(span: Obj): Obj {
  const attributes: Obj = {};
  for (const [key, value] of Object.entries(span.attributes as Obj)) {
    if (!PER_RUN_ATTRIBUTES.has(key)) attributes[key] = value;
  }
  return { name: span.name, status: span.status, sequence_id: span.sequence_id, attributes };
}

let dir: string;
let mock: MockVllm;
const live: ChildProcess[] = [];
let plain: ServingProcess;
let hostile: ServingProcess;

async function serve(env: Readonly<Record<string, string>>, name: string): Promise<ServingProcess> {
  const proc = await startServe(
    ['--port', '0', '--store', `sqlite:${join(dir, `${name}.db`)}`, '--backend', mock.url],
    { cwd: dir, env, timeoutMs: 60_000 },
  );
  live.push(proc.child);
  return proc;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rollgate-otel-env-'));
  mock = await startMockVllm();
  [plain, hostile] = await Promise.all([serve({}, 'plain'), serve(HOSTILE_OTEL_ENV, 'hostile')]);
}, 120_000);

afterAll(async () => {
  for (const child of live) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await mock?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function call(base: string, rid: string, path: string, body: Obj): Promise<{ status: number; text: string }> {
  const response = await fetch(`${base}/rollout/${rid}/attempt/a1/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

async function storedSpans(base: string, rid: string): Promise<Obj[]> {
  const response = await fetch(`${base}/v1/agl/spans/search`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ rollout_id: rid }),
  });
  expect(response.status).toBe(200);
  const page = (await response.json()) as { items: Obj[] };
  return page.items;
}

describe('a gateway started with every OTEL_* variable at its most hostile value', () => {
  for (const testCase of CASES) {
    for (const stream of [false, true]) {
      it(`stores a ${testCase.name} call${stream ? ' (stream)' : ''} whole, as without those variables`, async () => {
        const rid = `ro-${testCase.name.replace(/ /g, '-')}-${stream ? 's' : 'w'}`;
        const body = testCase.body(rid, stream);
        const [plainAnswer, hostileAnswer] = await Promise.all([
          call(plain.url, rid, testCase.path, body),
          call(hostile.url, rid, testCase.path, body),
        ]);
        expect(plainAnswer.status, plainAnswer.text).toBe(200);
        // Recorded or refused: a 200 is only ever an answer that was stored.
        expect(hostileAnswer.status, hostileAnswer.text).toBe(200);
        const [plainSpans, hostileSpans] = await Promise.all([
          storedSpans(plain.url, rid),
          storedSpans(hostile.url, rid),
        ]);
        expect(plainSpans).toHaveLength(1);
        expect(hostileSpans).toHaveLength(1);
        const [reference, got] = [plainSpans[0] as Obj, hostileSpans[0] as Obj];
        const attributes = got.attributes as Obj;
        // Whole: the prompt as sent, the token ids and logprobs the engine returned.
        expect(String(attributes[A.ATTR_GEN_AI_INPUT_MESSAGES])).toContain(message(rid).trim());
        expect(String(attributes[A.ATTR_GEN_AI_OUTPUT_MESSAGES]).length).toBeGreaterThan(10);
        if (testCase.name === 'responses' && stream) {
          // A Responses stream carries no ids from the engine (docs/real-engines.md): the record says so, unchanged.
          expect(attributes[A.ATTR_TOKEN_IDS_REASON]).toBe(A.TOKEN_IDS_REASON_VALUE_STREAM_UNSUPPORTED);
        } else {
          expect((attributes[A.ATTR_PROMPT_TOKEN_IDS] as number[]).length).toBeGreaterThan(100);
          const responseIds = attributes[A.ATTR_RESPONSE_TOKEN_IDS] as number[];
          expect(responseIds.length).toBeGreaterThan(0);
          expect(attributes[A.ATTR_RESPONSE_LOGPROBS]).toHaveLength(responseIds.length);
          expect(attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe(A.TOKEN_IDS_STATUS_VALUE_OK);
        }
        expect(got.resource).toEqual(reference.resource);
        expect(comparable(got)).toEqual(comparable(reference));
      });
    }
  }
});
