import { existsSync } from "node:fs";
import { join } from "node:path";
import { packagePath } from "../paths.ts";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyReply } from "fastify";

/** Where `npm run build:ui` (run by `npm install`) writes the dashboard. */
export const UI_DIST = packagePath("ui", "dist");

/**
 * The dashboard's own files are not secret: they hold no data, and every API call they make
 * presents the bearer token the operator typed in (kept in the tab's sessionStorage). So a TCP
 * listener serves them without the token, which is what lets the page load and ask for it.
 */
export const isUiAsset = (method: string, url: string): boolean =>
  (method === "GET" || method === "HEAD") && (url === "/ui" || url.startsWith("/ui/") || url.startsWith("/ui?"));

// The page loads nothing but its own files and talks to nothing but this origin; no inline script
// or style, so an injected string cannot run (the token sits in sessionStorage).
const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  // Rebuilt in place on install: revalidate (ETag) rather than cache a stale bundle.
  "cache-control": "no-cache",
};

const secure = (reply: FastifyReply) => {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) void reply.header(name, value);
};

/** GET /ui/: the dashboard, from the built files in `dir`; a plain explanation if they were never built. */
export function uiRoutes(app: FastifyInstance, dir: string): void {
  if (!existsSync(join(dir, "index.html"))) {
    const notBuilt = async (_request: unknown, reply: FastifyReply) => {
      secure(reply);
      return reply
        .status(503)
        .type("text/plain; charset=utf-8")
        .send(
          `The dashboard is not built (no ${join(dir, "index.html")}). Run \`npm run build:ui\` (npm install does) and reload.\n`,
        );
    };
    app.get("/ui", notBuilt);
    app.get("/ui/*", notBuilt);
    return;
  }
  void app.register(fastifyStatic, {
    root: dir,
    // Given without its slash, so that /ui itself redirects to /ui/ (where relative URLs resolve).
    prefix: "/ui",
    redirect: true,
    index: "index.html",
    dotfiles: "ignore",
    cacheControl: false,
    setHeaders: (reply) => secure(reply),
  });
}
