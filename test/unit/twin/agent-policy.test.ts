// The engine twin's agent policy: tool arguments made from the tool schemas that Claude Code, Codex, opencode and pi
// really send (captured from their runs against the twin into harness-tools/, descriptions left out) validate
// against those schemas; the policy picks the shell, thinks, calls it once per step and answers after N steps; and
// it decides the same from token ids (the rendered Qwen3 prompt read back) as from the chat request, token for token.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentFinalText, argumentsFor, pickTool, STEPS_FILE, stepLine } from '../../servers/mock-vllm.js';
import { type AnyRecord, chat, twinsPerTest } from './harness.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const HINTS = { command: 'echo hi', text: 'Step 1', path: '.' } as const;

/** The harnesses' tools as the engine received them, and the shell each one's policy must pick. */
const HARNESSES = [
  { file: 'claude-code.json', shell: 'Bash' },
  { file: 'codex.json', shell: 'exec_command' },
  { file: 'opencode.json', shell: 'bash' },
  { file: 'pi.json', shell: 'bash' },
] as const;

function harnessTools(file: string): AnyRecord[] {
  return JSON.parse(readFileSync(join(HERE, 'harness-tools', file), 'utf8')) as AnyRecord[];
}

/** zod's own reading of a JSON schema, as the independent judge of the generated arguments. */
function validate(schema: unknown, value: unknown): string[] {
  const result = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]).safeParse(value);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('arguments from a tool schema', () => {
  for (const { file, shell } of HARNESSES) {
    it(`validate against every tool ${file.replace('.json', '')} offers, and its shell is picked`, () => {
      const tools = harnessTools(file);
      expect(tools.length).toBeGreaterThan(3);
      for (const tool of tools) {
        const args = argumentsFor(tool.function.parameters, HINTS);
        expect(validate(tool.function.parameters, args), tool.function.name).toEqual([]);
      }
      const picked = pickTool(tools);
      expect(picked?.name).toBe(shell);
      expect(Object.values(argumentsFor(picked?.parameters, HINTS))).toContain(HINTS.command);
    });
  }

  it('covers refs, branches, enums, consts, bounds and nested required properties', () => {
    const schema = {
      type: 'object',
      $defs: { Mode: { type: 'string', enum: ['fast', 'slow'] } },
      properties: {
        command: { type: ['string', 'null'], minLength: 3 },
        mode: { $ref: '#/$defs/Mode' },
        kind: { const: 'shell' },
        retries: { type: 'integer', minimum: -5, exclusiveMinimum: 0, maximum: 9 },
        ratio: { type: 'number', exclusiveMaximum: 0.5 },
        target: {
          anyOf: [{ type: 'null' }, { type: 'object', properties: { dir: { type: 'string' } }, required: ['dir'] }],
        },
        steps: {
          type: 'array',
          minItems: 2,
          items: { type: 'object', properties: { n: { type: 'boolean' } }, required: ['n'] },
        },
        both: {
          allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { required: ['a'] }],
        },
        argv: { type: 'array', items: { type: 'string' } },
        optional: { type: 'string', enum: ['never'] },
      },
      required: ['command', 'mode', 'kind', 'retries', 'ratio', 'target', 'steps', 'both'],
      additionalProperties: false,
    };
    const args = argumentsFor(schema, HINTS);
    expect(args).toEqual({
      command: 'echo hi',
      mode: 'fast',
      kind: 'shell',
      retries: 1,
      ratio: 0,
      target: { dir: '.' },
      steps: [{ n: false }, { n: false }],
      both: { a: 'Step 1' },
    });
    expect(validate(schema, args)).toEqual([]);
    // A command given as an argv runs the command string in a shell.
    const argv = {
      type: 'object',
      properties: { command: { type: 'array', items: { type: 'string' } } },
      required: ['command'],
    };
    expect(argumentsFor(argv, HINTS)).toEqual({ command: ['bash', '-lc', 'echo hi'] });
  });
});

const twins = twinsPerTest({ tokenizer: 'qwen3', policy: 'agent' });
const TOOLS = harnessTools('claude-code.json');
const TASK = { role: 'user', content: 'Run the steps of the task in the shell, then report.' };

/** The conversation after `done` tool steps of the policy (the tool calls as the harness sends them back). */
function conversation(done: number): AnyRecord[] {
  const messages: AnyRecord[] = [TASK];
  for (let k = 1; k <= done; k++) {
    const command = `echo ${stepLine(k)} | tee -a ${STEPS_FILE}`;
    messages.push({
      role: 'assistant',
      content: '',
      tool_calls: [
        { id: `call_${k}`, type: 'function', function: { name: 'Bash', arguments: JSON.stringify({ command }) } },
      ],
    });
    messages.push({ role: 'tool', tool_call_id: `call_${k}`, content: `${stepLine(k)}\n` });
  }
  return messages;
}

