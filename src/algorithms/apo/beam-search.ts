// APO: beam search over prompt templates with textual gradients and edits (docs/algorithms.md), with the
// fixes of docs/algorithms.md: branches and candidates of a round are evaluated concurrently under a bound; every
// evaluation is pinned to its candidate's namespaced resources id; timeouts are counted and cancelled;
// critique evidence is stripped and capped; edits that break placeholders are rejected before evaluation;
// all random choices come from one seeded RNG, drawn in a fixed order before any concurrent work starts.
import { RESPONSE_CACHE_METADATA_KEY } from '../../gateway/request/response-cache.js';
import type { JsonObject, JsonValue, NamedResources, RolloutMode } from '../../store/core/types.js';
import { createLimiter } from '../concurrency.js';
import { AlgorithmConfigError, isAbortError, throwIfAborted } from '../errors.js';
import { type EvaluationResult, evaluateTasks } from '../evaluation.js';
import { writeJsonAtomic } from '../report.js';
import { createRng, type Rng } from '../rng.js';
import type { AlgorithmContext } from '../types.js';
import { createBatchIterator } from './batches.js';
import { CandidateStore } from './candidate-store.js';
import { boundExperiments, toExperiment } from './experiments.js';
import type { OptimizerClient } from './optimizer.js';
import type { ApoOptions } from './options.js';
import { checkPlaceholders } from './placeholders.js';
import { cleanEditedTemplate, EDIT_VARIANTS, GRADIENT_VARIANTS } from './prompts.js';

export interface ApoDeps {
  readonly optimizer: OptimizerClient;
  /** Namespaces every resources id of the run. */
  readonly runId: string;
  readonly seed: number;
}

interface Candidate {
  readonly version: string;
  readonly resourcesId: string;
  readonly template: string;
  readonly parentVersion: string | null;
  readonly round: number;
  readonly critique: string | null;
  readonly scores: Record<string, number>;
}

type RoundSummary = {
  round: number;
  parents: string[];
  new_candidates: string[];
  rejected: { placeholder: number; empty: number; duplicate: number; failed: number };
  beam: Array<{ version: string; score: number }>;
  leader: { version: string; full_val_score: number };
  best_version: string;
  best_score: number;
  duration_s: number;
};

interface BranchJob {
  readonly parent: Candidate;
  readonly batch: JsonValue[];
  readonly gradientVariant: number;
  readonly editVariant: number;
  readonly sampleSeed: number;
}

type BranchOutcome =
  | { kind: 'candidate'; template: string; critique: string }
  | { kind: 'placeholder' | 'empty' }
  | { kind: 'failed'; error: unknown };

interface SeedPrompt {
  readonly resourceName: string;
  readonly template: string;
  readonly baseResources: NamedResources;
}

async function resolveSeed(opts: ApoOptions, ctx: AlgorithmContext): Promise<SeedPrompt> {
  const latest = await ctx.store.getLatestResources();
  const resources: NamedResources = latest?.resources ?? {};
  if (opts.seedPrompt !== undefined) {
    const resourceName = opts.promptResourceName ?? 'prompt_template';
    const { [resourceName]: _replaced, ...baseResources } = resources;
    return { resourceName, template: opts.seedPrompt, baseResources };
  }
  for (const [name, resource] of Object.entries(resources)) {
    if (resource.resource_type !== 'prompt_template') continue;
    if (opts.promptResourceName !== undefined && name !== opts.promptResourceName) continue;
    const template = (resource as { template?: unknown }).template;
    if (typeof template !== 'string') continue;
    const { [name]: _seed, ...baseResources } = resources;
    return { resourceName: name, template, baseResources };
  }
  throw new AlgorithmConfigError(
    'apo needs a seed prompt: set options.seedPrompt, or add a prompt_template resource to the store' +
      (opts.promptResourceName === undefined ? '' : ` named ${opts.promptResourceName}`),
  );
}

