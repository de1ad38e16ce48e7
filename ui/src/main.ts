import type { CallerScope } from "../../src/api/scopes.ts";
import { api, AuthRequired, token, type Whoami } from "./api.ts";
import { fill, h } from "./dom.ts";
import { clock } from "./time.ts";
import { jobsView } from "./views/jobs.ts";
import { ledgerView } from "./views/ledger.ts";
import { nowView } from "./views/now.ts";
import { pluginsView } from "./views/plugins.ts";
import { sessionsView } from "./views/sessions.ts";
import { jobFormView } from "./views/job-form/view.ts";
import { jobView } from "./views/job/view.ts";
import { runView } from "./views/run/view.ts";
import { instancesView } from "./views/instances/view.ts";
import { agentsView } from "./views/agents/view.ts";

/** Every view: built once per visit, then refreshed from the API every few seconds while shown. */
export interface View {
  mount(root: HTMLElement, params: URLSearchParams): void;
  refresh(): Promise<void>;
}

export interface Ctx {
  /** Goes to a view (a new history entry). */
  go(view: string, params?: Record<string, string | undefined>): void;
  /** Records the view's filters in the address without rebuilding it (reload and back keep them). */
  remember(params: Record<string, string | undefined>): void;
  /** Reports an error from an action or a refresh (a 401 asks for the token). */
  fail(err: unknown): void;
}

const POLL_MS = 3_000;

// Each view is shown only to a caller whose scope can read everything it calls (GET /v1/caller says
// which): an agent runtime's token sees its sessions, never the jobs, runs or plugins and their actions.
// A view with `under` is a page of one thing, reached by links: no tab of its own, its tab's lit.
const VIEWS: Record<string, { title: string; scope: CallerScope; make: (ctx: Ctx) => View; under?: string }> = {
  now: { title: "Now", scope: "operator", make: nowView },
  jobs: { title: "Jobs", scope: "operator", make: jobsView },
  ledger: { title: "Ledger", scope: "operator", make: ledgerView },
  plugins: { title: "Plugins", scope: "operator", make: pluginsView },
  sessions: { title: "Sessions", scope: "agent", make: sessionsView },
  agents: { title: "Agents", scope: "operator", make: agentsView },
  instances: { title: "Instances", scope: "operator", make: instancesView },
  job: { title: "Job", scope: "operator", make: jobView, under: "jobs" },
  "job-new": { title: "New job", scope: "operator", make: jobFormView, under: "jobs" },
  "job-edit": { title: "Edit job", scope: "operator", make: jobFormView, under: "jobs" },
  run: { title: "Run", scope: "operator", make: runView, under: "ledger" },
};
const HOME: Record<CallerScope, string> = { operator: "now", agent: "sessions" };

let me: Whoami | null = null;
const mayView = (name: string) =>
  me !== null && name in VIEWS && (me.scope === "operator" || VIEWS[name]!.scope === me.scope);

const app = document.getElementById("app")!;
let current: { name: string; view: View } | null = null;
let refreshing = false;
let loggedOut = false;
const live = h("span", { class: "live", "data-testid": "live" }, "connecting…");

const query = (params: Record<string, string | undefined>) => {
  const search = new URLSearchParams(
    Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ""),
  );
  const text = search.toString();
  return text ? `?${text}` : "";
};

