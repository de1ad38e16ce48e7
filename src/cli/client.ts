import { http, https } from "../node-http.ts";

/** Where the CLI finds the daemon: its Unix socket, or a URL (then with a bearer token). */
export type Target = { socketPath: string } | { url: string; token: string | null };

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export class UnreachableError extends Error {}

/** A request's query: a list is sent as its key repeated. */
type Query = Record<string, string | number | readonly string[] | undefined>;

export interface ApiClient {
  get<T>(path: string, query?: Query): Promise<T>;
  post<T>(path: string, body: unknown): Promise<T>;
  put<T>(path: string, body: unknown): Promise<T>;
  patch<T>(path: string, body: unknown): Promise<T>;
  /** The answer's body, for a route that answers one (most answer 204). */
  delete<T = void>(path: string): Promise<T>;
}

/** One HTTP request to the daemon; a 4xx/5xx becomes an ApiError, a refused connection an UnreachableError. */
function request<T>(target: Target, method: string, path: string, body?: unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { accept: "application/json" };
    if (payload !== undefined) headers["content-type"] = "application/json";
    let options;
    let send = http.request;
    if ("socketPath" in target) {
      options = { socketPath: target.socketPath, path, method, headers };
    } else {
      const url = new URL(path, target.url);
      if (target.token) headers.authorization = `Bearer ${target.token}`;
      if (url.protocol === "https:") send = https.request as typeof http.request;
      options = { hostname: url.hostname, port: url.port, path: url.pathname + url.search, method, headers };
    }
    const req = send(options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const status = res.statusCode ?? 0;
        let parsed: unknown = undefined;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          /* not JSON */
        }
        if (status >= 400) {
          const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
          reject(new ApiError(status, error?.code ?? "HTTP_" + status, error?.message ?? (text || `HTTP ${status}`)));
          return;
        }
        resolve(parsed as T);
      });
    });
    req.on("error", (err: NodeJS.ErrnoException) => {
      const where = "socketPath" in target ? target.socketPath : target.url;
      if (["ENOENT", "ECONNREFUSED", "EACCES", "ENOTFOUND", "ECONNRESET"].includes(err.code ?? "")) {
        reject(new UnreachableError(`cannot reach missiond at ${where} (${err.code}); is \`missiond serve\` running?`));
      } else reject(err);
    });
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** `target` may be found lazily (socket discovery): the first request resolves it, once. */
export function apiClient(target: Target | (() => Promise<Target>)): ApiClient {
  let resolved: Promise<Target> | null = null;
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> =>
    request<T>(
      await (resolved ??= typeof target === "function" ? target() : Promise.resolve(target)),
      method,
      path,
      body,
    );

  // A list is the key repeated (`name=a&name=b`), as the routes' array parameters read it.
  const withQuery = (path: string, query?: Query) => {
    const entries = Object.entries(query ?? {}).flatMap(([k, v]): [string, string][] =>
      v === undefined ? [] : Array.isArray(v) ? v.map((item): [string, string] => [k, item]) : [[k, String(v)]],
    );
    return entries.length ? `${path}?${new URLSearchParams(entries)}` : path;
  };

  return {
    get: (path, query) => call("GET", withQuery(path, query)),
    post: (path, body) => call("POST", path, body),
    put: (path, body) => call("PUT", path, body),
    patch: (path, body) => call("PATCH", path, body),
    delete: (path) => call("DELETE", path),
  };
}
