// What `rollgate export` tells the user on stderr besides the rows: how many it wrote, which limits it held rows to,
// every row and call it left out and why, and the rollouts its status filter skipped. An export that writes nothing
// must say why (a run still `running`, rows over a limit), never just "exported 0 rows".
import type { RowDrop, RowDropReason } from '../adapters/length-limits.js';
import { ROW_DROP_REASONS } from '../adapters/length-limits.js';
import type { TrainingDropReason } from '../adapters/triplets.js';
import type { RolloutStatus } from '../store/core/types.js';

const CALL_DROP_LABELS: Readonly<Record<TrainingDropReason, string>> = {
  aborted: 'aborted calls (their rollouts export no rows)',
  incomplete_token_ids: 'calls with incomplete token ids',
  token_count_mismatch: 'calls whose token ids do not match usage.completion_tokens',
  logprobs_floor: 'calls exported without logprobs (-9999 placeholder)',
  version_changed_in_flight: 'calls whose server changed weights while they generated',
  auxiliary: "auxiliary calls (the harness's titles, summaries, probes)",
  failed_call: 'calls that failed (an upstream or stream error, or the client left mid-answer)',
};

const ROW_DROP_LABELS: Readonly<Record<RowDropReason, string>> = {
  prompt_too_long: 'prompt longer than its limit',
  response_too_long: 'response longer than its limit',
};

interface RowDropTally {
  count: number;
  /** The longest row left out for this reason, and the limit it broke. */
  longest: number;
  limit: number;
}

const CONTEXT_LIMIT = "the engine's context length recorded on the row's calls";

function describeLimits(limits: {
  readonly maxPromptLength: number | undefined;
  readonly maxResponseLength: number | undefined;
}): string {
  const { maxPromptLength: prompt, maxResponseLength: response } = limits;
  if (prompt === undefined && response === undefined) return `${CONTEXT_LIMIT} (unchecked where none was recorded)`;
  return `prompt ${prompt ?? CONTEXT_LIMIT}, response ${response ?? CONTEXT_LIMIT}`;
}

export class ExportReport {
  private readonly callDrops: Partial<Record<TrainingDropReason, number>> = {};
  private readonly rowDrops: Partial<Record<RowDropReason, RowDropTally>> = {};
  private skipped: ReadonlyMap<RolloutStatus, number> = new Map();

  callDropped(reason: TrainingDropReason): void {
    this.callDrops[reason] = (this.callDrops[reason] ?? 0) + 1;
  }

  rowDropped(drop: RowDrop): void {
    const tally = this.rowDrops[drop.reason] ?? { count: 0, longest: 0, limit: drop.limit };
    tally.count += 1;
    if (drop.length > tally.longest) {
      tally.longest = drop.length;
      tally.limit = drop.limit;
    }
    this.rowDrops[drop.reason] = tally;
  }

  skippedRollouts(counts: ReadonlyMap<RolloutStatus, number>): void {
    this.skipped = counts;
  }

  /** The stderr lines, each ending in a newline. */
  lines(options: {
    readonly rows: number;
    readonly level: string;
    readonly maxPromptLength: number | undefined;
    readonly maxResponseLength: number | undefined;
    readonly statuses: readonly RolloutStatus[] | null;
  }): string[] {
    const lines = [`rollgate: exported ${options.rows} ${options.level} rows\n`];
    lines.push(`rollgate: length limits: ${describeLimits(options)}\n`);
    const rowDropped = ROW_DROP_REASONS.reduce((sum, reason) => sum + (this.rowDrops[reason]?.count ?? 0), 0);
    if (rowDropped > 0) {
      const parts = ROW_DROP_REASONS.flatMap((reason) => {
        const tally = this.rowDrops[reason];
        return tally === undefined
          ? []
          : [`${tally.count} ${reason} (${ROW_DROP_LABELS[reason]}; longest ${tally.longest} > ${tally.limit})`];
      });
      lines.push(`rollgate: dropped ${rowDropped} rows, never cut: ${parts.join(', ')}\n`);
    }
    for (const reason of Object.keys(CALL_DROP_LABELS) as TrainingDropReason[]) {
      const count = this.callDrops[reason] ?? 0;
      if (count > 0) lines.push(`rollgate: left out ${count} ${CALL_DROP_LABELS[reason]}\n`);
    }
    const skipped = [...this.skipped].filter(([, count]) => count > 0);
    if (skipped.length > 0 && options.statuses !== null) {
      const total = skipped.reduce((sum, [, count]) => sum + count, 0);
      const byStatus = skipped.map(([status, count]) => `${status} ${count}`).join(', ');
      lines.push(
        `rollgate: skipped ${total} rollouts not in --status ${options.statuses.join(',')}: ${byStatus} ` +
          `(--status ${skipped[0]?.[0] ?? 'all'} or --status all exports them)\n`,
      );
    }
    return lines;
  }
}
