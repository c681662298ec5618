// Anthropic SDK agents for a test gateway, on their own connection pool (destroyed before the gateway closes, so
// no idle keep-alive socket holds the server's graceful close), and a raw reader of Messages API event streams.
import Anthropic from '@anthropic-ai/sdk';
import { Agent, fetch as undiciFetch } from 'undici';

export interface AnthropicAgents {
  /** An SDK client whose base URL is `ANTHROPIC_BASE_URL` for (rid, aid): `<gateway>/rollout/<rid>/attempt/<aid>`. */
  client(
    rid: string,
    options?: { readonly aid?: string; readonly apiKey?: string; readonly maxRetries?: number },
  ): Anthropic;
  /** Idempotent. */
  close(): Promise<void>;
}

export function anthropicAgents(gatewayUrl: string, defaults: { readonly apiKey?: string } = {}): AnthropicAgents {
  const pool = new Agent();
  const fetchViaPool = ((url: string, init?: Record<string, unknown>) =>
    undiciFetch(url, { ...init, dispatcher: pool })) as unknown as typeof fetch;
  let closing: Promise<void> | null = null;
  return {
    client: (rid, options = {}) =>
      new Anthropic({
        baseURL: `${gatewayUrl}/rollout/${rid}/attempt/${options.aid ?? 'a1'}`,
        apiKey: options.apiKey ?? defaults.apiKey ?? 'agent-key',
        maxRetries: options.maxRetries ?? 0,
        fetch: fetchViaPool,
      }),
    close() {
      closing ??= pool.destroy();
      return closing;
    },
  };
}

export interface NamedEvent {
  readonly event: string | null;
  readonly data: Record<string, unknown>;
}

/** The events of an SSE body as written (no SDK in between): `event:` name and parsed `data:`. */
export function parseSse(text: string): NamedEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice('event: '.length) ?? null;
      const data = lines
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice('data: '.length))
        .join('\n');
      return { event, data: data === '[DONE]' ? { done: true } : (JSON.parse(data) as Record<string, unknown>) };
    });
}
