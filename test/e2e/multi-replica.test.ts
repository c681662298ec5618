// Scale-out (docs/architecture.md): two `rollgate serve` processes share one PostgreSQL store. 64 agents (the
// official openai SDK) call the proxy routes, streaming and not, spread over both replicas. One replica is killed
// with SIGKILL mid-run; its agents fail over to the survivor (what a load balancer does) and continue the same
// rollouts there. Afterwards: every acknowledged call's span is stored exactly once, and per rollout the sequence
// ids are unique and increase in call order, across both replicas (docs/architecture.md, "The path of one call").
// Runs when ROLLGATE_TEST_PG_URL is set.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../src/contracts/span-attributes.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { type ServingProcess, startServe } from '../helpers/cli-process.js';
import { type MockVllm, startMockVllm } from '../servers/mock-vllm.js';

const PG_URL = process.env.ROLLGATE_TEST_PG_URL;

const AGENTS = 64;
const CALLS_PER_AGENT = 4;
/** Replica B dies once this many calls were acknowledged (well before the run ends). */
const KILL_AFTER_ACKS = 80;

type Replica = ServingProcess;

function serve(options: { cwd: string; storeUrl: string; backend: string }): Promise<Replica> {
  return startServe(
    ['--port', '0', '--store', options.storeUrl, '--backend', options.backend, '--model', 'mock-model'],
    {
      cwd: options.cwd,
      timeoutMs: 40_000,
    },
  );
}

/** One acknowledged call: the agent got the whole answer (the JSON body, or the stream up to [DONE]). */
interface Ack {
  agent: number;
  call: number;
  prompt: string;
  replica: 'a' | 'b';
}

function isConnectionError(error: unknown): boolean {
  return (
    error instanceof OpenAI.APIConnectionError ||
    (error instanceof Error && /terminated|ECONN|socket/i.test(error.message))
  );
}

