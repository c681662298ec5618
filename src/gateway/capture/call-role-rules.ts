// A pool's own call-role rules (`callRoles` in its config): which of its calls are housekeeping and which are the
// agent loop, for harnesses the built-in rules of call-role.ts do not know. Read from config once: the rules belong
// to the pool, not to a version of it, and a pool replace changes only backends and version.
import type { CallRoleRule, CallRoleRules } from '../../../config/call-roles-schema.js';
import { MainThreads } from './call-role-thread.js';

/** What a rule can ask of a call; the system texts are read only when a rule asks about them. */
export interface CallRoleFacts {
  systemTexts(): readonly string[];
  readonly hasTools: boolean;
  /** The call's max tokens (any of the APIs' keys); undefined when it sent none. */
  readonly maxTokens: number | undefined;
}

function matches(rule: CallRoleRule, facts: CallRoleFacts): boolean {
  if (rule.noTools !== undefined && rule.noTools === facts.hasTools) return false;
  if (rule.maxTokensAtMost !== undefined && !(facts.maxTokens !== undefined && facts.maxTokens <= rule.maxTokensAtMost))
    return false;
  const { systemPromptStartsWith: startsWith, systemPromptIncludes: includes } = rule;
  if (startsWith !== undefined && !facts.systemTexts().some((text) => text.startsWith(startsWith))) return false;
  if (includes !== undefined && !facts.systemTexts().some((text) => text.includes(includes))) return false;
  return true;
}

/** The role the pool's rules give a call (a `main` rule wins over an `auxiliary` one), or null when none matches. */
export function configuredRole(rules: CallRoleRules, facts: CallRoleFacts): 'main' | 'auxiliary' | null {
  if (rules.main.some((rule) => matches(rule, facts))) return 'main';
  if (rules.auxiliary.some((rule) => matches(rule, facts))) return 'auxiliary';
  return null;
}

/** What the gateway's call-role judgement keeps: the pools' rules, and the main thread of each rollout attempt. */
export interface CallRolesLookup {
  /** The rules of the pool a call's `model` reaches; null when that pool has none. */
  rules(model: unknown): CallRoleRules | null;
  readonly threads: MainThreads;
}

export interface CallRolesPool {
  readonly name: string;
  readonly callRoles: CallRoleRules;
}

/**
 * The rules of the pool a call's `model` reaches, null when it has none (the common case costs one map read); with
 * one pool any name reaches it, as the registry resolves. One set of main threads for all pools: a rollout attempt
 * is one agent, whatever pools its calls reach.
 */
export function callRoleRulesLookup(pools: readonly CallRolesPool[]): CallRolesLookup {
  const withRules = (pool: CallRolesPool): CallRoleRules | null =>
    pool.callRoles.main.length > 0 || pool.callRoles.auxiliary.length > 0 || !pool.callRoles.byThread
      ? pool.callRoles
      : null;
  const byName = new Map(pools.map((pool) => [pool.name, withRules(pool)]));
  const only = pools.length === 1 && pools[0] !== undefined ? withRules(pools[0]) : null;
  return {
    rules(model) {
      const named = typeof model === 'string' ? byName.get(model) : undefined;
      return named === undefined ? only : named;
    },
    threads: new MainThreads(),
  };
}