describe('the agent policy on the chat route', () => {
  it('thinks, calls the shell once per step with the step command, then answers', async () => {
    const h = await twins();
    for (const done of [0, 1]) {
      const res = (await h.client.chat.completions.create(
        chat({ messages: conversation(done), tools: TOOLS }),
      )) as unknown as AnyRecord;
      const message = res.choices[0].message;
      expect(res.choices[0].finish_reason).toBe('tool_calls');
      expect(message.reasoning).toContain(`Step ${done + 1} of 2`);
      expect(message.tool_calls).toHaveLength(1);
      expect(message.tool_calls[0].function.name).toBe('Bash');
      expect(JSON.parse(message.tool_calls[0].function.arguments)).toEqual({
        command: `echo ${stepLine(done + 1)} | tee -a ${STEPS_FILE}`,
      });
    }
    const last = (await h.client.chat.completions.create(
      chat({ messages: conversation(2), tools: TOOLS }),
    )) as unknown as AnyRecord;
    expect(last.choices[0].finish_reason).toBe('stop');
    expect(last.choices[0].message.content.trim()).toBe(agentFinalText(2));
    expect(last.choices[0].message.tool_calls).toBeUndefined();
    expect(last.choices[0].message.reasoning).toContain('2 tool steps are done');
  });

  it('answers without tools; follows tool_choice; `enable_thinking: false` keeps it from thinking; `agentSteps` sets the steps', async () => {
    const h = await twins({ agentSteps: 1 });
    const plain = (await h.client.chat.completions.create(chat({ messages: [TASK] }))) as unknown as AnyRecord;
    expect(plain.choices[0].message.content.trim()).toBe(agentFinalText(0));
    const quiet = (await h.client.chat.completions.create(
      chat({ messages: [TASK], tools: TOOLS, chat_template_kwargs: { enable_thinking: false } }),
    )) as unknown as AnyRecord;
    expect(quiet.choices[0].message.reasoning ?? null).toBeNull();
    expect(quiet.choices[0].message.tool_calls[0].function.name).toBe('Bash');
    const none = (await h.client.chat.completions.create(
      chat({ messages: [TASK], tools: TOOLS, tool_choice: 'none' }),
    )) as unknown as AnyRecord;
    expect(none.choices[0].message.content.trim()).toBe(agentFinalText(0));
    const forced = (await h.client.chat.completions.create(
      chat({ messages: [TASK], tools: TOOLS, tool_choice: { type: 'function', function: { name: 'Read' } } }),
    )) as unknown as AnyRecord;
    expect(forced.choices[0].message.tool_calls[0].function).toEqual({ name: 'Read', arguments: '{"file_path": "."}' });
    const after = (await h.client.chat.completions.create(
      chat({ messages: conversation(1), tools: TOOLS }),
    )) as unknown as AnyRecord;
    expect(after.choices[0].message.content.trim()).toBe(agentFinalText(1));
  });

  it('works in chars mode too (no thinking there), and the default policy is left as it was', async () => {
    const chars = await twins({ tokenizer: 'chars' });
    const res = (await chars.client.chat.completions.create(
      chat({ messages: [TASK], tools: TOOLS }),
    )) as unknown as AnyRecord;
    expect(res.choices[0].message.tool_calls[0].function.name).toBe('Bash');
    const scripted = await twins({ tokenizer: 'chars', policy: 'default' });
    const first = (await scripted.client.chat.completions.create(
      chat({ messages: [TASK], tools: TOOLS }),
    )) as unknown as AnyRecord;
    // The default model calls the first offered tool with its request and nonce (defaultRespond).
    expect(first.choices[0].message.tool_calls[0].function.name).toBe(TOOLS[0]?.function.name);
  });
});

describe('the agent policy from token ids', () => {
  it('reads tools and steps back from the rendered prompt: the same generation as the chat route, id for id', async () => {
    const h = await twins();
    for (const [done, kwargs] of [
      [0, {}],
      [1, {}],
      [2, {}],
      [1, { enable_thinking: false }],
    ] as const) {
      const messages = conversation(done);
      const body = { model: 'mock-model', messages, tools: TOOLS, chat_template_kwargs: kwargs };
      const viaChat = (await h.post('/v1/chat/completions', { ...body, return_token_ids: true })).body;
      const ids: number[] = (await h.post('/tokenize', body)).body.tokens;
      expect(viaChat.prompt_token_ids).toEqual(ids);
      const completion = (
        await h.post('/v1/completions', { model: 'mock-model', prompt: ids, max_tokens: 400, return_token_ids: true })
      ).body;
      expect(completion.choices[0].token_ids).toEqual(viaChat.choices[0].token_ids);
      const generated = (
        await h.post('/inference/v1/generate', { token_ids: ids, sampling_params: { max_tokens: 400 } })
      ).body;
      expect(generated.choices[0].token_ids).toEqual(viaChat.choices[0].token_ids);
      const text: string = completion.choices[0].text;
      expect(text.startsWith('<think>')).toBe(kwargs.enable_thinking !== false);
      expect(text.includes('<tool_call>')).toBe(done < 2);
    }
  });

  it('is deterministic for a prompt, and continues a plain (non-chat) prompt like the default model', async () => {
    const h = await twins();
    const ids: number[] = (await h.post('/tokenize', { model: 'mock-model', messages: conversation(1), tools: TOOLS }))
      .body.tokens;
    const once = (
      await h.post('/v1/completions', { model: 'mock-model', prompt: ids, max_tokens: 400, return_token_ids: true })
    ).body;
    const again = (
      await h.post('/v1/completions', { model: 'mock-model', prompt: ids, max_tokens: 400, return_token_ids: true })
    ).body;
    expect(again.choices[0].token_ids).toEqual(once.choices[0].token_ids);
    const plain = (await h.post('/v1/completions', { model: 'mock-model', prompt: 'Once upon a time', max_tokens: 64 }))
      .body;
    expect(plain.choices[0].text).toMatch(/^ mock-[0-9a-f]{8} continues: /);
  });
});
