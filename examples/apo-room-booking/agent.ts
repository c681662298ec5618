// Runs the room-booking agent against a gateway's queue until Ctrl-C:
//
//   npx tsx examples/apo-room-booking/agent.ts --gateway http://127.0.0.1:8080 --model my-model [--concurrency 8]
//
// Each claimed rollout is one attempt: the agent formats the rollout's prompt template (resource
// `room_prompt`) with the task, asks the model once through the attempt's gateway route, and posts
// reward 1 for the expected room, else 0.
import { parseArgs } from 'node:util';
import { runAgent } from '../../src/runner/run-agent.js';
import { roomAgent } from './room-booking.js';

const { values } = parseArgs({
  options: {
    gateway: { type: 'string', default: 'http://127.0.0.1:8080' },
    model: { type: 'string', default: 'default' },
    concurrency: { type: 'string', default: '8' },
  },
});

const controller = new AbortController();
process.once('SIGINT', () => controller.abort());
const stats = await runAgent(roomAgent({ model: values.model }), {
  gatewayUrl: values.gateway,
  concurrency: Number(values.concurrency),
  signal: controller.signal,
  ...(process.env.ROLLGATE_API_KEY ? { apiKey: process.env.ROLLGATE_API_KEY } : {}),
});
process.stderr.write(`room-booking agent stopped: ${JSON.stringify(stats)}\n`);
