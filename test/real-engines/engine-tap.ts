// A transparent HTTP tap between rollgate and a real vLLM server: every answer passes through unchanged and is kept
// as the ground truth of what the engine returned (its prompt ids, sampled ids and logprobs per choice). The audit on
// real generations checks rollgate's training data against it, as the twin-based audit checks against the ledger.
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TappedChoice {
  readonly path: string;
  readonly promptIds: readonly number[];
  readonly responseIds: readonly number[];
  /** The sampled tokens' logprobs, in order; null when the answer had none. */
  readonly logprobs: readonly number[] | null;
  readonly finishReason: string | null;
}

type Json = Record<string, unknown>;
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const numbers = (value: unknown): number[] => asArray(value).filter((v): v is number => typeof v === 'number');

interface Building {
  prompt: number[];
  ids: number[];
  logprobs: number[] | null;
  finish: string | null;
}

/**
 * vLLM's own Responses answer with `enable_response_messages`: the rendered prompt and the generated text as
 * `raw_message_tokens` items; logprobs only on `output_text` parts (none for reasoning).
 */
function absorbResponse(building: Map<number, Building>, answer: Json): void {
  const tokens = (items: unknown) => asArray(items).flatMap((item) => numbers((item as Json).tokens));
  const logprobs = asArray(answer.output)
    .flatMap((item) => asArray((item as Json).content))
    .flatMap((part) => asArray((part as Json).logprobs).map((entry) => (entry as Json).logprob as number));
  building.set(0, {
    prompt: tokens(answer.input_messages),
    ids: tokens(answer.output_messages),
    logprobs: logprobs.length > 0 ? logprobs : null,
    finish: typeof answer.status === 'string' ? answer.status : null,
  });
}

function absorb(building: Map<number, Building>, event: Json): void {
  if (event.object === 'response') {
    absorbResponse(building, event);
    return;
  }
  const top = numbers(event.prompt_token_ids);
  for (const raw of asArray(event.choices)) {
    const choice = raw as Json;
    const index = typeof choice.index === 'number' ? choice.index : 0;
    let b = building.get(index);
    if (!b) {
      b = { prompt: [], ids: [], logprobs: null, finish: null };
      building.set(index, b);
    }
    const prompt = choice.prompt_token_ids !== undefined ? numbers(choice.prompt_token_ids) : top;
    if (b.prompt.length === 0 && prompt.length > 0) b.prompt = prompt;
    b.ids.push(...numbers(choice.token_ids));
    const lp = choice.logprobs as Json | null | undefined;
    if (lp && typeof lp === 'object') {
      // chat: logprobs.content[].logprob; completions: logprobs.token_logprobs[]
      const values = Array.isArray(lp.content)
        ? (lp.content as Json[]).map((c) => c.logprob as number)
        : numbers(lp.token_logprobs);
      b.logprobs = [...(b.logprobs ?? []), ...values];
    }
    if (typeof choice.finish_reason === 'string') b.finish = choice.finish_reason;
  }
}

export interface EngineTap {
  /** Point rollgate's backend here (ends in /v1). */
  readonly url: string;
  readonly choices: TappedChoice[];
  close(): Promise<void>;
}

export async function startEngineTap(upstreamBase: string): Promise<EngineTap> {
  const upstream = new URL(upstreamBase);
  const choices: TappedChoice[] = [];
  const server: Server = createServer((req, res) => {
    const forward = httpRequest(
      { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        const parts: Buffer[] = [];
        up.on('data', (chunk: Buffer) => {
          parts.push(chunk);
          res.write(chunk);
        });
        up.on('end', () => {
          res.end();
          if ((up.statusCode ?? 0) !== 200) return;
          const text = Buffer.concat(parts).toString();
          const building = new Map<number, Building>();
          const events = (up.headers['content-type'] ?? '').includes('text/event-stream')
            ? text
                .split('\n')
                .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
                .map((line) => JSON.parse(line.slice(6)) as Json)
            : text.startsWith('{')
              ? [JSON.parse(text) as Json]
              : [];
          for (const event of events) absorb(building, event);
          for (const b of building.values()) {
            if (b.ids.length === 0) continue;
            choices.push({
              path: req.url ?? '',
              promptIds: b.prompt,
              responseIds: b.ids,
              logprobs: b.logprobs,
              finishReason: b.finish,
            });
          }
        });
      },
    );
    forward.on('error', () => res.destroy());
    // The client went away before the answer ended (an abort): end the engine's request too, as rollgate's would.
    res.on('close', () => {
      if (!res.writableFinished) forward.destroy();
    });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    choices,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
