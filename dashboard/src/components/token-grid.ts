// Monospace token grids. Response tokens are heat-coloured by their probability and the ones under
// the chosen threshold are outlined, so a reader finds the model's unsure choices at a glance.
import { h } from '../dom.js';
import type { ResponseToken } from '../spans.js';

export const LOW_PROB_THRESHOLDS = [0.5, 0.2, 0.1, 0.05, 0.01] as const;
export const DEFAULT_LOW_PROB_THRESHOLD = 0.1;
const COLLAPSED_PROMPT_TOKENS = 512;

/** Red (p = 0) through amber to green (p = 1). */
export function heatColour(probability: number): string {
  const p = Math.min(1, Math.max(0, probability));
  return `hsl(${Math.round(p * 120)}, 75%, ${Math.round(86 + p * 6)}%)`;
}

/** Whitespace made visible: a token that is only a space or newline must still show as a cell. */
export function visibleToken(text: string): string {
  return text.replace(/\n/g, '↵').replace(/\t/g, '⇥').replace(/ /g, '·');
}

function tokenTitle(token: ResponseToken, index: number): string {
  const lines = [`#${index}  id ${token.id ?? '?'}`];
  if (token.text !== null) lines.push(`text ${JSON.stringify(token.text)}`);
  if (token.logprob !== null)
    lines.push(`logprob ${token.logprob.toFixed(4)}  p ${Math.exp(token.logprob).toFixed(4)}`);
  if (token.top.length > 0) {
    lines.push('top:');
    for (const t of token.top) lines.push(`  ${JSON.stringify(t.token)}  ${t.logprob.toFixed(3)}`);
  }
  return lines.join('\n');
}

export interface ResponseGridOptions {
  readonly tokens: readonly ResponseToken[];
  readonly threshold: number;
  readonly showIds: boolean;
}

export function responseTokenGrid(options: ResponseGridOptions): HTMLElement {
  const { tokens, threshold, showIds } = options;
  const cells = tokens.map((token, index) => {
    const probability = token.logprob === null ? null : Math.exp(token.logprob);
    const isLow = probability !== null && probability < threshold;
    const label = showIds || token.text === null ? String(token.id ?? '?') : visibleToken(token.text);
    return h(
      'span',
      {
        class: `tok${isLow ? ' low' : ''}${probability === null ? ' nolp' : ''}`,
        title: tokenTitle(token, index),
        style: probability === null ? undefined : { background: heatColour(probability) },
        dataset: {
          index: String(index),
          ...(token.id !== null ? { id: String(token.id) } : {}),
          ...(token.logprob !== null ? { logprob: String(token.logprob) } : {}),
        },
      },
      label,
    );
  });
  return h('div', { class: 'token-grid mono', dataset: { testid: 'response-tokens' } }, cells);
}

export function promptTokenGrid(ids: readonly number[]): HTMLElement {
  const grid = h('div', { class: 'token-grid mono ids', dataset: { testid: 'prompt-tokens' } });
  const renderCells = (count: number): void => {
    grid.replaceChildren(
      ...ids.slice(0, count).map((id, i) => h('span', { class: 'tok id', title: `#${i}` }, String(id))),
    );
    if (count < ids.length) {
      grid.append(
        h(
          'button',
          { type: 'button', class: 'btn small', on: { click: () => renderCells(ids.length) } },
          `show all ${ids.length}`,
        ),
      );
    }
  };
  renderCells(Math.min(ids.length, COLLAPSED_PROMPT_TOKENS));
  return grid;
}

export interface LogprobSummary {
  readonly count: number;
  readonly mean: number | null;
  readonly min: number | null;
  readonly low: number;
}

export function summarizeLogprobs(tokens: readonly ResponseToken[], threshold: number): LogprobSummary {
  const values = tokens.flatMap((t) => (t.logprob === null ? [] : [t.logprob]));
  if (values.length === 0) return { count: 0, mean: null, min: null, low: 0 };
  const logThreshold = Math.log(threshold);
  return {
    count: values.length,
    mean: values.reduce((a, b) => a + b, 0) / values.length,
    min: Math.min(...values),
    low: values.filter((v) => v < logThreshold).length,
  };
}
