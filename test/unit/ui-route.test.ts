import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildApi, type ApiServices } from "../../src/api/app.ts";
import { tokenAuthenticator } from "../../src/api/caller.ts";
import { createLogger } from "../../src/log.ts";
import { tempDir } from "../helpers/tmp.ts";

// The routes under test touch no service.
const api = (uiDir: string) =>
  buildApi({ notifyMaxDelaySeconds: 60 } as unknown as ApiServices, {
    log: createLogger("silent"),
    authenticate: tokenAuthenticator([{ name: "default", scope: "operator", token: "a-token-of-sixteen-chars" }]),
    uiDir,
  });

describe("the dashboard's route", () => {
  it("says how to build the dashboard when it was never built, without asking for the token", async () => {
    const app = api(tempDir("no-ui"));
    for (const url of ["/ui", "/ui/", "/ui/app.js"]) {
      const answer = await app.inject({ method: "GET", url });
      expect(answer.statusCode, url).toBe(503);
      expect(answer.body, url).toMatch(/The dashboard is not built .* Run `npm run build:ui`/);
    }
    await app.close();
  });

  it("serves the built files without the token, with a strict content security policy, and nothing else without it", async () => {
    const dir = tempDir("ui");
    writeFileSync(join(dir, "index.html"), "<!doctype html><title>missiond</title>");
    writeFileSync(join(dir, ".secret"), "dotfiles are not served");
    const app = api(dir);
    const page = await app.inject({ method: "GET", url: "/ui/" });
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-security-policy"]).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(page.headers["cache-control"]).toBe("no-cache");
    expect((await app.inject({ method: "HEAD", url: "/ui/" })).statusCode).toBe(200);
    expect((await app.inject({ method: "GET", url: "/ui" })).headers.location).toBe("/ui/");
    expect((await app.inject({ method: "GET", url: "/ui/.secret" })).statusCode).toBe(404);
    // Only GET and HEAD of /ui are open; the API and other methods still want the token.
    expect((await app.inject({ method: "POST", url: "/ui/" })).statusCode).toBe(401);
    expect((await app.inject({ method: "GET", url: "/uiv1/cron-jobs" })).statusCode).toBe(401);
    expect((await app.inject({ method: "GET", url: "/v1/plugins" })).statusCode).toBe(401);
    await app.close();
  });
});
