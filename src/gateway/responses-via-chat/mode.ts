// Which pools serve /v1/responses by translating to chat (`responses: "via-chat"`) and which relay it to the
// engine's own Responses route. Read from config once: the option belongs to the pool, not to a version of it.
export type ResponsesMode = 'relay' | 'via-chat';

export interface ResponsesModePool {
  readonly name: string;
  readonly responses: ResponsesMode;
}

/** The mode of the pool a call's `model` reaches; with one pool any name reaches it, as the registry resolves. */
export function responsesModeLookup(pools: readonly ResponsesModePool[]): (model: unknown) => ResponsesMode {
  const byName = new Map(pools.map((pool) => [pool.name, pool.responses]));
  const only = pools.length === 1 ? pools[0]?.responses : undefined;
  return (model) => (typeof model === 'string' ? byName.get(model) : undefined) ?? only ?? 'relay';
}
