// What the optimizer model is asked (docs/algorithms.md). One variant is picked per call with the run's
// seeded RNG. Written here as plain TypeScript; the wording is rollgate's own.
import type { Experiment } from './experiments.js';

export interface OptimizerMessage {
  role: 'system' | 'user';
  content: string;
}

export interface GradientPromptInput {
  readonly promptTemplate: string;
  readonly experiments: readonly Experiment[];
}

export interface EditPromptInput {
  readonly promptTemplate: string;
  readonly critique: string;
}

export interface PromptVariant<I> {
  readonly name: string;
  build(input: I): OptimizerMessage[];
}

function fence(text: string): string {
  return `<<<\n${text}\n>>>`;
}

function runsWithMessages(experiments: readonly Experiment[]): string {
  return experiments
    .map(
      (e, i) =>
        `### Run ${i + 1}\nStatus: ${e.status}. Final reward: ${e.final_reward ?? 'none'}.\n` +
        `Messages:\n${JSON.stringify(e.messages, null, 1)}`,
    )
    .join('\n\n');
}

function runsWithSpans(experiments: readonly Experiment[]): string {
  return experiments
    .map(
      (e, i) =>
        `### Run ${i + 1} (status ${e.status}, reward ${e.final_reward ?? 'none'})\n` +
        `${JSON.stringify(e.spans, null, 1)}`,
    )
    .join('\n\n');
}

export const GRADIENT_VARIANTS: readonly PromptVariant<GradientPromptInput>[] = [
  {
    name: 'gradient-bullets',
    build: ({ promptTemplate, experiments }) => [
      { role: 'system', content: 'You improve prompt templates by studying how they performed.' },
      {
        role: 'user',
        content:
          `Prompt template under study:\n${fence(promptTemplate)}\n\n` +
          `Runs that used it:\n${runsWithMessages(experiments)}\n\n` +
          'Write a short critique: the concrete reasons runs lost reward and what would raise it next time. ' +
          'Answer as a bullet list of specific, testable changes (output format, constraints, ordering, definitions).',
      },
    ],
  },
  {
    name: 'gradient-spans',
    build: ({ promptTemplate, experiments }) => [
      {
        role: 'system',
        content: 'You are a prompt engineer diagnosing why a prompt did not produce the right behaviour.',
      },
      {
        role: 'user',
        content:
          `Current prompt template:\n${fence(promptTemplate)}\n\n` +
          'Trace spans recorded during sample runs (prompts, responses and rewards):\n' +
          `${runsWithSpans(experiments)}\n\n` +
          "Reply with 3 to 5 short bullets under the heading 'Critique:' about missing constraints, ordering or formatting.",
      },
    ],
  },
  {
    name: 'gradient-rubric',
    build: ({ promptTemplate, experiments }) => [
      {
        role: 'system',
        content:
          'You review prompts. Check, in this order: structure (is the goal stated, do rules contradict, is there a ' +
          'stop condition), instruction quality (precise verbs, clear priorities, no duplicated rules), control ' +
          '(limits on tools and retries, how to handle uncertainty, verbosity), input and output specification ' +
          '(defaults for missing input, an explicit output format, a final self-check), scope and safety, and ' +
          'efficiency (no over-explaining, stated assumptions).',
      },
      {
        role: 'user',
        content:
          `Prompt:\n${fence(promptTemplate)}\n\nSample runs with their scores:\n${runsWithMessages(experiments)}\n\n` +
          'Give a direct critique of the prompt in under 350 words, focused on what made runs fail.',
      },
    ],
  },
];

export const EDIT_VARIANTS: readonly PromptVariant<EditPromptInput>[] = [
  {
    name: 'edit-rewrite',
    build: ({ promptTemplate, critique }) => [
      {
        role: 'system',
        content:
          'Revise the prompt template, treating the critique as requirements. Restructure it if the critique calls ' +
          'for it; include any output format, structure or length the critique asks for; say what to do before how ' +
          'to do it. Keep every {placeholder} in curly braces exactly as written. Return only the new template, ' +
          'with no explanation, heading or preamble.',
      },
      { role: 'user', content: `Prompt template:\n${fence(promptTemplate)}\n\nCritique:\n${fence(critique)}` },
    ],
  },
  {
    name: 'edit-conservative',
    build: ({ promptTemplate, critique }) => [
      {
        role: 'system',
        content:
          'Revise the prompt to fix the single most important point of the critique, and only that one. Keep the ' +
          'tone, length and structure close to the original and keep every {placeholder} in curly braces. ' +
          'Return only the full revised prompt.',
      },
      { role: 'user', content: `PROMPT:\n${fence(promptTemplate)}\n\nCRITIQUE:\n${fence(critique)}` },
    ],
  },
];

/** Models sometimes wrap the template in a code fence or the fence markers used above; remove them. */
export function cleanEditedTemplate(text: string): string {
  let out = text.trim();
  const fenced = /^```[a-zA-Z]*\n([\s\S]*?)\n```$/.exec(out);
  if (fenced?.[1] !== undefined) out = fenced[1].trim();
  if (out.startsWith('<<<') && out.endsWith('>>>')) out = out.slice(3, -3).trim();
  return out;
}
