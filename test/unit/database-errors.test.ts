import { describe, expect, it } from "vitest";
import Fastify from "fastify";
import { errorHandler } from "../../src/api/errors.ts";
import { databaseUnavailable } from "../../src/db/errors.ts";
import { createLogger } from "../../src/log.ts";

/** What drizzle throws: its own error, with the driver's as `cause`. */
const wrapped = (cause: unknown) =>
  Object.assign(new Error("Failed query: insert into t values ($1)\nparams: 1"), { cause });
const sqlstate = (code: string, message: string) => Object.assign(new Error(message), { code, severity: "ERROR" });

describe("database-availability errors", () => {
  it.each([
    [
      "25006",
      "cannot execute INSERT in a read-only transaction",
      "the database is read-only: cannot execute INSERT in a read-only transaction",
    ],
    [
      "53100",
      'could not extend file "base/16384/16385": No space left on device',
      'the database is out of disk space: could not extend file "base/16384/16385": No space left on device',
    ],
    [
      "53300",
      "sorry, too many clients already",
      "the database is out of resources (SQLSTATE 53300): sorry, too many clients already",
    ],
    [
      "57P01",
      "terminating connection due to administrator command",
      "the database is shutting down (SQLSTATE 57P01): terminating connection due to administrator command",
    ],
    [
      "57P03",
      "the database system is starting up",
      "the database is starting up or not accepting connections yet (SQLSTATE 57P03): the database system is starting up",
    ],
    ["08006", "connection failure", "the connection to the database failed (SQLSTATE 08006): connection failure"],
    [
      "ECONNREFUSED",
      "connect ECONNREFUSED 127.0.0.1:5432",
      "the database cannot be reached (ECONNREFUSED): connect ECONNREFUSED 127.0.0.1:5432",
    ],
    [
      "CONNECTION_CLOSED",
      "write CONNECTION_CLOSED 127.0.0.1:5432",
      "the database cannot be reached (CONNECTION_CLOSED): write CONNECTION_CLOSED 127.0.0.1:5432",
    ],
  ])("names %s, found in the cause of drizzle's wrapper", (code, message, expected) => {
    expect(databaseUnavailable(wrapped(sqlstate(code, message)))).toBe(expected);
    expect(databaseUnavailable(sqlstate(code, message))).toBe(expected);
  });

  it("leaves query bugs and other errors alone", () => {
    expect(databaseUnavailable(wrapped(sqlstate("42P01", 'relation "nosuch" does not exist')))).toBeNull();
    expect(
      databaseUnavailable(wrapped(sqlstate("23505", "duplicate key value violates unique constraint"))),
    ).toBeNull();
    expect(databaseUnavailable(Object.assign(new Error("no such file"), { code: "ENOENT" }))).toBeNull();
    expect(databaseUnavailable(new Error("plain"))).toBeNull();
    expect(databaseUnavailable("a string")).toBeNull();
    expect(databaseUnavailable(null)).toBeNull();
  });

  it("answers 503 { error: { code: DATABASE, message } } through the API's error handler, and 500 for other failures", async () => {
    const app = Fastify({ loggerInstance: createLogger("silent") });
    app.setErrorHandler(errorHandler);
    app.get("/read-only", async () => {
      throw wrapped(sqlstate("25006", "cannot execute INSERT in a read-only transaction"));
    });
    app.get("/bug", async () => {
      throw wrapped(sqlstate("42703", 'column "nope" does not exist'));
    });
    const readOnly = await app.inject({ url: "/read-only" });
    expect(readOnly.statusCode).toBe(503);
    expect(readOnly.json()).toEqual({
      error: {
        code: "DATABASE",
        message: "the database is read-only: cannot execute INSERT in a read-only transaction",
      },
    });
    const bug = await app.inject({ url: "/bug" });
    expect(bug.statusCode).toBe(500);
    expect(bug.json()).toEqual({ error: { code: "INTERNAL", message: "internal error; see the daemon's log" } });
    await app.close();
  });
});