if (PG_URL === undefined) {
  console.warn(
    'test/e2e/multi-replica.test.ts: ROLLGATE_TEST_PG_URL is not set, so the two-replica PostgreSQL test is SKIPPED. ' +
      'Run `bash .ci/start-postgres.sh` and export ROLLGATE_TEST_PG_URL=postgres://rollgate:rollgate@127.0.0.1:55432/rollgate',
  );
  describe.skip('two gateway replicas on one PostgreSQL store (ROLLGATE_TEST_PG_URL not set)', () => {
    it('needs a database', () => {});
  });
} else {
  const pgUrl = PG_URL;
  const schema = `rollgate_e2e_${randomBytes(4).toString('hex')}`;
  const storeUrl = `${pgUrl}${pgUrl.includes('?') ? '&' : '?'}schema=${schema}`;
  const cwd = mkdtempSync(join(tmpdir(), 'rollgate-replicas-'));
  let mock: MockVllm;
  let a: Replica | undefined;
  let b: Replica | undefined;

  beforeAll(async () => {
    mock = await startMockVllm({ model: 'mock-model', anyModel: true, latencyMs: 15, ttftMs: 10, interTokenMs: 4 });
    // Both replicas start at the same moment against an empty schema: migrations must not collide.
    [a, b] = await Promise.all([
      serve({ cwd, storeUrl, backend: mock.url }),
      serve({ cwd, storeUrl, backend: mock.url }),
    ]);
  }, 90_000);

  afterAll(async () => {
    for (const replica of [a, b]) {
      if (replica !== undefined && replica.child.exitCode === null && replica.child.signalCode === null) {
        replica.child.kill('SIGTERM');
        await replica.exited;
      }
    }
    await mock?.close();
    rmSync(cwd, { recursive: true, force: true });
    const admin = new pg.Client({ connectionString: pgUrl });
    await admin.connect();
    try {
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await admin.end();
    }
  }, 60_000);

  describe('two gateway replicas on one PostgreSQL store', () => {
    it('survives SIGKILL of one replica: agents fail over, every acknowledged span is stored once, sequence ids stay ordered', async () => {
      if (a === undefined || b === undefined) throw new Error('replicas not started');
      const survivor = a;
      const victim = b;
      const acks: Ack[] = [];
      const failures: Array<{ agent: number; call: number; replica: 'a' | 'b'; error: string }> = [];
      let killed = false;
      let killedAt = 0;

      const killVictim = () => {
        if (killed) return;
        killed = true;
        killedAt = acks.length;
        victim.child.kill('SIGKILL');
      };

      async function agent(index: number): Promise<void> {
        const rid = `ro-replica-${schema}-${index}`;
        const aid = `at-${index}`;
        let replica: 'a' | 'b' = index % 2 === 0 ? 'a' : 'b';
        const clientFor = (which: 'a' | 'b') =>
          new OpenAI({
            baseURL: `${(which === 'a' ? survivor : victim).url}/rollout/${rid}/attempt/${aid}/v1`,
            apiKey: 'agent-key',
            // No SDK retries: a retried call would be a second span for one logical call and blur the check.
            maxRetries: 0,
            timeout: 30_000,
          });
        let client = clientFor(replica);
        for (let call = 0; call < CALLS_PER_AGENT; call++) {
          for (let tryNo = 0; ; tryNo++) {
            // A unique prompt per try: an unacknowledged try may or may not have been stored before the kill.
            const prompt = `agent ${index} call ${call} try ${tryNo}`;
            const stream = (index + call) % 2 === 0;
            try {
              if (stream) {
                const chunks = await client.chat.completions.create({
                  model: 'mock-model',
                  messages: [{ role: 'user', content: prompt }],
                  max_tokens: 8,
                  stream: true,
                });
                let text = '';
                for await (const chunk of chunks) text += chunk.choices[0]?.delta?.content ?? '';
                expect(text.length).toBeGreaterThan(0);
              } else {
                const answer = await client.chat.completions.create({
                  model: 'mock-model',
                  messages: [{ role: 'user', content: prompt }],
                  max_tokens: 8,
                });
                expect(answer.choices[0]?.message.content?.length ?? 0).toBeGreaterThan(0);
              }
              acks.push({ agent: index, call, prompt, replica });
              if (acks.length >= KILL_AFTER_ACKS) killVictim();
              break;
            } catch (error: unknown) {
              failures.push({ agent: index, call, replica, error: String(error) });
              // Only the killed replica may fail, and only by going away; then fail over to the survivor.
              if (replica === 'a' || !killed || !isConnectionError(error) || tryNo > 0) throw error;
              replica = 'a';
              client = clientFor('a');
            }
          }
        }
      }

      await Promise.all(Array.from({ length: AGENTS }, (_, i) => agent(i)));
      expect(killed).toBe(true);
      expect(await victim.exited).toMatchObject({ signal: 'SIGKILL' });
      expect(survivor.child.exitCode).toBeNull();
      expect(acks).toHaveLength(AGENTS * CALLS_PER_AGENT);
      // The kill really happened mid-run: calls were acknowledged on the victim before it, and after it only the
      // survivor answered (so some agents of the victim failed over).
      expect(killedAt).toBeGreaterThanOrEqual(KILL_AFTER_ACKS);
      expect(killedAt).toBeLessThan(acks.length);
      expect(acks.slice(0, killedAt).some((x) => x.replica === 'b')).toBe(true);
      expect(acks.slice(killedAt + AGENTS).every((x) => x.replica === 'a')).toBe(true);
      expect(failures.every((f) => f.replica === 'b')).toBe(true);

      // Read back through a third store instance on the same schema.
      const store = await openPostgresStore({ url: pgUrl, schema, poolSize: 2 });
      try {
        for (let index = 0; index < AGENTS; index++) {
          const rid = `ro-replica-${schema}-${index}`;
          const spans = (await store.querySpans(rid)).items;
          const seq = spans.map((s) => s.sequence_id);
          expect(new Set(seq).size, `duplicate sequence ids in ${rid}`).toBe(seq.length);
          expect(seq, `sequence ids out of order in ${rid}`).toEqual([...seq].sort((x, y) => x - y));
          const byPrompt = new Map<string, number[]>();
          for (const span of spans) {
            const messages = JSON.parse(String(span.attributes[A.ATTR_GEN_AI_INPUT_MESSAGES])) as Array<{
              parts: Array<{ content?: string }>;
            }>;
            const prompt = messages[0]?.parts[0]?.content ?? '';
            byPrompt.set(prompt, [...(byPrompt.get(prompt) ?? []), span.sequence_id]);
            expect(span.attributes[A.ATTR_SPAN_SEQUENCE_ID]).toBe(span.sequence_id);
          }
          const mine = acks.filter((x) => x.agent === index).sort((x, y) => x.call - y.call);
          expect(mine).toHaveLength(CALLS_PER_AGENT);
          const ackedSeq = mine.map((x) => {
            const found = byPrompt.get(x.prompt) ?? [];
            expect(found, `acknowledged call "${x.prompt}" stored ${found.length} times`).toHaveLength(1);
            return found[0] as number;
          });
          // Calls of one agent are sequential, so their ids increase in call order, across the failover too.
          expect(ackedSeq).toEqual([...ackedSeq].sort((x, y) => x - y));
          expect(new Set(ackedSeq).size).toBe(ackedSeq.length);
        }
      } finally {
        await store.close();
      }
    }, 180_000);
  });
}
