// Trainer protocol (docs/rl.md; schema at GET /v1/rl/schema):
//   GET  /v1/rl/batches/next?timeout_s=30   long poll: 200 the oldest unacknowledged batch (JSON, or the binary
//                                            layout with `Accept: application/octet-stream`), 204 on timeout.
//                                            The same batch comes again until it is acknowledged.
//   POST /v1/rl/batches/:id/ack             acknowledges a batch without new weights
//   POST /v1/rl/weights                     {version, batch_ids?, ...hook fields} -> pause, drain, load, bump, resume;
//                                            acknowledges the batches it trained on
//   POST /v1/rl/weights/prepare             {version, batch_ids?} -> pause in the pool's swap mode for a native
//                                            (NCCL/IPC) transfer; answers {status: "ready", backends, deadline_s}
//   POST /v1/rl/weights/commit              {version, batch_ids?} -> finish the engines' update, verify, bump, resume
//   POST /v1/rl/weights/abort               {reason?} -> resume on the old weights (a prepare not committed within
//                                            the deadline is aborted this way by itself). All three are idempotent.
//   GET  /v1/rl/state                       queue, version, the update in progress, swap counts
import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../middleware/env.js';
import { BATCH_CONTENT_TYPE, encodeBatch } from '../src/algorithms/rl/batch-codec.js';
import {
  protocolJsonSchema,
  weightsAbortSchema,
  weightsCommitSchema,
  weightsPostSchema,
  weightsPrepareSchema,
} from '../src/algorithms/rl/protocol.js';
import { type TrainerHub, TrainerHubError } from '../src/algorithms/rl/trainer-hub.js';
import { GatewayError } from '../src/errors.js';
import type { Logger } from '../src/logger.js';
import { readJsonBody } from './request-body.js';

export interface RlRoutesOptions {
  readonly hub: TrainerHub;
  /** Aborted at gateway shutdown: pending long polls answer at once. */
  readonly shutdown?: AbortSignal;
}

const MAX_POLL_S = 300;
const DEFAULT_POLL_S = 30;

const nextQuery = z.object({ timeout_s: z.coerce.number().min(0).max(MAX_POLL_S).default(DEFAULT_POLL_S) });

function parse<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const param = issue === undefined || issue.path.length === 0 ? null : issue.path.map(String).join('.');
  const reason = issue?.message ?? 'Invalid request';
  throw new GatewayError('validation_error', param === null ? reason : `${param}: ${reason}`, { param });
}

function toGatewayError(error: unknown): unknown {
  if (!(error instanceof TrainerHubError)) return error;
  return new GatewayError(error.code === 'not_found' ? 'not_found' : 'conflict', error.message);
}

/** A refusal keeps its status; anything else failed on the way to the engines (the swap resumed regardless). */
function swapFailure(error: unknown, context: { what: string; version: number | null; logger: Logger }): unknown {
  if (error instanceof TrainerHubError) return toGatewayError(error);
  const reason = error instanceof Error ? error.message : String(error);
  context.logger.error(`${context.what} failed`, { version: context.version, err: reason });
  return new GatewayError('upstream_unreachable', `${context.what} failed: ${reason}`);
}

export function createRlRoutes(options: RlRoutesOptions): Hono<AppEnv> {
  const { hub } = options;
  const app = new Hono<AppEnv>();

  app.get('/v1/rl/schema', (c) => c.json(protocolJsonSchema()));
  app.get('/v1/rl/state', (c) => c.json(hub.stats()));

  app.get('/v1/rl/batches/next', async (c) => {
    const { timeout_s } = parse(nextQuery, c.req.query());
    const signals = [c.req.raw.signal, ...(options.shutdown ? [options.shutdown] : [])];
    const next = await hub.next({ timeoutMs: timeout_s * 1000, signal: AbortSignal.any(signals) });
    if (next === null) return c.body(null, 204);
    c.header('x-rollgate-batch-id', next.batch.batch_id);
    c.header('x-rollgate-delivery', String(next.delivery));
    if ((c.req.header('accept') ?? '').includes(BATCH_CONTENT_TYPE)) {
      const bytes = encodeBatch(next.batch);
      return c.body(bytes.buffer as ArrayBuffer, 200, { 'content-type': BATCH_CONTENT_TYPE });
    }
    return c.json(next.batch);
  });

  app.post('/v1/rl/batches/:id/ack', (c) => {
    try {
      return c.json({ acknowledged: hub.acknowledge([c.req.param('id')]) });
    } catch (error) {
      throw toGatewayError(error);
    }
  });

  app.post('/v1/rl/weights', async (c) => {
    const body = parse(weightsPostSchema, await readJsonBody(c));
    const { version, batch_ids, ...fields } = body;
    try {
      const result = await hub.postWeights({ version, ...(batch_ids ? { batch_ids } : {}), fields });
      return c.json(result);
    } catch (error) {
      throw swapFailure(error, { what: 'weight sync', version, logger: c.get('logger') });
    }
  });

  app.post('/v1/rl/weights/prepare', async (c) => {
    const { version, batch_ids, sleep } = parse(weightsPrepareSchema, await readJsonBody(c));
    try {
      return c.json(
        await hub.prepareWeights({
          version,
          ...(batch_ids ? { batch_ids } : {}),
          ...(sleep === undefined ? {} : { sleep }),
          fields: {},
        }),
      );
    } catch (error) {
      throw swapFailure(error, { what: 'weights prepare', version, logger: c.get('logger') });
    }
  });

  app.post('/v1/rl/weights/commit', async (c) => {
    const { version, batch_ids, ...fields } = parse(weightsCommitSchema, await readJsonBody(c));
    try {
      return c.json(await hub.commitWeights({ version, ...(batch_ids ? { batch_ids } : {}), fields }));
    } catch (error) {
      throw swapFailure(error, { what: 'weights commit', version, logger: c.get('logger') });
    }
  });

  app.post('/v1/rl/weights/abort', async (c) => {
    const { reason } = parse(weightsAbortSchema, await readJsonBody(c));
    try {
      return c.json(await hub.abortWeights(reason));
    } catch (error) {
      throw swapFailure(error, { what: 'weights abort', version: null, logger: c.get('logger') });
    }
  });

  return app;
}
