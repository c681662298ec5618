// The API key the user typed, kept in localStorage so a reload does not ask again.
// It is sent on every API call; the gateway decides whether it is good enough.

const STORAGE_KEY = 'rollgate.apiKey';

export interface KeyStore {
  get(): string | null;
  set(key: string): void;
  clear(): void;
}

export function createKeyStore(storage: Storage): KeyStore {
  return {
    get() {
      try {
        const key = storage.getItem(STORAGE_KEY);
        return key !== null && key.length > 0 ? key : null;
      } catch {
        // Storage can be disabled (privacy mode); the dashboard then works without a saved key.
        return null;
      }
    },
    set(key) {
      try {
        storage.setItem(STORAGE_KEY, key);
      } catch {
        // see get()
      }
    },
    clear() {
      try {
        storage.removeItem(STORAGE_KEY);
      } catch {
        // see get()
      }
    },
  };
}
