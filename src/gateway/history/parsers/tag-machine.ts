// The tag-delimited output formats (qwen3_coder XML, glm47, kimi_k2, minimax_m2) read as vLLM's declarative parser
// engine reads them: the text is cut at the format's tags (terminals), and a (state, tag) table moves between
// reasoning, content and the parts of a tool call. Text takes the kind of the state it is in; a tag the table does
// not list for the current state is plain text there; text in a tool call's preamble or between calls is dropped.
// Each format is a table of facts about vLLM's behaviour, in its own file.

export type MachineState = 'reasoning' | 'content' | 'preamble' | 'name' | 'args' | 'between';

export interface MachineStep {
  readonly next: MachineState;
  /** A new tool call starts here. */
  readonly callStart?: boolean;
  /** The current tool call is complete. */
  readonly callEnd?: boolean;
  /** The tag's own text belongs to the call's argument body (the format's argument converter reads it). */
  readonly argText?: boolean;
}

export interface TagFormat {
  /** Tag names and their text. */
  readonly tags: Readonly<Record<string, string>>;
  /** `${state} ${tag}` -> step. */
  readonly steps: Readonly<Record<string, MachineStep>>;
}

export interface MachineCall {
  name: string;
  args: string;
  closed: boolean;
}

export interface MachineRun {
  readonly reasoning: string;
  /** Content in order, calls cut out. */
  readonly content: string;
  readonly calls: readonly MachineCall[];
  /** The state at the end of the text. */
  readonly state: MachineState;
}

/** Length of the longest suffix of `text` that is a proper prefix of one of the tags. */
function partialTagLength(text: string, tags: readonly string[]): number {
  let longest = 0;
  for (const tag of tags) {
    for (let n = Math.min(tag.length - 1, text.length); n > longest; n--) {
      if (text.endsWith(tag.slice(0, n))) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}

/**
 * Runs the table over `text`. Unless `final`, a suffix that could still grow into a tag is held back (the engine
 * waits for the next chunk before it decides what those characters are).
 */
export function runMachine(format: TagFormat, text: string, initial: MachineState, final: boolean): MachineRun {
  const entries = Object.entries(format.tags);
  const literals = entries.map(([, literal]) => literal);
  const end = final ? text.length : text.length - partialTagLength(text, literals);
  let state = initial;
  let reasoning = '';
  let content = '';
  const calls: MachineCall[] = [];
  const addText = (piece: string) => {
    if (piece === '') return;
    const call = calls[calls.length - 1];
    if (state === 'reasoning') reasoning += piece;
    else if (state === 'content') content += piece;
    else if (state === 'name' && call !== undefined) call.name += piece;
    else if (state === 'args' && call !== undefined) call.args += piece;
  };
  let at = 0;
  while (at < end) {
    let found = -1;
    let tagName = '';
    let literal = '';
    for (const [name, lit] of entries) {
      const index = text.indexOf(lit, at);
      if (index < 0 || index + lit.length > end) continue;
      if (found < 0 || index < found || (index === found && lit.length > literal.length)) {
        found = index;
        tagName = name;
        literal = lit;
      }
    }
    if (found < 0) {
      addText(text.slice(at, end));
      break;
    }
    addText(text.slice(at, found));
    at = found + literal.length;
    const step = format.steps[`${state} ${tagName}`];
    if (step === undefined) {
      addText(literal);
      continue;
    }
    if (step.callStart) calls.push({ name: '', args: '', closed: false });
    const call = calls[calls.length - 1];
    if (step.argText && call !== undefined) call.args += literal;
    if (step.callEnd && call !== undefined) call.closed = true;
    state = step.next;
  }
  return { reasoning, content, calls, state };
}
