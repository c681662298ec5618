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

/**
 * A tool format behind `<think>...</think>` reasoning, as vLLM runs a reasoning parser before the tool parser: a
 * `<think>` read in state `opensIn` enters reasoning (`reasoning` when the template opened the block already, so a
 * repeated tag is swallowed; `content` when the model opens it), `</think>` leaves it, and a stray `</think>` in content
 * is dropped.
 */
export function withThinkTags(tools: TagFormat, opensIn: 'reasoning' | 'content'): TagFormat {
  return {
    tags: { thinkStart: '<think>', thinkEnd: '</think>', ...tools.tags },
    steps: {
      ...tools.steps,
      [`${opensIn} thinkStart`]: { next: 'reasoning' },
      'reasoning thinkEnd': { next: 'content' },
      'content thinkEnd': { next: 'content' },
    },
  };
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
 * Reads a text that only grows (a stream's text so far) with the table, resuming where the last read stopped, so a
 * stream costs time in its length, not its square. Unless `final`, a suffix that could still grow into a tag is
 * held back (the engine waits for the next chunk before it decides what those characters are).
 */
export class TagReader {
  readonly #entries: [string, string][];
  readonly #literals: string[];
  readonly #steps: TagFormat['steps'];
  #at = 0;
  #state: MachineState;
  #reasoning = '';
  #content = '';
  readonly #calls: MachineCall[] = [];

  constructor(format: TagFormat, initial: MachineState) {
    this.#entries = Object.entries(format.tags);
    this.#literals = this.#entries.map(([, literal]) => literal);
    this.#steps = format.steps;
    this.#state = initial;
  }

  /** The run over `text`, which must extend the text of the previous read. */
  read(text: string, final: boolean): MachineRun {
    const end = final ? text.length : text.length - partialTagLength(text, this.#literals);
    while (this.#at < end) {
      let found = -1;
      let tagName = '';
      let literal = '';
      for (const [name, lit] of this.#entries) {
        const index = text.indexOf(lit, this.#at);
        if (index < 0 || index + lit.length > end) continue;
        if (found < 0 || index < found || (index === found && lit.length > literal.length)) {
          found = index;
          tagName = name;
          literal = lit;
        }
      }
      if (found < 0) {
        this.#addText(text.slice(this.#at, end));
        this.#at = end;
        break;
      }
      this.#addText(text.slice(this.#at, found));
      // A longer tag may start where this one does (`<invoke name=` and `<invoke name="`): wait until it is decided.
      if (
        !final &&
        this.#literals.some((lit) => lit.length > literal.length && lit.startsWith(text.slice(found, end)))
      ) {
        this.#at = found;
        break;
      }
      this.#at = found + literal.length;
      const step = this.#steps[`${this.#state} ${tagName}`];
      if (step === undefined) {
        this.#addText(literal);
        continue;
      }
      if (step.callStart) this.#calls.push({ name: '', args: '', closed: false });
      const call = this.#calls[this.#calls.length - 1];
      if (step.argText && call !== undefined) call.args += literal;
      if (step.callEnd && call !== undefined) call.closed = true;
      this.#state = step.next;
    }
    return { reasoning: this.#reasoning, content: this.#content, calls: this.#calls, state: this.#state };
  }

  #addText(piece: string): void {
    if (piece === '') return;
    const call = this.#calls[this.#calls.length - 1];
    if (this.#state === 'reasoning') this.#reasoning += piece;
    else if (this.#state === 'content') this.#content += piece;
    else if (this.#state === 'name' && call !== undefined) call.name += piece;
    else if (this.#state === 'args' && call !== undefined) call.args += piece;
  }
}

/** The run over a whole text. */
export function runMachine(format: TagFormat, text: string, initial: MachineState, final: boolean): MachineRun {
  return new TagReader(format, initial).read(text, final);
}
