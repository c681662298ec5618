// A tiny engine on a real socket that answers each generation call with a scripted body: a JSON object, or SSE
// events ending in `data: [DONE]`. For upstream behaviours the vLLM stand-in cannot produce yet (an engine abort,
// a pre-0.11.x parser stream that lost ids); `/health` answers 200 so the gateway's probes keep the backend in.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ScriptedAnswer =
  | { readonly json: unknown }
  /** Each element is one `data:` event (objects are JSON-encoded); `[DONE]` is appended. */
  | { readonly events: readonly unknown[] };

export interface ScriptedRequest {
  readonly path: string;
  readonly body: Record<string, unknown>;
}

export interface ScriptedUpstream {
  /** Base URL ending in `/v1`, as a backend url in the gateway config. */
  readonly url: string;
  /** Bodies received, in arrival order. */
  readonly requests: ScriptedRequest[];
  close(): Promise<void>;
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
  return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
}

function answer(res: ServerResponse, scripted: ScriptedAnswer): void {
  if ('json' in scripted) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(scripted.json));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const event of scripted.events)
    res.write(`data: ${typeof event === 'string' ? event : JSON.stringify(event)}\n\n`);
  res.end('data: [DONE]\n\n');
}

export async function startScriptedUpstream(
  script: (request: ScriptedRequest) => ScriptedAnswer,
): Promise<ScriptedUpstream> {
  const requests: ScriptedRequest[] = [];
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method === 'GET') {
      res.writeHead(path === '/health' ? 200 : 404, { 'content-type': 'application/json' });
      res.end(path === '/health' ? '' : '{"detail":"Not Found"}');
      return;
    }
    readJson(req).then(
      (body) => {
        const request = { path, body };
        requests.push(request);
        answer(res, script(request));
      },
      () => {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"bad json","type":"BadRequestError","param":null,"code":400}}');
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
