// Older span producers (agent-lightning's LiteLLM proxy) stored lists and dicts as JSON or as Python
// `repr` strings ("[1, 2, 3]", "[{'token_ids': [4, 5]}]", "{'type': 'reward', 'value': None}").
// This reads both forms into plain values without ever evaluating code.

/** Parses a JSON or Python-literal string; returns `undefined` when the text is neither. */
export function parseLiteral(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    // fall through to the Python-literal reader
  }
  const parser = new PythonLiteralParser(trimmed);
  try {
    const value = parser.parseValue();
    parser.skipSpace();
    return parser.atEnd() ? value : undefined;
  } catch {
    return undefined;
  }
}

/** A value that may be a native list/object or a stringified one; strings that are not literals stay strings. */
export function maybeParseLiteral(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const first = value.trimStart()[0];
  if (first !== '[' && first !== '{' && first !== '(') return value;
  const parsed = parseLiteral(value);
  return parsed === undefined ? value : parsed;
}

class LiteralSyntaxError extends Error {}

class PythonLiteralParser {
  private pos = 0;

  constructor(private readonly text: string) {}

  atEnd(): boolean {
    return this.pos >= this.text.length;
  }

  skipSpace(): void {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos] ?? '')) this.pos++;
  }

  parseValue(): unknown {
    this.skipSpace();
    const ch = this.text[this.pos];
    switch (ch) {
      case '[':
        return this.parseSequence(']');
      case '(':
        return this.parseSequence(')');
      case '{':
        return this.parseDict();
      case "'":
      case '"':
        return this.parseString(ch);
      default:
        return this.parseAtom();
    }
  }

  private expect(ch: string): void {
    this.skipSpace();
    if (this.text[this.pos] !== ch) throw new LiteralSyntaxError(`expected ${ch}`);
    this.pos++;
  }

  private parseSequence(close: string): unknown[] {
    this.pos++;
    const items: unknown[] = [];
    for (;;) {
      this.skipSpace();
      if (this.text[this.pos] === close) {
        this.pos++;
        return items;
      }
      items.push(this.parseValue());
      this.skipSpace();
      if (this.text[this.pos] === ',') this.pos++;
      else if (this.text[this.pos] !== close) throw new LiteralSyntaxError('expected , or close');
    }
  }

  private parseDict(): Record<string, unknown> {
    this.pos++;
    const out: Record<string, unknown> = {};
    for (;;) {
      this.skipSpace();
      if (this.text[this.pos] === '}') {
        this.pos++;
        return out;
      }
      const key = this.parseValue();
      if (typeof key !== 'string' && typeof key !== 'number') throw new LiteralSyntaxError('bad key');
      this.expect(':');
      out[String(key)] = this.parseValue();
      this.skipSpace();
      if (this.text[this.pos] === ',') this.pos++;
      else if (this.text[this.pos] !== '}') throw new LiteralSyntaxError('expected , or }');
    }
  }

  private parseString(quote: string): string {
    this.pos++;
    let out = '';
    while (this.pos < this.text.length) {
      const ch = this.text[this.pos++];
      if (ch === quote) return out;
      if (ch !== '\\') {
        out += ch;
        continue;
      }
      const esc = this.text[this.pos++];
      switch (esc) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'x':
          out += String.fromCharCode(Number.parseInt(this.text.slice(this.pos, this.pos + 2), 16));
          this.pos += 2;
          break;
        case 'u':
          out += String.fromCharCode(Number.parseInt(this.text.slice(this.pos, this.pos + 4), 16));
          this.pos += 4;
          break;
        default:
          out += esc ?? '';
      }
    }
    throw new LiteralSyntaxError('unterminated string');
  }

  private parseAtom(): unknown {
    const match = /^[A-Za-z0-9_.+-]+/.exec(this.text.slice(this.pos));
    if (!match) throw new LiteralSyntaxError('unexpected character');
    this.pos += match[0].length;
    const word = match[0];
    if (word === 'None' || word === 'null') return null;
    if (word === 'True' || word === 'true') return true;
    if (word === 'False' || word === 'false') return false;
    const num = Number(word);
    if (Number.isNaN(num) && word !== 'nan') throw new LiteralSyntaxError('bad atom');
    return num;
  }
}
