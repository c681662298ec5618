// What the SQLite store's connections may hold in memory (docs/benchmarks-soak.md, "Memory"). The driver's build
// gives every connection a 16 MB page cache; the store has three (the writer, the read thread, the WAL checkpoint
// thread), so up to 48 MB of pages stayed in the process once the file outgrew them. Each connection now gets what
// its work needs, and no memory-mapped I/O: mapped pages of a file larger than memory would count in the RSS.

/** The writer's page cache: the rollout, attempt and span indexes that every write walks. */
export const WRITER_CACHE_KIB = 16 * 1024;
/** The read thread's page cache: heavy list pages read many rows once, so a large cache buys little. */
export const READER_CACHE_KIB = 4 * 1024;
/** The checkpoint thread's page cache: a checkpoint copies pages from the WAL without keeping them. */
export const CHECKPOINTER_CACHE_KIB = 512;

/** The pragmas that bound a connection's memory, as SQL (for the worker threads' sources too). */
export function memoryPragmas(cacheKib: number): string[] {
  return [`cache_size = -${cacheKib}`, 'mmap_size = 0'];
}
