// A tiny DOM builder. Every piece of data goes in as text (never innerHTML), so span content
// written by agents and models cannot inject markup into the page.

export type Child = Node | string | number | null | undefined | false | readonly Child[];

export interface Props {
  readonly class?: string;
  readonly title?: string;
  readonly href?: string;
  readonly id?: string;
  readonly type?: string;
  readonly value?: string;
  readonly placeholder?: string;
  readonly for?: string;
  readonly name?: string;
  readonly role?: string;
  readonly colspan?: number;
  readonly disabled?: boolean;
  readonly checked?: boolean;
  readonly selected?: boolean;
  readonly autocomplete?: string;
  readonly dataset?: Readonly<Record<string, string>>;
  readonly style?: Readonly<Partial<Record<'width' | 'left' | 'background' | 'color' | 'borderColor', string>>>;
  readonly on?: Readonly<Partial<{ [K in keyof HTMLElementEventMap]: (event: HTMLElementEventMap[K]) => void }>>;
}

function append(parent: Node, child: Child): void {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) {
    for (const c of child as readonly Child[]) append(parent, c);
    return;
  }
  parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props?: Props | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props) {
    if (props.class) el.className = props.class;
    if (props.title !== undefined) el.title = props.title;
    if (props.id !== undefined) el.id = props.id;
    if (props.role !== undefined) el.setAttribute('role', props.role);
    if (props.href !== undefined) el.setAttribute('href', props.href);
    if (props.type !== undefined) el.setAttribute('type', props.type);
    if (props.name !== undefined) el.setAttribute('name', props.name);
    if (props.placeholder !== undefined) el.setAttribute('placeholder', props.placeholder);
    if (props.autocomplete !== undefined) el.setAttribute('autocomplete', props.autocomplete);
    if (props.for !== undefined) el.setAttribute('for', props.for);
    if (props.colspan !== undefined) el.setAttribute('colspan', String(props.colspan));
    if (props.value !== undefined) (el as HTMLInputElement).value = props.value;
    if (props.disabled !== undefined) (el as HTMLButtonElement).disabled = props.disabled;
    if (props.checked !== undefined) (el as HTMLInputElement).checked = props.checked;
    if (props.selected !== undefined) (el as HTMLOptionElement).selected = props.selected;
    if (props.dataset) Object.assign(el.dataset, props.dataset);
    if (props.style) Object.assign(el.style, props.style);
    if (props.on) {
      for (const [name, handler] of Object.entries(props.on)) {
        if (handler) el.addEventListener(name, handler as EventListener);
      }
    }
  }
  for (const child of children) append(el, child);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Readonly<Record<string, string | number>>,
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  for (const child of children) append(el, child);
  return el;
}

export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  for (const child of children) append(parent, child);
}
