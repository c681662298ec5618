// A TCP port free on loopback right now, for a child process that must be told its port before it starts (vLLM,
// a gateway under benchmark). Another process could take it before the child binds; on a test machine that is rare.
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
