// A few lines instead of a framework: elements are built with h() and text is always set as text
// (never parsed as HTML), so a job name, a prompt or a plugin's reason cannot inject markup.

export type Child = Node | string | number | null | undefined | false | Child[];

type Handler = (event: Event) => void;

export interface Attrs {
  class?: string | undefined;
  style?: Partial<Record<"left" | "width" | "height" | "bottom" | "top" | "background", string>>;
  [name: `on${string}`]: Handler | undefined;
  [name: string]: string | number | boolean | Handler | Attrs["style"] | null | undefined;
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "style") Object.assign(el.style, value);
    else if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value as Handler);
    else if (name === "class") el.className = String(value);
    else if (name in el && typeof value !== "string") (el as unknown as Record<string, unknown>)[name] = value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces an element's content. */
export function fill(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

export const plural = (n: number, one: string, many = `${one}s`) =>
  `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

/** Calls `fn` once input has paused for `ms`. */
export function debounce<A extends unknown[]>(fn: (...args: A) => void, ms: number): (...args: A) => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
