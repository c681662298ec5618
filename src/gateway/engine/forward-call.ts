// What a route hands the forward engine for one call: the parsed request, its attribution and the agent's sink.
import type { Attributes } from '@opentelemetry/api';
import type { Endpoint } from '../../contracts/call-record.js';
import type { CallRoleHints } from '../capture/call-role.js';
import type { AgentView } from '../request/agent-view.js';
import type { RolloutModeHint } from '../request/body-rewrite.js';
import type { AgentSink } from '../stream/agent-sink.js';
import type { ContinuedPrefix } from '../swap/continued-call.js';

export interface CallAttribution {
  readonly rid: string;
  readonly aid: string;
  readonly seq: number;
}

export interface ForwardCall {
  readonly endpoint: Endpoint;
  /** The client's parsed JSON body; it is not mutated. */
  readonly body: Readonly<Record<string, unknown>>;
  /** The bytes `body` was parsed from, when the route kept them (see upstream-payload.ts). */
  readonly rawBody?: Buffer;
  readonly attribution: CallAttribution | null;
  readonly mode: RolloutModeHint;
  /** Body keys forced after the standard rewrite, e.g. the v1 mode's temperature (see body-rewrite.ts). */
  readonly forcedBody?: Readonly<Record<string, unknown>>;
  /** The pool to route to when it is not the body's `model` (v1 sends every call to its one pool). */
  readonly poolModel?: string;
  readonly requestId: string;
  /** X-Stainless-Retry-Count, when the client sent a valid one. */
  readonly clientRetryCount: number | null;
  readonly sink: AgentSink;
  /** Headers earlier middleware prepared for the answer (CORS for browser agents); sent with ours. */
  readonly extraHeaders?: Readonly<Record<string, string>>;
  /**
   * Set for temperature-0 calls only (the route skips the header read otherwise): the client's
   * x-rollgate-cache header and whether the call's rollout opted in to the response cache.
   */
  readonly cacheOptIn?: { readonly header: string | undefined; readonly rollout: boolean };
  /**
   * Overrides the pool's agent view for this call: a translating route (the Messages API) reads the whole answer
   * itself and never passes token ids or logprobs on, so it asks for `raw` and skips the stripping.
   */
  readonly agentView?: AgentView;
  /** Set on the call's span with the request attributes (e.g. which API the agent spoke). */
  readonly spanAttributes?: Attributes;
  /** What the request's headers say of its role; when set, the span gets `rollgate.call.role` (call-role.ts). */
  readonly callRole?: CallRoleHints;
  /**
   * Set on the continuation of a stream a weight swap aborted: what the agent already has of the answer. The span
   * records the whole answer as the agent saw it (continued-call.ts).
   */
  readonly continues?: ContinuedPrefix;
}
