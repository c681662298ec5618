// The toy agent the "RL learns" tests train the tiny policy on (test/servers/tiny-policy.ts), shared by the
// TypeScript and the Python trainer's e2e tests so both train on exactly the same task.
import OpenAI from 'openai';
import type { AgentFunction } from '../../../src/runner/index.js';
import type { JsonObject, JsonValue } from '../../../src/store/core/types.js';
import { ACTIONS } from '../../servers/tiny-policy.js';

export const RL_MODEL = 'tiny-policy';

/** The letter that scores in `turn` of `task`. */
function targetAction(task: number, turn: number): string {
  return ACTIONS[(task * 5 + turn * 3 + 1) % ACTIONS.length] ?? 'a';
}

function taskOf(input: JsonValue): number {
  const value = (input as JsonObject).task;
  if (typeof value !== 'number') throw new Error('task input without a task number');
  return value;
}

/** Two turns: the second prompt continues the first token for token, so the trajectory merges and the
 * observation between the turns is masked out. Reward: half a point per turn that picks the task's letter. */
export const twoTurnAgent: AgentFunction = async (input, ctx) => {
  const task = taskOf(input);
  const client = new OpenAI({ baseURL: ctx.baseUrl, apiKey: ctx.apiKey, maxRetries: 0 });
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: `task ${task}` }];
  let score = 0;
  for (let turn = 0; turn < 2; turn++) {
    const answer = await client.chat.completions.create(
      { model: RL_MODEL, messages, max_tokens: 4 },
      { signal: ctx.signal },
    );
    const content = answer.choices[0]?.message.content ?? '';
    if (content === targetAction(task, turn)) score += 0.5;
    messages.push({ role: 'assistant', content }, { role: 'user', content: `observation ${turn}` });
  }
  return score;
};
