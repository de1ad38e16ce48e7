/**
 * The API validates with zod and sends JSON itself, so fastify's default schema compilers (ajv,
 * fast-json-stringify) are never loaded. Checked in a Node process of its own: a test worker's
 * module cache holds what other files loaded.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));

const SCRIPT = `
import { createRequire } from "node:module";
import { buildApi } from ${JSON.stringify(`${SRC}api/app.ts`)};
import { tokenAuthenticator } from ${JSON.stringify(`${SRC}api/caller.ts`)};
import { createLogger } from ${JSON.stringify(`${SRC}log.ts`)};
const app = buildApi({ notifyMaxDelaySeconds: 60 }, {
  log: createLogger("silent"),
  authenticate: tokenAuthenticator([{ name: "default", scope: "operator", token: "a-token-of-sixteen-chars" }]),
  uiDir: "/nonexistent",
});
const headers = { authorization: "Bearer a-token-of-sixteen-chars" };
const refused = await app.inject({ method: "POST", url: "/v1/sessions", headers, payload: { agentId: 7 } });
// fastify's error serializer needs fast-json-stringify's small runtime (lib/serializer.js), not its compiler.
const loaded = Object.keys(createRequire(import.meta.url).cache).filter((path) =>
  /[\\\\/]node_modules[\\\\/](ajv[\\\\/]|fast-json-stringify[\\\\/]index\\.js|@fastify[\\\\/](ajv-compiler|fast-json-stringify-compiler)[\\\\/])/.test(path),
);
console.log(JSON.stringify({ status: refused.statusCode, body: refused.json(), loaded }));
await app.close();
`;

describe("the API's schema compilers", () => {
  it("validates a request with its zod schema without loading ajv or fast-json-stringify", () => {
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", SCRIPT], { encoding: "utf8" });
    expect(child.status, child.stderr).toBe(0);
    const result = JSON.parse(child.stdout.trim().split("\n").pop()!) as {
      status: number;
      body: { error: { code: string; message: string } };
      loaded: string[];
    };
    expect(result.status).toBe(400);
    expect(result.body.error.code).toBe("BAD_REQUEST");
    expect(result.body.error.message).toMatch(/agentId/);
    expect(result.loaded).toEqual([]);
  });
});
