// Everything long-lived the gateway builds is registered here as it is created, and closed in reverse creation
// order: a later part may still use an earlier one while it closes (the forward stack writes to the store).
import type { Logger } from '../logger.js';

export interface Part {
  readonly name: string;
  close(): Promise<void>;
}

export class GatewayParts {
  readonly #parts: Part[] = [];

  add(part: Part): void {
    this.#parts.push(part);
  }

  /** Closes every part, logging (not throwing) a failure so the ones after it still close. */
  async closeAll(logger: Logger): Promise<void> {
    for (const part of this.#parts.toReversed()) {
      try {
        await part.close();
      } catch (error) {
        logger.error('close failed', { part: part.name, err: error instanceof Error ? error.message : String(error) });
      }
    }
  }

  /** After a failed build: the error of the build is the one to report, not those of the cleanup. */
  async closeQuietly(): Promise<void> {
    for (const part of this.#parts.toReversed()) await part.close().catch(() => undefined);
  }
}
