// Two stand-in models speaking the OpenAI chat API on real sockets, for the APO example, test and bench.
//
// startRoomModel(): the "agent model". It follows its prompt literally: it applies only the room-booking
// rules (examples/apo-room-booking RULES) that the prompt states word for word, then answers with the first
// room left. So its answers are right only when the prompt contains every rule the task needs.
//
// startOptimizerModel(): the "optimizer". A critique request (rollgate's gradient prompts) gets one bullet
// `Add the rule: "<rule>"` per rule that a failed run's meeting needed and the template lacks; an edit request
// (the "Revise ..." prompts) inserts the rules the critique names after the template's first line (the
// conservative variant inserts only the first). Deterministic, so the test can assert the outcome.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Room, type RoomTask, RULES, type RuleName } from '../../examples/apo-room-booking/room-booking.js';

export interface StandInModel {
  /** Base URL ending in /v1. */
  readonly url: string;
  /** Chat requests received. */
  readonly calls: () => number;
  /** Raw request bodies received, in arrival order. */
  readonly bodies: () => readonly string[];
  /** Optional per-request latency (bench: a GPU's worth of waiting). */
  setLatencyMs(ms: number): void;
  close(): Promise<void>;
}

interface ChatRequest {
  model?: string;
  messages?: Array<{ role?: string; content?: unknown }>;
  return_token_ids?: boolean;
  logprobs?: boolean;
}

/** One token per character, as a vLLM with a toy tokenizer would report them. */
function toyTokenIds(text: string): number[] {
  return [...text].map((ch) => ch.codePointAt(0) ?? 0);
}

type Answer = (request: ChatRequest) => string;

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function textOf(request: ChatRequest): string {
  return (request.messages ?? []).map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
}

async function serve(answer: Answer): Promise<StandInModel> {
  let calls = 0;
  const bodies: string[] = [];
  let latencyMs = 0;
  let counter = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && req.url?.endsWith('/health')) return send(200, { status: 'ok' });
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      return send(404, { error: { message: 'not found', type: 'invalid_request_error' } });
    }
    readBody(req)
      .then(async (raw) => {
        const request = JSON.parse(raw) as ChatRequest;
        calls++;
        bodies.push(raw);
        if (latencyMs > 0) await new Promise((r) => setTimeout(r, latencyMs));
        const content = answer(request);
        const ids = toyTokenIds(content);
        // Like vLLM asked for return_token_ids / logprobs, so recorded spans carry token-level data.
        const choice: Record<string, unknown> = {
          index: 0,
          message: { role: 'assistant', content },
          finish_reason: 'stop',
        };
        if (request.return_token_ids === true) choice.token_ids = ids;
        if (request.logprobs === true) {
          choice.logprobs = {
            content: [...content].map((token) => ({ token, logprob: -0.5, bytes: [], top_logprobs: [] })),
          };
        }
        send(200, {
          id: `chatcmpl-standin-${++counter}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: request.model ?? 'stand-in',
          ...(request.return_token_ids === true ? { prompt_token_ids: toyTokenIds(textOf(request)) } : {}),
          choices: [choice],
          usage: { prompt_tokens: 1, completion_tokens: ids.length, total_tokens: 1 + ids.length },
        });
      })
      .catch((error: unknown) => send(400, { error: { message: String(error), type: 'invalid_request_error' } }));
  });
  server.keepAliveTimeout = 120_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | null = null;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    calls: () => calls,
    bodies: () => bodies,
    setLatencyMs(ms) {
      latencyMs = ms;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

// ---- the agent model ------------------------------------------------------------------------------------

function parseTask(prompt: string): Pick<RoomTask, 'meeting' | 'rooms'> | null {
  const meetingLine = /^Meeting: (.*)$/m.exec(prompt)?.[1];
  if (meetingLine === undefined) return null;
  const rooms = [...prompt.matchAll(/^- (\{.*\})$/gm)].map((m) => JSON.parse(m[1] ?? '{}') as Room);
  return { meeting: JSON.parse(meetingLine) as RoomTask['meeting'], rooms };
}

export function chooseRoom(prompt: string): string {
  const task = parseTask(prompt);
  if (!task) return 'I need a meeting and a list of rooms.';
  const has = (rule: RuleName) => prompt.includes(RULES[rule]);
  const fits = (room: Room) =>
    (!has('capacity') || room.capacity >= task.meeting.attendees) &&
    (!has('equipment') || task.meeting.equipment.every((e) => room.equipment.includes(e))) &&
    (!has('access') || !task.meeting.step_free || room.step_free);
  return task.rooms.find(fits)?.name ?? 'none';
}

export function startRoomModel(): Promise<StandInModel> {
  return serve((request) => chooseRoom(textOf(request)));
}

// ---- the optimizer model --------------------------------------------------------------------------------

const FENCED = /<<<\n([\s\S]*?)\n>>>/g;

function neededRules(chunk: string): RuleName[] {
  // Evidence is JSON inside text, possibly escaped more than once: match keys with optional backslashes.
  const needs: RuleName[] = [];
  if (/attendees\\*"?\s*:\s*\d/.test(chunk)) needs.push('capacity');
  if (/equipment\\*"?\s*:\s*\[\s*\\*"/.test(chunk)) needs.push('equipment');
  if (/step_free\\*"?\s*:\s*true/.test(chunk)) needs.push('access');
  return needs;
}

export function critique(prompt: string): string {
  const template = [...prompt.matchAll(FENCED)][0]?.[1] ?? '';
  const runs = prompt.split(/^### Run /m).slice(1);
  const missing = new Set<RuleName>();
  for (const run of runs) {
    const header = run.split('\n', 2).join(' ');
    const failed = /reward:? (0|none)\b/i.test(header);
    if (!failed) continue;
    for (const rule of neededRules(run)) if (!template.includes(RULES[rule])) missing.add(rule);
  }
  if (missing.size === 0) return '';
  return [...missing].map((rule) => `- Add the rule: "${RULES[rule]}"`).join('\n');
}

export function applyEdit(prompt: string, conservative: boolean): string {
  const [template = '', critiqueText = ''] = [...prompt.matchAll(FENCED)].map((m) => m[1]);
  const named = [...critiqueText.matchAll(/Add the rule: "([^"]+)"/g)].map((m) => m[1] ?? '');
  const rules = (conservative ? named.slice(0, 1) : named).filter((r) => r !== '' && !template.includes(r));
  const [first = '', ...rest] = template.split('\n');
  return [first, ...rules, ...rest].join('\n');
}

export function startOptimizerModel(): Promise<StandInModel> {
  return serve((request) => {
    const system = request.messages?.find((m) => m.role === 'system')?.content;
    const text = textOf(request);
    if (typeof system === 'string' && system.startsWith('Revise')) {
      return applyEdit(text, system.includes('single most important point'));
    }
    return critique(text);
  });
}