function parseHash(): { name: string; params: URLSearchParams } {
  const [path = "", search = ""] = location.hash.replace(/^#\/?/, "").split("?");
  return { name: mayView(path) ? path : HOME[me?.scope ?? "operator"], params: new URLSearchParams(search) };
}

const ctx: Ctx = {
  go(view, params = {}) {
    location.hash = `#/${view}${query(params)}`;
  },
  remember(params) {
    history.replaceState(null, "", `#/${current?.name ?? "now"}${query(params)}`);
  },
  fail(err) {
    if (err instanceof AuthRequired) return showLogin(token.get() ? "That token was refused." : null);
    live.className = "live down";
    live.textContent = `cannot read the API: ${(err as Error).message}`;
  },
};

function shell(): HTMLElement {
  const { name } = parseHash();
  const nav = h(
    "nav",
    { class: "tabs" },
    ...Object.entries(VIEWS)
      .filter(([key, v]) => mayView(key) && !v.under)
      .map(([key, v]) =>
        h(
          "a",
          { href: `#/${key}`, class: key === (VIEWS[name]?.under ?? name) ? "active" : "", "data-view": key },
          v.title,
        ),
      ),
  );
  const signOut = token.get()
    ? h(
        "button",
        {
          type: "button",
          class: "link",
          onclick: () => {
            token.clear();
            me = null;
            loggedOut = true;
            showLogin(null);
          },
        },
        "Sign out",
      )
    : null;
  const main = h("main", { id: "view" });
  fill(
    app,
    h(
      "header",
      { class: "top" },
      h("a", { class: "brand", href: `#/${HOME[me?.scope ?? "operator"]}` }, "missiond"),
      nav,
      h(
        "div",
        { class: "right" },
        live,
        me ? h("span", { class: "muted small", "data-testid": "whoami" }, `${me.actor} · ${me.scope}`) : null,
        signOut,
      ),
    ),
    main,
  );
  return main;
}

/**
 * The caller, or null when the listener wants a token this tab does not have (GET /v1/caller, a
 * public route: asking is not a 401, so signing in leaves no errors in the browser's console).
 */
const whoAmI = () => api.get<{ caller: Whoami | null }>("/v1/caller").then((answer) => answer.caller);

function route(): void {
  // Who the page speaks as decides which views exist; asked once per sign-in.
  if (!me) {
    whoAmI()
      .then((who) => {
        if (!who) return showLogin(token.get() ? "That token was refused." : null);
        me = who;
        route();
      })
      .catch((err: unknown) => {
        // Without an answer there are no views to offer; the header still says what went wrong.
        if (!(err instanceof AuthRequired)) shell();
        ctx.fail(err);
      });
    return;
  }
  const { name, params } = parseHash();
  const main = shell();
  const view = VIEWS[name]!.make(ctx);
  current = { name, view };
  document.title = `${VIEWS[name]!.title} · missiond`;
  view.mount(main, params);
  void tick(true);
}

async function tick(force = false): Promise<void> {
  if (!current || (refreshing && !force) || loggedOut) return;
  if (document.hidden && !force) {
    live.className = "live paused";
    live.textContent = "paused while the tab is hidden";
    return;
  }
  const view = current.view;
  refreshing = true;
  try {
    await view.refresh();
    if (view !== current?.view) return;
    live.className = "live ok";
    live.textContent = `live · updated ${clock(Date.now())}`;
  } catch (err) {
    ctx.fail(err);
  } finally {
    refreshing = false;
  }
}

function showLogin(problem: string | null): void {
  current = null;
  const input = h("input", {
    type: "password",
    name: "token",
    autocomplete: "current-password",
    required: true,
    placeholder: "api_token",
    "aria-label": "API token",
  });
  const message = h("p", { class: "problem", role: "alert" }, problem ?? "");
  const signInWith = async () => {
    token.set(input.value.trim());
    try {
      me = await whoAmI();
      if (!me) throw new AuthRequired("refused");
      loggedOut = false;
      route();
    } catch (err) {
      token.clear();
      me = null;
      message.textContent =
        err instanceof AuthRequired ? "That token was refused." : `Cannot reach the daemon: ${(err as Error).message}`;
    }
  };
  const form = h(
    "form",
    {
      class: "login",
      // The DOM does not await a handler: the sign-in runs detached and reports its own errors.
      onsubmit: (event: Event) => {
        event.preventDefault();
        void signInWith();
      },
    },
    h("h1", null, "missiond"),
    h(
      "p",
      null,
      "This listener needs one of the daemon's API tokens (",
      h("code", null, "[[api.tokens]]"),
      " or ",
      h("code", null, "api_token"),
      " in the configuration, or ",
      h("code", null, "MISSIOND_API_TOKEN"),
      "). An agent runtime's token shows its sessions only.",
    ),
    h("label", null, "API token", input),
    h("button", { type: "submit", class: "primary" }, "Sign in"),
    message,
    h(
      "p",
      { class: "hint" },
      "The token stays in this tab (sessionStorage) and is sent as an Authorization header with each request; closing the tab forgets it.",
    ),
  );
  fill(app, form);
  input.focus();
}

window.addEventListener("hashchange", () => {
  if (!loggedOut) route();
});
document.addEventListener("visibilitychange", () => void tick(true));
setInterval(() => void tick(), POLL_MS);
route();
