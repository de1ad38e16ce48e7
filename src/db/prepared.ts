import type { Sql } from "postgres";

/**
 * Prepared statements for drizzle on postgres.js. drizzle sends every statement unprepared unless
 * the query is given a name, and postgres.js sends an unprepared statement that has parameters in
 * two round trips: a Parse and Describe to learn the parameters' types, then, once the server has
 * answered, the Bind and Execute. A statement prepared on its connection takes one round trip from
 * its second use: a claim's transaction (a read, an insert, an update) waits on three fewer.
 *
 * postgres.js keeps every statement it prepared for the life of the connection, on the server too,
 * so only texts seen again are prepared (one-off statements such as an operator's query never
 * are), and at most `limit` distinct texts in all. The batched statements send a batch as one
 * parameter, one text whatever its size, so the texts of a running daemon are a few dozen.
 * `?prepare=false` in the database URL (for a pooler that cannot hold prepared statements, such as
 * PgBouncer before 1.21 in transaction mode) turns them off: postgres.js then ignores the request.
 */
export class StatementChoice {
  private readonly seenOnce = new Set<string>();
  private readonly chosen = new Set<string>();

  private readonly limit: number;
  private readonly longest: number;

  constructor(limit = 256, longest = 16_384) {
    this.limit = limit;
    this.longest = longest;
  }

  /** Whether to prepare this text: it was seen before and there is room, or it already is. */
  prepare(text: string): boolean {
    if (this.chosen.has(text)) return true;
    if (this.chosen.size >= this.limit || text.length > this.longest) return false;
    if (!this.seenOnce.delete(text)) {
      // Bounded the same way: texts seen once are forgotten in bulk rather than kept forever.
      if (this.seenOnce.size >= this.limit * 4) this.seenOnce.clear();
      this.seenOnce.add(text);
      return false;
    }
    this.chosen.add(text);
    return true;
  }

  get size(): number {
    return this.chosen.size;
  }
}

type Unsafe = Sql["unsafe"];
type UnsafeOptions = NonNullable<Parameters<Unsafe>[2]>;

/**
 * The client drizzle is given: the same postgres.js client, whose `unsafe` (every drizzle
 * statement) asks for a prepared statement when `choice` says so, inside transactions and
 * savepoints too (drizzle runs those on the client postgres.js hands to their callbacks).
 */
export function preparingClient<T extends Sql>(client: T, choice: StatementChoice): T {
  // Each wrapper is made once per client, not on every statement's property read.
  const unsafe = (text: string, parameters?: unknown[], options?: UnsafeOptions) =>
    Array.isArray(parameters) && parameters.length > 0 && choice.prepare(text)
      ? client.unsafe(text, parameters as never, { ...options, prepare: true })
      : client.unsafe(text, parameters as never, options);
  const withPreparingCallbacks =
    (method: (...args: unknown[]) => unknown) =>
    (...args: unknown[]) =>
      method(
        ...args.map((arg) =>
          typeof arg === "function"
            ? (inner: Sql) => (arg as (s: Sql) => unknown)(preparingClient(inner, choice))
            : arg,
        ),
      );
  const wrapped = new Map<PropertyKey, unknown>([["unsafe", unsafe]]);
  // The pool's client has `begin`, a transaction's client has `savepoint`.
  for (const name of ["begin", "savepoint"]) {
    const method: unknown = Reflect.get(client, name);
    if (typeof method === "function")
      wrapped.set(name, withPreparingCallbacks((method as (...args: unknown[]) => unknown).bind(client)));
  }
  return new Proxy(client, {
    get: (target, property, receiver) => wrapped.get(property) ?? Reflect.get(target, property, receiver),
  });
}
