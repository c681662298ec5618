// What the pool's context allows a call, before it goes upstream: the engine's context length goes on the span
// (training rows are held to it when the trainer declares no limit, docs/trajectories.md), and the agent's max
// tokens are lowered to the pool's `clampMaxTokens` (docs/gateway.md): harnesses ask for a fixed budget (Claude Code
// 32,000) that a 32k engine refuses with any prompt, and a lowered budget gives the agent a normal answer instead.
// The agent's own value stays in rollgate.request.overrides like any key the gateway changed.
import * as A from '../../contracts/span-attributes.js';
import { renderBody } from '../history/completion-request.js';
import { renderOnEngine } from '../history/engine-render.js';
import type { FaithfulPlan } from '../history/faithful-call.js';
import type { ResolvedRoute } from '../pools/model-registry.js';
import { MAX_TOKENS_KEYS } from '../request/body-rewrite.js';
import { translateResponsesRequest } from '../responses-via-chat/request.js';
import type { CallRun } from './call-run.js';

/** The largest answer budget the agent asked for on this route; null when it set none. */
function requestedMaxTokens(run: CallRun): number | null {
  let largest: number | null = null;
  for (const key of MAX_TOKENS_KEYS[run.call.endpoint]) {
    const value = run.call.body[key];
    if (typeof value === 'number' && (largest === null || value > largest)) largest = value;
  }
  return largest;
}

/** The body of the engine's POST /tokenize that renders this call's prompt as its route would; null: none fits. */
function tokenizeBody(run: CallRun, route: ResolvedRoute): Record<string, unknown> | null {
  const { body, endpoint } = run.call;
  const model = route.model.upstreamModel ?? String(body.model ?? '');
  if (endpoint === 'chat') return Array.isArray(body.messages) ? renderBody(body, model) : null;
  if (endpoint === 'completions') return typeof body.prompt === 'string' ? { model, prompt: body.prompt } : null;
  try {
    // The engine's Responses route renders the same conversation with the same template.
    return renderBody(translateResponsesRequest(body).chat, model);
  } catch {
    // A request the translation refuses goes on as sent: the engine reports its own problems.
    return null;
  }
}

/** The prompt's length in ids and the engine's context length; null when the engine could not tell. */
async function promptFit(
  run: CallRun,
  route: ResolvedRoute,
  faithful: FaithfulPlan | null,
  contextLength: number | null,
): Promise<{ promptLength: number; maxModelLen: number } | null> {
  // A faithful call's prompt is the spliced one, already rendered on the engine.
  if (faithful !== null) return { promptLength: faithful.promptLength, maxModelLen: faithful.maxModelLen };
  const prompt = run.call.body.prompt;
  if (run.call.endpoint === 'completions' && Array.isArray(prompt) && prompt.every(Number.isInteger)) {
    return contextLength === null ? null : { promptLength: prompt.length, maxModelLen: contextLength };
  }
  const body = tokenizeBody(run, route);
  if (body === null) return null;
  const rendering = await renderOnEngine({ backend: route.backend, body, abort: run.abort });
  return rendering === null ? null : { promptLength: rendering.ids.length, maxModelLen: rendering.maxModelLen };
}

/**
 * Records the pool's context length on the call's span and returns the most the call's max tokens may ask for
 * (undefined: as the agent sent them). A call whose model resolves to no pool goes on untouched: the tries report it.
 */
export async function fitToContext(run: CallRun, faithful: FaithfulPlan | null): Promise<number | undefined> {
  const { call, context, record } = run;
  let route: ResolvedRoute;
  try {
    route = context.registry.resolve(call.poolModel ?? call.body.model, { rolloutId: call.attribution?.rid ?? null });
  } catch {
    return undefined;
  }
  const contextLength = await context.contextLengths.of(route);
  if (contextLength !== null) record.set(A.ATTR_ENGINE_MAX_MODEL_LEN, contextLength);
  const clamp = route.model.clampMaxTokens;
  const requested = requestedMaxTokens(run);
  if (requested === null || (clamp.atMost === undefined && !clamp.toContext)) return undefined;
  let limit = clamp.atMost ?? Number.POSITIVE_INFINITY;
  let reason: A.MaxTokensClampReason = A.MAX_TOKENS_CLAMP_VALUE_AT_MOST;
  if (clamp.toContext) {
    const fit = await promptFit(run, route, faithful, contextLength);
    const left = fit === null ? 0 : fit.maxModelLen - fit.promptLength;
    // A prompt that leaves nothing is the engine's to refuse: no budget would make it fit.
    if (left >= 1 && left < limit) {
      limit = left;
      reason = A.MAX_TOKENS_CLAMP_VALUE_CONTEXT;
    }
  }
  if (requested <= limit) return undefined;
  record.set(A.ATTR_REQUEST_MAX_TOKENS_CLAMP, reason);
  return limit;
}
