/**
 * Transactions on postgres.js that survive losing their connection.
 *
 * postgres.js (3.4.9, porsager/postgres#1154; the guards of #1168 and #1176 are not released)
 * ends the process when a statement is given to a connection whose socket has closed: the
 * statement's bytes are written from a `setImmediate` on a socket it has already set to null, and
 * the TypeError thrown there escapes every `try`. Its own transactions do exactly that when the
 * server goes away under them (a primary stopped or failed over, a backend terminated): the
 * callback fails with CONNECTION_CLOSED and `begin` sends its `rollback` on the dead connection; a
 * callback that was between statements sends its next one there, or `begin` its `commit`.
 *
 * The wrapper below never lets a statement reach a transaction's connection once it is lost: the
 * transaction's statements fail at once, and the callback's outcome is withheld, so postgres.js
 * sends neither `rollback` nor `commit`. `begin` itself still rejects, through the close of its
 * connection (its own race on `onclose`), and the pool reconnects that connection by itself. The
 * server rolled the transaction back when the connection died; nothing was committed.
 */
import type { Sql, TransactionSql } from "postgres";

// postgres.js's own codes for a connection that closed, was ended or never came up.
const LOSS_CODES = new Set(["CONNECTION_CLOSED", "CONNECTION_DESTROYED", "CONNECTION_ENDED", "CONNECT_TIMEOUT"]);

/**
 * Whether `err` says the statement's connection is gone (or going): postgres.js's connection
 * codes, a socket's own error (ECONNRESET, EPIPE: it names its system call), or a FATAL answer.
 * A statement's ordinary failure (a server ERROR, a parameter that would not serialize) is not.
 */
export function isConnectionLoss(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const { code, syscall, severity } = err as Error & { code?: unknown; syscall?: unknown; severity?: unknown };
  if (severity === "FATAL" || severity === "PANIC") return true;
  if (typeof severity === "string") return false;
  return (typeof code === "string" && LOSS_CODES.has(code)) || typeof syscall === "string";
}

/** The lost state of one transaction (and its savepoints), shared by its statements. */
interface Transaction {
  lost: boolean;
}

const NEVER = new Promise<never>(() => {});

/** `work`'s outcome, or none at all once the transaction is lost (see the module's comment). */
async function withheldOnLoss<T>(tx: Transaction, work: () => Promise<T>): Promise<T> {
  let result: T;
  try {
    result = await work();
  } catch (err) {
    if (tx.lost) return NEVER;
    throw err;
  }
  return tx.lost ? NEVER : result;
}

/** A statement refused without reaching postgres.js, shaped like its queries for drizzle. */
function refused(): unknown {
  const err = Object.assign(new Error("the connection of this transaction was lost"), { code: "CONNECTION_CLOSED" });
  const promise = Promise.reject(err);
  const self = Object.assign(promise, {
    values: () => self,
    raw: () => self,
    simple: () => self,
    execute: () => self,
    describe: () => self,
  });
  return self;
}

type Method = (...args: unknown[]) => unknown;

/** The client a transaction's callback is given: `inner`, with every statement watched for the loss. */
function transactionClient(inner: TransactionSql, tx: Transaction): TransactionSql {
  const unsafe = (...args: unknown[]) => {
    if (tx.lost) return refused();
    const query = (inner.unsafe as Method)(...args) as Promise<unknown>;
    // Promise's own `then`: postgres.js's would start the statement before drizzle has shaped it.
    // Registered first, this sees the loss before the callback's code does.
    void Promise.prototype.then.call(query, undefined, (err: unknown) => {
      if (isConnectionLoss(err)) tx.lost = true;
    });
    return query;
  };
  const savepoint = (...args: unknown[]) => {
    if (tx.lost) return refused();
    const fn = args.pop() as (sql: TransactionSql) => Promise<unknown>;
    return (inner.savepoint as Method)(...args, (sp: TransactionSql) =>
      withheldOnLoss(tx, () => fn(transactionClient(sp, tx))),
    );
  };
  const wrapped = new Map<PropertyKey, unknown>([
    ["unsafe", unsafe],
    ["savepoint", savepoint],
  ]);
  return new Proxy(inner, {
    get: (target, property, receiver) => wrapped.get(property) ?? Reflect.get(target, property, receiver),
  });
}

/**
 * `client`, whose `begin` runs its callback on a transaction client that stops at the loss of
 * its connection. Only `begin`, `unsafe` and `savepoint` are guarded: the statements drizzle sends.
 */
export function lossSafeClient<T extends Sql>(client: T): T {
  const begin = (...args: unknown[]) => {
    const fn = args.pop() as (sql: TransactionSql) => Promise<unknown>;
    const tx: Transaction = { lost: false };
    const result = (client.begin as Method).call(client, ...args, (inner: TransactionSql) =>
      withheldOnLoss(tx, () => fn(transactionClient(inner, tx))),
    ) as Promise<unknown>;
    // Settled while the callback still runs only when the connection closed; once settled in any
    // way, the transaction's connection is no longer its own.
    const over = () => {
      tx.lost = true;
    };
    void result.then(over, over);
    return result;
  };
  return new Proxy(client, {
    get: (target, property, receiver) => (property === "begin" ? begin : Reflect.get(target, property, receiver)),
  });
}
