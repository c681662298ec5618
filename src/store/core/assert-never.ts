/** Exhaustiveness check for `switch` over a union: a new member is a compile error here. */
export function assertNever(value: never): never {
  throw new Error(`Unexpected value: ${String(value)}`);
}
