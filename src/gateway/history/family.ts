// The chat-format families by their config name (the interface they implement is chat-family.ts).
import type { HistoryFamily } from '../../../config/history-schema.js';
import type { ChatFamily } from './chat-family.js';
import { qwen3Family } from './qwen3-family.js';

// Keyed by the config's family list, so a name the config accepts without an implementation does not compile.
const FAMILIES: Readonly<Record<HistoryFamily, ChatFamily>> = { qwen3: qwen3Family };

export function chatFamily(name: HistoryFamily): ChatFamily {
  return FAMILIES[name];
}
