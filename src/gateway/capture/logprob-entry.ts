// Chat completions and the Responses API spell one token's logprob alike (`token`, `logprob`, `bytes`,
// `top_logprobs`): both captures read it here, so the two record the same entry for the same step.
import type { LogprobEntry } from '../../contracts/call-record.js';

/** One chat-shaped logprob item (already known to be an object) as a recorded entry; values are kept as sent. */
export function chatShapedLogprobEntry(item: Readonly<Record<string, unknown>>): LogprobEntry {
  return {
    token: typeof item.token === 'string' ? item.token : '',
    logprob: item.logprob,
    bytes: item.bytes,
    top_logprobs: Array.isArray(item.top_logprobs) ? item.top_logprobs : [],
  };
}
