// The key prompt: shown when the gateway answers 401/403, or when the user clicks "API key".

import type { KeyStore } from './api-key.js';
import { h } from './dom.js';

export interface KeyPrompt {
  open(reason: string): void;
}

export function createKeyPrompt(options: { keys: KeyStore; onSaved: () => void }): KeyPrompt {
  const { keys, onSaved } = options;
  const reasonEl = h('p', { class: 'prompt-reason' });
  const input = h('input', {
    type: 'password',
    class: 'input wide',
    name: 'api-key',
    id: 'api-key',
    placeholder: 'rollgate API key',
    autocomplete: 'off',
  });
  const close = (): void => {
    dialog.classList.add('hidden');
  };
  const form = h(
    'form',
    {
      class: 'prompt',
      role: 'dialog',
      on: {
        submit: (event) => {
          event.preventDefault();
          const key = input.value.trim();
          if (key) keys.set(key);
          else keys.clear();
          input.value = '';
          close();
          onSaved();
        },
      },
    },
    h('h2', null, 'API key'),
    reasonEl,
    h(
      'label',
      { for: 'api-key' },
      'An admin key of this gateway (sent as Authorization: Bearer; kept in this browser only).',
    ),
    input,
    h(
      'div',
      { class: 'prompt-actions' },
      h('button', { type: 'submit', class: 'btn primary' }, 'Save key'),
      h(
        'button',
        {
          type: 'button',
          class: 'btn',
          on: {
            click: () => {
              keys.clear();
              close();
              onSaved();
            },
          },
        },
        'Forget key',
      ),
      h('button', { type: 'button', class: 'btn link', on: { click: close } }, 'Cancel'),
    ),
  );
  const dialog = h('div', { class: 'overlay hidden', dataset: { testid: 'key-prompt' } }, form);
  document.body.append(dialog);
  return {
    open(reason) {
      reasonEl.textContent = reason;
      dialog.classList.remove('hidden');
      input.focus();
    },
  };
}
