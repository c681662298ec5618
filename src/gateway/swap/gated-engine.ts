// Puts the pause gate (docs/failure-classes.md (46-47)) in front of the forward path: a call takes an in-flight slot before it is
// forwarded and gives it back only once forward() has returned, i.e. after the upstream response has closed, so
// `inflight == 0` really means no backend is still generating for us. While paused, calls are refused (429 +
// Retry-After + X-Agl-Paused) or held, by config, and nothing is recorded for them.
import type { ForwardEngine } from '../engine/forward-engine.js';
import type { PauseGate } from './pause-gate.js';

export function gateEngine(inner: ForwardEngine, gate: PauseGate): ForwardEngine {
  return {
    async forward(call) {
      let release: () => void;
      if (!gate.paused) {
        release = await gate.enter();
      } else {
        // A held agent that hangs up must not be forwarded at resume: that would be GPU work nobody reads.
        const left = new AbortController();
        const onClose = () => left.abort(new Error('agent left while the gateway was paused'));
        call.sink.on('close', onClose);
        try {
          release = await gate.enter(left.signal);
        } catch (error) {
          // Nobody is left to answer; a refusal (429) still goes to an agent that is there.
          if (left.signal.aborted) return;
          throw error;
        } finally {
          call.sink.removeListener('close', onClose);
        }
      }
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
