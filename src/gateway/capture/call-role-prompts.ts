// The housekeeping prompts of the harnesses rollgate is run with, as they send them: Claude Code 2.1 and Codex 0.171
// (read from their installed builds), opencode 1.x and pi (from their sources). Each is the opening of the prompt,
// long enough that a task prompt will not contain it by chance; call-role.ts decides which calls it is looked for in.

/** Where the prompt is sent: as the system prompt, or as the last user message (after the whole conversation). */
export type PromptPlace = 'system' | 'last-user';

export interface HousekeepingPrompt {
  readonly text: string;
  readonly place: PromptPlace;
  /**
   * Also on a call that offers tools: compaction is sent with the loop's own tools by Claude Code and Codex. A title
   * prompt with tools is an agent loop that quotes it.
   */
  readonly withTools: boolean;
}

export const HOUSEKEEPING_PROMPTS: readonly HousekeepingPrompt[] = [
  // Claude Code: the session title helper.
  {
    text: 'You are naming a coding session so the user can pick it out of a long list of sessions',
    place: 'system',
    withTools: false,
  },
  // Claude Code (and opencode before its compaction agent): the compaction call's system prompt.
  { text: 'You are a helpful AI assistant tasked with summarizing conversations.', place: 'system', withTools: true },
  // Claude Code: the compaction instruction, full, partial and of the recent part.
  {
    text: 'Your task is to create a detailed summary of the conversation so far, paying close attention to the user',
    place: 'last-user',
    withTools: true,
  },
  {
    text: 'Your task is to create a detailed summary of this conversation. This summary will be placed at the start',
    place: 'last-user',
    withTools: true,
  },
  {
    text: 'Your task is to create a detailed summary of the RECENT portion of the conversation',
    place: 'last-user',
    withTools: true,
  },
  // Codex: the compaction instruction, appended to the conversation with the loop's tools.
  {
    text: 'You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary',
    place: 'last-user',
    withTools: true,
  },
  // Codex: the thread title.
  { text: 'Generate a concise, single-line task title of at most ', place: 'system', withTools: false },
  { text: 'Generate a concise, single-line task title of at most ', place: 'last-user', withTools: false },
  // opencode: the title generator it sends next to every first turn, its compaction agent and the compaction
  // instruction, and its session summary agent.
  { text: 'You are a title generator. You output ONLY a thread title.', place: 'system', withTools: false },
  { text: 'You are a context summarization agent.', place: 'system', withTools: true },
  { text: 'Provide a detailed prompt for continuing our conversation above.', place: 'last-user', withTools: true },
  {
    text: 'Summarize what was done in this conversation. Write like a pull request description.',
    place: 'system',
    withTools: true,
  },
  // pi: compaction, its updates and branch summaries all run under this system prompt.
  { text: 'You are a context summarization assistant.', place: 'system', withTools: true },
];

/**
 * How much of a text is searched: every prompt above opens its message (or, for Claude Code, follows its short
 * billing line in the same system prompt), so a main system prompt of tens of kB is not read to its end on every
 * call (measured: 4 prompts over 4 kB cost 5 us a call, over 1 kB about a quarter of that).
 */
export const PROMPT_SEARCH_CHARS = 1024;

/** Subagent system prompts: their own thread, but the policy acting on the task (as Claude Code labels them). */
export const SUBAGENT_PROMPTS: readonly string[] = [
  // Claude Code: the Task tool's subagents.
  "You are an agent for Claude Code, Anthropic's official CLI for Claude.",
];
