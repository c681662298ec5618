// Puts the pause gate (pitfalls 46-47) in front of the forward path: a call takes an in-flight slot before it is
// forwarded and gives it back only once forward() has returned, i.e. after the upstream response has closed, so
// `inflight == 0` really means no backend is still generating for us. While paused, calls are refused (429 +
// Retry-After + X-Agl-Paused) or held, by config, and nothing is recorded for them.
import type { Gateway } from './forward.js';
import type { PauseGate } from './pause-gate.js';

export function gateGateway(inner: Gateway, gate: PauseGate): Gateway {
  return {
    async forward(call) {
      const release = await gate.enter();
      try {
        await inner.forward(call);
      } finally {
        release();
      }
    },
    listModels: () => inner.listModels(),
    close: async () => {
      gate.close();
      await inner.close();
    },
  };
}
