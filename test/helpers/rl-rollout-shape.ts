// One rollout of a realistic RL run, as the gateway records it (the shape of issue 14's measurements): 4 chat calls;
// call 1 sends 1,550 prompt ids, each later call re-sends the previous prompt + response + 100 new ids (~2,000
// prompt ids on average), 200 response ids with logprobs (float32 values, as engines compute them) and the
// engine's `logprobs.content` (its tokens spell the answer), and ~8 KB of GenAI messages (a 3 KB system prompt,
// tools, a history that grows).
// Deterministic: the same seed gives the same bytes. Used by the store-scale benchmark and the span format tests.

import { createRng } from '../../src/algorithms/rng.js';
import type { Attributes } from '../../src/store/core/types.js';

const CALLS_PER_ROLLOUT = 4;
const FIRST_PROMPT_IDS = 1_550;
const NEW_IDS_PER_TURN = 100;
export const RESPONSE_IDS = 200;
const VOCAB = 151_000;

const WORDS = (
  'the a of to and in is that for it as with was on be by this are or from at an which but not have has ' +
  'file function return value error test call result line code data list string number type read write ' +
  'open close run check need should will can could would first next then also only when where because ' +
  'agent tool output input path directory module import export class method object array index count'
).split(' ');

function prose(random: () => number, chars: number): string {
  const parts: string[] = [];
  let length = 0;
  while (length < chars) {
    const word = WORDS[Math.floor(random() * WORDS.length)]!;
    parts.push(word);
    length += word.length + 1;
  }
  return parts.join(' ');
}

function ids(random: () => number, count: number): number[] {
  return Array.from({ length: count }, () => Math.floor(random() * VOCAB));
}

/** The text of a generated token: a word with its leading space, as BPE vocabularies hold most words. */
function tokenText(random: () => number): string {
  return ` ${WORDS[Math.floor(random() * WORDS.length)]}`;
}

const SYSTEM_PROMPT = prose(createRng(1).next, 3_000);
const TOOLS = JSON.stringify(
  Array.from({ length: 4 }, (_, i) => ({
    type: 'function',
    function: {
      name: `tool_${i}`,
      description: prose(createRng(10 + i).next, 300),
      parameters: { type: 'object', properties: { path: { type: 'string' } } },
    },
  })),
);

interface Turn {
  role: string;
  parts: Array<{ type: string; content: string }>;
}

/** The attributes of the 4 calls of one rollout, as the gateway records them. */
/**
 * The answer half of a recorded chat call's attributes, as the gateway writes them: finish reason, prompt and
 * response ids, logprobs and the engine's `logprobs.content`, usage, the output message.
 */
export function answerAttributes(options: {
  prompt: number[];
  response: number[];
  logprobs: number[];
  content: unknown[];
  text: string;
  finishReason: string;
}): Attributes {
  const { prompt, response, logprobs, content, text, finishReason } = options;
  return {
    'gen_ai.response.finish_reasons': [finishReason],
    prompt_token_ids: prompt,
    response_token_ids: response,
    'rollgate.response.logprobs': logprobs,
    'logprobs.content': JSON.stringify(content),
    'gen_ai.usage.input_tokens': prompt.length,
    'gen_ai.usage.output_tokens': response.length,
    'gen_ai.output.messages': JSON.stringify([
      { role: 'assistant', parts: [{ type: 'text', content: text }], finish_reason: finishReason },
    ]),
  };
}

export function rolloutCalls(rolloutId: string, attemptId: string, seed: number): Attributes[] {
  const random = createRng(seed).next;
  const calls: Attributes[] = [];
  const history: Turn[] = [
    { role: 'system', parts: [{ type: 'text', content: SYSTEM_PROMPT }] },
    { role: 'user', parts: [{ type: 'text', content: prose(random, 600) }] },
  ];
  let prompt = ids(random, FIRST_PROMPT_IDS);
  for (let call = 0; call < CALLS_PER_ROLLOUT; call++) {
    const response = ids(random, RESPONSE_IDS);
    const logprobs = response.map(() => Math.fround(-random() * 3));
    // The answer is what the response ids spell: the tokens of logprobs.content, joined.
    const tokens = response.map(() => tokenText(random));
    const content = tokens.map((token, i) => {
      return { token, logprob: logprobs[i]!, bytes: [...Buffer.from(token, 'utf8')], top_logprobs: [] };
    });
    const answer = tokens.join('');
    calls.push({
      'gen_ai.operation.name': 'chat',
      'rollgate.request_id': `req-${rolloutId}-${call}`,
      'agentlightning.rollout_id': rolloutId,
      'agentlightning.attempt_id': attemptId,
      'gen_ai.conversation.id': rolloutId,
      'agentlightning.span_sequence_id': call + 1,
      'gen_ai.request.model': 'qwen3-8b',
      'gen_ai.input.messages': JSON.stringify(history),
      'gen_ai.tool.definitions': TOOLS,
      'rollgate.call.role': 'main',
      'gen_ai.provider.name': 'vllm',
      'rollgate.backend': 'http://10.0.0.7:8000/v1',
      'rollgate.model_version': 3,
      'rollgate.logprobs.mode': 'raw',
      'rollgate.token_ids.status': 'ok',
      'gen_ai.response.id': `chatcmpl-${rolloutId}-${call}`,
      ...answerAttributes({ prompt, response, logprobs, content, text: answer, finishReason: 'stop' }),
    });
    history.push(
      { role: 'assistant', parts: [{ type: 'text', content: answer }] },
      { role: 'tool', parts: [{ type: 'text', content: prose(random, 500) }] },
    );
    prompt = [...prompt, ...response, ...ids(random, NEW_IDS_PER_TURN)];
  }
  return calls;
}
