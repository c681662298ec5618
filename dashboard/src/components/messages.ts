import { h } from '../dom.js';
import type { ChatMessage, MessagePart } from '../spans.js';

function partView(part: MessagePart): HTMLElement {
  switch (part.kind) {
    case 'text':
      return h('div', { class: 'part text' }, part.text);
    case 'tool_call':
      return h(
        'div',
        { class: 'part tool-call' },
        h(
          'div',
          { class: 'part-head' },
          `tool call ${part.name}`,
          part.id ? h('span', { class: 'muted' }, ` ${part.id}`) : null,
        ),
        h('pre', { class: 'mono' }, part.text),
      );
    case 'tool_result':
      return h(
        'div',
        { class: 'part tool-result' },
        h('div', { class: 'part-head' }, 'tool result', part.id ? h('span', { class: 'muted' }, ` ${part.id}`) : null),
        h('pre', { class: 'mono' }, part.text),
      );
    case 'other':
      return h('pre', { class: 'part other mono' }, part.text);
  }
}

export function messageList(messages: readonly ChatMessage[], emptyText: string): HTMLElement {
  if (messages.length === 0) return h('div', { class: 'empty' }, emptyText);
  return h(
    'div',
    { class: 'messages' },
    messages.map((m) =>
      h(
        'div',
        { class: `msg role-${m.role.replace(/[^a-z]/gi, '')}`, dataset: { role: m.role } },
        h(
          'div',
          { class: 'msg-role' },
          m.role,
          m.finishReason ? h('span', { class: 'muted' }, ` · ${m.finishReason}`) : null,
        ),
        m.parts.map(partView),
      ),
    ),
  );
}
