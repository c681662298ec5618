// The floor for bench/proxy.ts: the cheapest bare Node pass-through, a node:http server piping each request to a
// keep-alive node:http client and the answer back, parsing nothing and recording nothing. What any Node gateway
// pays for this hop, measured beside rollgate and nginx in the same run.
import { Agent, createServer, request } from 'node:http';
import { answerStats } from './proxy-child-stats.js';

interface Args {
  readonly fastUrl: string;
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const upstream = new URL(args.fastUrl);
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const server = createServer((req, res) => {
  const forwarded = request(
    {
      host: upstream.hostname,
      port: upstream.port,
      path: req.url ?? '/',
      method: req.method,
      headers: req.headers,
      agent,
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  forwarded.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(forwarded);
});
server.keepAliveTimeout = 60_000;
process.once('SIGINT', () => process.exit(0));
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, pid: process.pid })}\n`);
});
answerStats(async () => {
  server.close();
  agent.destroy();
});
