// GET /v1/models (and /v1/models/{id}) in the Anthropic shape, for clients that send `anthropic-version`
// (Claude Code's gateway model discovery, the Anthropic SDK's models.list()): one page with every served model.
import type { ModelListing } from '../pools/model-registry.js';

export interface AnthropicModelInfo {
  readonly type: 'model';
  readonly id: string;
  readonly display_name: string;
  /** RFC 3339. */
  readonly created_at: string;
}

export interface AnthropicModelPage {
  readonly data: readonly AnthropicModelInfo[];
  readonly has_more: false;
  readonly first_id: string | null;
  readonly last_id: string | null;
}

export function anthropicModelInfo(model: ModelListing): AnthropicModelInfo {
  return {
    type: 'model',
    id: model.id,
    display_name: model.id,
    created_at: new Date(model.created * 1000).toISOString(),
  };
}

export function anthropicModelPage(models: readonly ModelListing[]): AnthropicModelPage {
  const data = models.map(anthropicModelInfo);
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}