export async function runBeamSearch(opts: ApoOptions, ctx: AlgorithmContext, deps: ApoDeps): Promise<JsonObject> {
  const { store, progress, logger, signal } = ctx;
  const train = ctx.datasets.train;
  const val = ctx.datasets.val;
  if (!train || train.length === 0 || !val || val.length === 0) {
    throw new AlgorithmConfigError('apo needs both data.train and data.val (JSONL files with at least one task)');
  }
  const startedAt = Date.now();
  const rng: Rng = createRng(deps.seed);
  const seed = await resolveSeed(opts, ctx);
  const candidates = new CandidateStore({
    store,
    runId: deps.runId,
    resourceName: seed.resourceName,
    baseResources: seed.baseResources,
  });
  await candidates.init(seed.template);

  const all: Candidate[] = [];
  let versionCounter = 0;
  const stats = { rollouts: 0, timedOut: 0, optimizerCalls: 0, evaluations: 0 };
  // One bound for evaluation batches and optimizer calls together: `concurrency: 1` is then the original's
  // strictly one-thing-at-a-time loop.
  const limiter = createLimiter(opts.concurrency);

  const addCandidate = async (
    template: string,
    lineage: { parent: Candidate | null; round: number; critique: string | null },
  ): Promise<Candidate> => {
    const version = `v${versionCounter++}`;
    const resourcesId = await candidates.put(template, {
      runId: deps.runId,
      version,
      parentVersion: lineage.parent?.version ?? null,
      parentResourcesId: lineage.parent?.resourcesId ?? null,
      round: lineage.round,
      critique: lineage.critique,
      scores: {},
    });
    const candidate: Candidate = {
      version,
      resourcesId,
      template,
      parentVersion: lineage.parent?.version ?? null,
      round: lineage.round,
      critique: lineage.critique,
      scores: {},
    };
    all.push(candidate);
    return candidate;
  };

  const evaluate = (
    candidate: Candidate,
    tasks: readonly JsonValue[],
    options: { mode: RolloutMode; purpose: string; keepSpans: boolean },
  ): Promise<EvaluationResult> =>
    limiter.run(async () => {
      throwIfAborted(signal);
      const result = await evaluateTasks({
        store,
        tasks,
        resourcesId: candidate.resourcesId,
        mode: options.mode,
        timeoutS: opts.rolloutBatchTimeoutS,
        timeoutPolicy: opts.timeoutPolicy,
        signal,
        keepSpans: options.keepSpans,
        metadata: {
          algorithm: 'apo',
          apo_run_id: deps.runId,
          candidate: candidate.version,
          purpose: options.purpose,
          ...(opts.responseCache ? { [RESPONSE_CACHE_METADATA_KEY]: true } : {}),
        },
      });
      stats.rollouts += tasks.length;
      stats.timedOut += result.timedOut;
      stats.evaluations += 1;
      candidate.scores[options.purpose] = result.score;
      if (result.timedOut > 0) {
        logger.warn('apo evaluation had timed-out rollouts', {
          candidate: candidate.version,
          purpose: options.purpose,
          timedOut: result.timedOut,
          policy: opts.timeoutPolicy,
        });
      }
      progress.advance(1);
      return result;
    });

  const askOptimizer = (model: string, messages: Parameters<OptimizerClient['complete']>[0]['messages']) =>
    limiter.run(async () => {
      throwIfAborted(signal);
      stats.optimizerCalls += 1;
      return deps.optimizer.complete({ model, messages, temperature: opts.optimizer.temperature, signal });
    });

  const expand = async (job: BranchJob, round: number): Promise<BranchOutcome> => {
    try {
      const evaluation = await evaluate(job.parent, job.batch, {
        mode: 'train',
        purpose: `r${round}_train`,
        keepSpans: true,
      });
      const sampled = createRng(job.sampleSeed).sample(evaluation.results, opts.gradientBatchSize);
      const experiments = boundExperiments(sampled.map(toExperiment), opts.maxExperimentChars);
      const gradient = GRADIENT_VARIANTS[job.gradientVariant] ?? GRADIENT_VARIANTS[0];
      const critique = await askOptimizer(
        opts.optimizer.gradientModel,
        gradient?.build({ promptTemplate: job.parent.template, experiments }) ?? [],
      );
      // No critique: the parent's text comes back unchanged (docs/algorithms.md); it is a duplicate.
      if (!critique?.trim()) return { kind: 'candidate', template: job.parent.template, critique: '' };
      const edit = EDIT_VARIANTS[job.editVariant] ?? EDIT_VARIANTS[0];
      const edited = await askOptimizer(
        opts.optimizer.applyEditModel,
        edit?.build({ promptTemplate: job.parent.template, critique }) ?? [],
      );
      const template = cleanEditedTemplate(edited ?? '');
      if (template === '') return { kind: 'empty' };
      const check = checkPlaceholders(job.parent.template, template);
      if (!check.ok) {
        logger.warn('apo edit rejected: placeholders changed', {
          parent: job.parent.version,
          missing: check.missing,
          unexpected: check.unexpected,
        });
        return { kind: 'placeholder' };
      }
      return { kind: 'candidate', template, critique };
    } catch (error) {
      if (isAbortError(error) || signal.aborted) throw error;
      logger.warn('apo branch failed', { parent: job.parent.version, err: (error as Error).message });
      return { kind: 'failed', error };
    }
  };

  const writeInterim = async (result: JsonObject) => {
    try {
      await writeJsonAtomic(ctx.reportPath, { algorithm: 'apo', status: 'running', result });
    } catch (error) {
      logger.warn('apo could not write its interim report', { err: (error as Error).message });
    }
  };

  // ---- seed -------------------------------------------------------------------------------------------
  const seedCandidate = await addCandidate(seed.template, { parent: null, round: 0, critique: null });
  let best = { candidate: seedCandidate, score: Number.NEGATIVE_INFINITY };
  let seedScore: number | null = null;
  if (opts.runInitialValidation) {
    progress.phase('seed validation', 1);
    const result = await evaluate(seedCandidate, val, { mode: 'val', purpose: 'full_val', keepSpans: false });
    seedScore = result.score;
    best = { candidate: seedCandidate, score: result.score };
    progress.note(`seed ${seedCandidate.version}: full validation score ${result.score.toFixed(3)}`);
  }

  const gradBatches = createBatchIterator(train, opts.gradientBatchSize, rng);
  const valBatches = createBatchIterator(val, opts.valBatchSize, rng);
  let beam: Candidate[] = [seedCandidate];
  const rounds: RoundSummary[] = [];

  for (let round = 1; round <= opts.beamRounds; round++) {
    throwIfAborted(signal);
    const roundStart = Date.now();
    const parents =
      beam.length < opts.beamWidth
        ? Array.from({ length: opts.beamWidth }, (_, i) => beam[i % beam.length] as Candidate)
        : rng.sample(beam, opts.beamWidth);
    // Every random draw of the round happens here, in order, so concurrency never changes the outcome.
    const jobs: BranchJob[] = parents.flatMap((parent) =>
      Array.from({ length: opts.branchFactor }, () => ({
        parent,
        batch: gradBatches.next(),
        gradientVariant: rng.int(GRADIENT_VARIANTS.length),
        editVariant: rng.int(EDIT_VARIANTS.length),
        sampleSeed: rng.int(2 ** 31),
      })),
    );
    const valBatch = valBatches.next();

    progress.phase(`round ${round}/${opts.beamRounds}: critiques and edits`, jobs.length);
    const outcomes = await Promise.all(jobs.map((job) => expand(job, round)));
    const rejected = { placeholder: 0, empty: 0, duplicate: 0, failed: 0 };
    const failures = outcomes.filter((o) => o.kind === 'failed');
    if (failures.length === jobs.length && jobs.length > 0) {
      const first = failures[0] as { error: unknown };
      throw new Error(`every optimizer branch of round ${round} failed: ${(first.error as Error).message}`, {
        cause: first.error,
      });
    }
    const known = new Set(all.map((c) => c.template));
    const fresh: Candidate[] = [];
    for (const [i, outcome] of outcomes.entries()) {
      if (outcome.kind === 'candidate') {
        if (known.has(outcome.template)) {
          rejected.duplicate++;
          continue;
        }
        known.add(outcome.template);
        const parent = (jobs[i] as BranchJob).parent;
        fresh.push(await addCandidate(outcome.template, { parent, round, critique: outcome.critique }));
      } else {
        rejected[outcome.kind]++;
      }
    }

    const pool = [...beam, ...fresh];
    progress.phase(`round ${round}/${opts.beamRounds}: scoring ${pool.length} candidates`, pool.length);
    const purpose = `r${round}_val_batch`;
    const scored = await Promise.all(
      pool.map(async (candidate) => ({
        candidate,
        score: (await evaluate(candidate, valBatch, { mode: 'val', purpose, keepSpans: false })).score,
      })),
    );
    // Stable sort: on equal scores the older candidate (already in the beam) stays ahead.
    scored.sort((a, b) => b.score - a.score);
    beam = scored.slice(0, opts.beamWidth).map((s) => s.candidate);
    const leader = beam[0];
    if (!leader) throw new Error('No beam candidates any more');

    progress.phase(`round ${round}/${opts.beamRounds}: leader on full validation`, 1);
    const leaderScore = (await evaluate(leader, val, { mode: 'val', purpose: 'full_val', keepSpans: false })).score;
    if (leaderScore > best.score) best = { candidate: leader, score: leaderScore };

    const summary: RoundSummary = {
      round,
      parents: parents.map((p) => p.version),
      new_candidates: fresh.map((c) => c.version),
      rejected,
      beam: scored.slice(0, opts.beamWidth).map((s) => ({ version: s.candidate.version, score: s.score })),
      leader: { version: leader.version, full_val_score: leaderScore },
      best_version: best.candidate.version,
      best_score: best.score,
      duration_s: (Date.now() - roundStart) / 1000,
    };
    rounds.push(summary);
    progress.note(
      `round ${round}: ${fresh.length} new candidates, leader ${leader.version} ${leaderScore.toFixed(3)}, ` +
        `best ${best.candidate.version} ${best.score.toFixed(3)} (${summary.duration_s.toFixed(1)}s)`,
    );
    await writeInterim(buildResult());
  }

  // Scores are known only now; rewrite each candidate once with them, then publish the best as latest.
  throwIfAborted(signal);
  for (const candidate of all) {
    await candidates.put(candidate.template, lineageOf(candidate));
  }
  const published = await candidates.publishBest(best.candidate.template, lineageOf(best.candidate));
  progress.note(`best prompt ${best.candidate.version} (score ${best.score.toFixed(3)}) is now the latest resources`);
  return { ...buildResult(), published_resources_id: published.resources_id };

  function lineageOf(candidate: Candidate) {
    return {
      runId: deps.runId,
      version: candidate.version,
      parentVersion: candidate.parentVersion,
      parentResourcesId: all.find((c) => c.version === candidate.parentVersion)?.resourcesId ?? null,
      round: candidate.round,
      critique: candidate.critique,
      scores: { ...candidate.scores },
    };
  }

  function buildResult(): JsonObject {
    return {
      run_id: deps.runId,
      seed: deps.seed,
      resource_name: seed.resourceName,
      seed_prompt: { version: seedCandidate.version, score: seedScore, template: seedCandidate.template },
      best: {
        version: best.candidate.version,
        resources_id: best.candidate.resourcesId,
        score: Number.isFinite(best.score) ? best.score : null,
        template: best.candidate.template,
      },
      rounds,
      candidates: all.map((c) => ({
        version: c.version,
        resources_id: c.resourcesId,
        parent: c.parentVersion,
        round: c.round,
        critique: c.critique,
        scores: { ...c.scores },
        template: c.template,
      })),
      rollouts: { total: stats.rollouts, timed_out: stats.timedOut, timeout_policy: opts.timeoutPolicy },
      evaluations: stats.evaluations,
      optimizer_calls: stats.optimizerCalls,
      duration_s: (Date.now() - startedAt) / 1000,
    };
  }
}
