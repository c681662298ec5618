// The GatewayControl an algorithm gets when it only has a store and (maybe) the gateway's address: enough
// for APO and evaluate, which never pause traffic or swap weights. The in-process gateway supplies a richer
// control (pools, pause/resume, model versions) through the same interface.
import { attemptBaseUrl } from '../runner/attempt-urls.js';
import type { GatewayControl } from './types.js';

export function createStoreOnlyGatewayControl(options: { gatewayUrl: string | null }): GatewayControl {
  const { gatewayUrl } = options;
  return {
    attemptBaseUrl(rolloutId, attemptId) {
      return gatewayUrl === null ? null : attemptBaseUrl(gatewayUrl, { rolloutId, attemptId });
    },
  };
}
