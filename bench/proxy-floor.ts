// A bare Node pass-through proxy (node:http server + one undici Pool, no parsing, no recording) for
// bench/proxy.ts: the floor any Node gateway pays for this hop, measured beside nginx in the same run.
import { createServer } from 'node:http';
import { Pool } from 'undici';

interface Args {
  readonly fastUrl: string;
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const upstream = new Pool(new URL(args.fastUrl).origin, { connections: 256, pipelining: 1 });
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    upstream
      .request({
        path: req.url ?? '/',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks),
      })
      .then(
        (answer) => {
          res.writeHead(answer.statusCode, { 'content-type': String(answer.headers['content-type'] ?? '') });
          answer.body.on('data', (chunk: Buffer) => res.write(chunk));
          answer.body.on('end', () => res.end());
        },
        () => {
          res.writeHead(502).end();
        },
      );
  });
});
server.keepAliveTimeout = 60_000;
process.once('SIGINT', () => process.exit(0));
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, pid: process.pid })}\n`);
});
process.on('message', (message: unknown) => {
  if (message === 'stats') {
    const cpu = process.cpuUsage();
    process.send?.({ cpuMs: (cpu.user + cpu.system) / 1000, rss: process.memoryUsage().rss });
  } else if (message === 'close') {
    server.close();
    void upstream.close().then(() => process.exit(0));
  }
});
