// The rollout queue of the SQLite store: FIFO ids, each with the position stored in its rollout row, so a failed
// commit can put an entry back exactly where the file says it is. Only queued rollouts are here, so its size is
// the queue's, not the history's.

// The array's consumed head is cut off once it is both this long and more than half the array.
const COMPACT_AFTER = 1_024;

export class PositionedQueue {
  #ids: string[] = [];
  #head = 0;
  readonly #positions = new Map<string, number>();
  #next = 1;

  get size(): number {
    return this.#positions.size;
  }

  has(id: string): boolean {
    return this.#positions.has(id);
  }

  /** The stored position of a queued id; null when it is not queued. */
  position(id: string): number | null {
    return this.#positions.get(id) ?? null;
  }

  /** Appends at the tail with the next position. */
  push(id: string): void {
    if (this.#positions.has(id)) return;
    this.#positions.set(id, this.#next++);
    this.#ids.push(id);
  }

  /** Removes and returns the head. */
  pop(): string | undefined {
    while (this.#head < this.#ids.length) {
      const id = this.#ids[this.#head] as string;
      this.#head++;
      if (this.#head > COMPACT_AFTER && this.#head * 2 > this.#ids.length) {
        this.#ids = this.#ids.slice(this.#head);
        this.#head = 0;
      }
      if (this.#positions.delete(id)) return id;
    }
    return undefined;
  }

  /** Takes an id out, wherever it is. */
  remove(id: string): void {
    if (!this.#positions.delete(id)) return;
    // Removed entries are recent (undone or deleted writes): search from the tail.
    const at = this.#ids.lastIndexOf(id);
    if (at >= this.#head) this.#ids.splice(at, 1);
  }

  /** Puts an id at its stored position (a reload or an undo): before the first entry stored behind it. */
  restore(id: string, position: number): void {
    if (this.#positions.get(id) === position) return;
    this.remove(id);
    // A reload comes in position order: appending keeps opening a long queue linear.
    const last = this.#ids[this.#ids.length - 1];
    let at =
      last !== undefined && this.#ids.length > this.#head && (this.#positions.get(last) ?? 0) < position
        ? this.#ids.length
        : this.#head;
    while (at < this.#ids.length && (this.#positions.get(this.#ids[at] as string) ?? 0) < position) at++;
    this.#ids.splice(at, 0, id);
    this.#positions.set(id, position);
    if (position >= this.#next) this.#next = position + 1;
  }
}
