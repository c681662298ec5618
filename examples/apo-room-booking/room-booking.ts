// The room-booking task for APO: given a meeting (attendees, equipment, step-free access) and a list of
// rooms, the agent must name the one room that fits. The seed prompt states no rules, so a model that
// follows its prompt literally picks the first room listed; APO has to discover the rules below.
import OpenAI from 'openai';
import { formatTemplate } from '../../src/algorithms/apo/placeholders.js';
import type { AgentFunction } from '../../src/runner/types.js';
import type { JsonValue, NamedResources } from '../../src/store/core/types.js';

export interface Room {
  name: string;
  capacity: number;
  equipment: string[];
  step_free: boolean;
}

export interface RoomTask {
  id: string;
  meeting: { attendees: number; equipment: string[]; step_free: boolean };
  rooms: Room[];
  expected: string;
}

/** The instructions a good prompt contains, word for word as the optimizer proposes them. */
export const RULES = {
  capacity: 'Only pick a room whose capacity is at least the number of attendees.',
  equipment: 'Only pick a room that has every piece of equipment the meeting asks for.',
  access: 'If the meeting needs step-free access, only pick a step-free room.',
} as const;
export type RuleName = keyof typeof RULES;

export const PROMPT_RESOURCE_NAME = 'room_prompt';

export const SEED_PROMPT =
  'You book meeting rooms. Choose one room for the meeting below.\n' +
  'Meeting: {meeting}\n' +
  'Rooms:\n{rooms}\n' +
  'Answer with the room name only.';

/** The model-facing text of one task under a prompt template. */
export function formatRoomPrompt(template: string, task: RoomTask): string {
  return formatTemplate(template, {
    meeting: JSON.stringify(task.meeting),
    rooms: task.rooms.map((r) => `- ${JSON.stringify(r)}`).join('\n'),
  });
}

export function isRoomTask(value: JsonValue): value is RoomTask & JsonValue {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && 'rooms' in value && 'meeting' in value;
}

function promptFrom(resources: NamedResources | null): string {
  const resource = resources?.[PROMPT_RESOURCE_NAME] as { template?: unknown } | undefined;
  return typeof resource?.template === 'string' ? resource.template : SEED_PROMPT;
}

export interface RoomAgentOptions {
  /** Model name agents request from the gateway. */
  readonly model: string;
  /** Counts every LLM call the agent makes (tests compare it with the recorded spans). */
  readonly onCall?: () => void;
}

/** The agent: one chat call through the attempt's gateway route; reward 1 for the right room, else 0. */
export function roomAgent(options: RoomAgentOptions): AgentFunction {
  return async (task, ctx) => {
    if (!isRoomTask(task)) throw new Error('not a room-booking task');
    const client = new OpenAI({ baseURL: ctx.baseUrl, apiKey: ctx.apiKey, maxRetries: 0 });
    options.onCall?.();
    const completion = await client.chat.completions.create(
      {
        model: options.model,
        temperature: 0,
        messages: [{ role: 'user', content: formatRoomPrompt(promptFrom(ctx.resources), task) }],
      },
      { signal: ctx.signal },
    );
    const answer = completion.choices[0]?.message.content?.trim() ?? '';
    return answer === task.expected ? 1 : 0;
  };
}
