// A do-nothing Node process for the store benchmarks: only a timer runs in it, so its worst event-loop delay is
// what scheduling alone costs on the box at that moment. A benchmark starts it next to what it measures and reads
// both over the same window (`reset`, then `stats`: proxy-child-stats.ts); a delay the measured process shows and
// this one does not is the measured process's own.
import { answerStats } from './proxy-child-stats.js';

answerStats(async () => {});
// Keeps the process alive between IPC messages; it exits when the parent closes the channel.
setInterval(() => {}, 1_000);
process.on('disconnect', () => process.exit(0));
