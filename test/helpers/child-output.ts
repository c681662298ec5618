// A child process's whole stdout and stderr, as text, for the tests that check what a process printed once it exited.
import type { Readable } from 'node:stream';

export interface ChildOutput {
  readonly stdout: string;
  readonly stderr: string;
}

/** Collects what the child writes from now on; the fields are complete once the child has exited. */
export function collectOutput(child: { readonly stdout: Readable; readonly stderr: Readable }): ChildOutput {
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => {
    output.stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output.stderr += chunk.toString();
  });
  return output;
}
