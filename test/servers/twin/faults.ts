// Fault injection: a spec string (header `x-mock-fault`, body key `mock_fault`, or setFault()) -> MockFault[].
//
//   status=<code>[;message=<text>][;html][;retry-after=<s>]   error before any byte; vLLM JSON by default,
//                                                            `html` sends a text/html body instead
//   hang                                                     never answer (until the client goes away)
//   reset                                                    destroy the socket without answering
//   close-after=<k>                                          stream: destroy the socket after k data events
//   garbage-after=<k>                                        stream: write non-SSE garbage bytes after k events
//   error-event-after=<k>[;status=<code>][;message=<text>]   stream: `data: {"error":{...,"code":500}}` after k events
//   slow-first-byte=<ms>                                     wait before sending the headers
//   token-ids=omit|null|prompt-only                          drop `token_ids`/`prompt_token_ids`
//   logprobs=short|long|null|nan                             misaligned or non-finite logprobs
//   legacy-tool-stream                                       chat streams skip the chunks whose tokens the tool or
//                                                            reasoning parser buffered (vLLM 0.10.2-0.11), so the
//                                                            streamed ids miss tokens that usage still counts
import type { IncomingMessage } from 'node:http';
import type { LogprobsFaultMode, MockFault, TokenIdsFaultMode } from './types.js';
import { isRecord } from './util.js';

const TOKEN_ID_MODES: readonly string[] = ['omit', 'null', 'prompt-only'];
const LOGPROB_MODES: readonly string[] = ['short', 'long', 'null', 'nan'];

export function parseFaultSpec(spec: string): MockFault[] {
  const faults: MockFault[] = [];
  for (const part of spec.split(',')) {
    const [head, ...opts] = part.trim().split(';');
    if (!head) continue;
    const [name, value = ''] = head.split('=', 2) as [string, string?];
    const options = new Map<string, string>();
    for (const o of opts) {
      const [k, v = ''] = o.split('=', 2) as [string, string?];
      options.set(k.trim(), v.trim());
    }
    const int = (v: string | undefined, fallback: number): number => {
      const n = Number.parseInt(v ?? '', 10);
      return Number.isFinite(n) ? n : fallback;
    };
    switch (name.trim()) {
      case 'status':
        faults.push({
          kind: 'status',
          status: int(value, 500),
          ...(options.has('message') ? { message: options.get('message') } : {}),
          ...(options.has('html') ? { html: true } : {}),
          ...(options.has('retry-after') ? { retryAfter: options.get('retry-after') } : {}),
        });
        break;
      case 'hang':
        faults.push({ kind: 'hang' });
        break;
      case 'reset':
        faults.push({ kind: 'reset' });
        break;
      case 'close-after':
        faults.push({ kind: 'close-after', chunks: int(value, 1) });
        break;
      case 'garbage-after':
        faults.push({ kind: 'garbage-after', chunks: int(value, 1) });
        break;
      case 'error-event-after':
        faults.push({
          kind: 'error-event-after',
          chunks: int(value, 1),
          ...(options.has('status') ? { status: int(options.get('status'), 500) } : {}),
          ...(options.has('message') ? { message: options.get('message') } : {}),
        });
        break;
      case 'slow-first-byte':
        faults.push({ kind: 'slow-first-byte', delayMs: int(value, 1000) });
        break;
      case 'token-ids':
        if (!TOKEN_ID_MODES.includes(value)) throw new Error(`mock-vllm: bad token-ids fault mode "${value}"`);
        faults.push({ kind: 'token-ids', mode: value as TokenIdsFaultMode });
        break;
      case 'logprobs':
        if (!LOGPROB_MODES.includes(value)) throw new Error(`mock-vllm: bad logprobs fault mode "${value}"`);
        faults.push({ kind: 'logprobs', mode: value as LogprobsFaultMode });
        break;
      case 'legacy-tool-stream':
        faults.push({ kind: 'legacy-tool-stream' });
        break;
      default:
        throw new Error(`mock-vllm: unknown fault "${name}"`);
    }
  }
  return faults;
}

interface FaultRule {
  faults: MockFault[];
  remaining: number;
  paths: string[];
}

/** Server-wide rules (setFault) and per-request specs (header or body key, optionally for the first n only). */
export class FaultBook {
  private readonly rules: FaultRule[] = [];
  private readonly headerCounts = new Map<string, number>();

  add(faults: MockFault[], options: { times?: number; paths: string[] }): void {
    this.rules.push({ faults, remaining: options.times ?? Number.POSITIVE_INFINITY, paths: options.paths });
  }

  clear(): void {
    this.rules.length = 0;
    this.headerCounts.clear();
  }

  resolve(req: IncomingMessage, path: string, body: unknown): MockFault[] {
    const header = req.headers['x-mock-fault'];
    const bodySpec = isRecord(body) && typeof body.mock_fault === 'string' ? body.mock_fault : undefined;
    const spec = typeof header === 'string' ? header : bodySpec;
    if (spec) {
      const timesHeader = req.headers['x-mock-fault-times'];
      const times =
        typeof timesHeader === 'string'
          ? Number.parseInt(timesHeader, 10)
          : isRecord(body) && typeof body.mock_fault_times === 'number'
            ? body.mock_fault_times
            : undefined;
      if (times !== undefined && Number.isFinite(times)) {
        const seen = this.headerCounts.get(spec) ?? 0;
        this.headerCounts.set(spec, seen + 1);
        if (seen >= times) return [];
      }
      return parseFaultSpec(spec);
    }
    for (const rule of this.rules) {
      if (rule.remaining > 0 && rule.paths.includes(path)) {
        rule.remaining--;
        return rule.faults;
      }
    }
    return [];
  }
}
