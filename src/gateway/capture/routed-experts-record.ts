// The routed experts a call's record keeps (docs/training-data.md#routed-experts): the first choice's, over its
// prompt and response ids, as their bytes in the narrowest dtype (base64) with shape and dtype beside. vLLM's own
// bytes are kept as they came (it already sends the narrowest dtype); other forms are converted once.
import type { CanonicalRecord, RecordedAttributes } from '../../contracts/call-record.js';
import * as A from '../../contracts/span-attributes.js';
import { toStoredRoutes } from './routed-experts.js';
import type { RoutesCapture } from './routes-capture.js';

/** Span attributes for the routes; empty when the answer carried none. */
export function routedExpertsAttributes(routes: RoutesCapture, record: CanonicalRecord): RecordedAttributes {
  if (!routes.seen) return {};
  const choice = record.choices.find((c) => c.index === 0);
  const prompt = choice?.promptTokenIds ?? record.promptTokenIds;
  const response = choice?.tokenIds ?? null;
  if (prompt === null || response === null)
    return { [A.ATTR_ROUTED_EXPERTS_STATUS]: A.ROUTED_EXPERTS_STATUS_VALUE_NOT_COVERING };
  const resolved = routes.resolve(0, prompt.length + response.length);
  if (resolved === null) return {};
  if (!resolved.ok) {
    const status =
      resolved.problem === 'malformed'
        ? A.ROUTED_EXPERTS_STATUS_VALUE_MALFORMED
        : A.ROUTED_EXPERTS_STATUS_VALUE_NOT_COVERING;
    return { [A.ATTR_ROUTED_EXPERTS_STATUS]: status };
  }
  const stored = toStoredRoutes(resolved.routes);
  return {
    [A.ATTR_ROUTED_EXPERTS_STATUS]: A.ROUTED_EXPERTS_STATUS_VALUE_OK,
    [A.ATTR_ROUTED_EXPERTS]: stored.data,
    [A.ATTR_ROUTED_EXPERTS_SHAPE]: [...stored.shape],
    [A.ATTR_ROUTED_EXPERTS_DTYPE]: stored.dtype,
  };
}
