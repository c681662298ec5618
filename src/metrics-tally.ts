// A counter's hot-path increments, summed per label set in plain numbers and handed to its prom-client counter
// when a scrape collects it. prom-client's inc() checks every label name against the declared ones and builds its
// key from names and values on each call (1-2 µs here; a proxied call makes three); a tally keeps one entry per
// label set seen, found by the label values alone, and adds to a number.
import type { Counter, LabelValues } from 'prom-client';

interface Pending<L extends string> {
  readonly labels: LabelValues<L>;
  value: number;
  /** Whether the counter has this label set yet: an increment by 0 still makes the series appear, as inc() does. */
  known: boolean;
}

export class CounterTally<L extends string> {
  readonly #names: readonly L[];
  readonly #pending = new Map<string, Pending<L>>();

  /** `names`: the counter's label names; every `inc` passes all of them. */
  constructor(names: readonly L[]) {
    this.#names = names;
  }

  inc(labels: Readonly<Record<L, string>>, value = 1): void {
    let key = '';
    // Length-prefixed: a model name is the agent's text and may hold any separator.
    for (const name of this.#names) {
      const part = labels[name];
      key += `${part.length}:${part}`;
    }
    const entry = this.#pending.get(key);
    if (entry !== undefined) entry.value += value;
    else this.#pending.set(key, { labels: { ...labels } as LabelValues<L>, value, known: false });
  }

  /** Adds what was counted since the last flush to `counter`; prom-client calls it (collect) before every read. */
  flushInto(counter: Counter<L>): void {
    for (const entry of this.#pending.values()) {
      if (entry.value === 0 && entry.known) continue;
      counter.inc(entry.labels, entry.value);
      entry.value = 0;
      entry.known = true;
    }
  }
}
