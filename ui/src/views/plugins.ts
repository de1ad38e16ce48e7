import { DECISION_OUTCOMES } from "../../../src/db/schema/enums.ts";
import { HOOK_NAMES, HOOKS } from "../../../src/plugins/hooks.ts";
import { api, type Decision, type Decisions, type Plugin } from "../api.ts";
import { fill, h, plural } from "../dom.ts";
import type { Ctx, View } from "../main.ts";
import { dateTime, relative } from "../time.ts";
import { badge, empty, facts, pager, panel } from "../widgets.ts";

export const DECISIONS_PAGE = 50;
/** Decisions per plugin that its outcome counts and durations summarise. */
export const STATS_WINDOW = 100;

/** The hook filter's choices: the daemon's own hooks first, then those agent runtimes run. */
const HOOK_CHOICES = [
  ...HOOK_NAMES.filter((hook) => HOOKS[hook].firedByDaemon),
  ...HOOK_NAMES.filter((hook) => !HOOKS[hook].firedByDaemon),
];

const quantile = (sorted: number[], q: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : 0;

export const outcomeChip = (outcome: string) => h("span", { class: `chip outcome-${outcome}` }, outcome);

function stateBadges(p: Plugin) {
  return [
    badge(
      p.state === "suspended"
        ? "suspended by the circuit breaker"
        : p.state === "disabled"
          ? `disabled: missiond plugins enable ${p.name}`
          : p.state,
      `state-${p.state}`,
    ),
    p.needsApproval
      ? badge("needs approval", "needs-approval")
      : p.changed
        ? badge("changed since approved", "changed")
        : null,
    p.shadow ? badge("shadow: decisions logged, not enforced", "shadow") : null,
    p.required ? badge("required gate (fails closed)", "required") : null,
  ];
}

function card(p: Plugin, stats: Decisions | null, onLog: () => void) {
  const durations = (stats?.decisions ?? []).map((d) => d.durationMs).sort((a, b) => a - b);
  const seen = stats?.decisions.length ?? 0;
  return h(
    "article",
    { class: `plugin state-${p.state}`, "data-plugin": p.name },
    h(
      "header",
      null,
      h("h3", null, p.name),
      p.version ? h("span", { class: "muted small" }, ` v${p.version}`) : null,
      h("div", { class: "badges" }, ...stateBadges(p)),
    ),
    facts([
      [
        "Hooks",
        p.hooks.length
          ? h("span", { class: "hooks" }, ...p.hooks.map((hook) => h("code", null, hook)))
          : h("span", { class: "muted" }, "none"),
      ],
      ["Kind", p.kind === "command" ? "command hooks" : p.kind === "isolate" ? "isolate" : null],
      ["Order", p.order === null ? null : String(p.order)],
      ["Permissions", p.permissions.join(", ")],
      [
        "Needs approval",
        p.needsApproval
          ? `${p.requested?.added.length ? `asks for ${p.requested.added.join(", ")}` : "changed since approved"}: missiond plugins approve ${p.name}`
          : null,
      ],
      [
        "Approved",
        p.approval
          ? `${p.approval.source} by ${p.approval.actor}, ${dateTime(p.approval.at)} (revision ${p.approval.revision})`
          : null,
      ],
      ["Problem", p.error ? h("span", { class: "problem" }, p.error) : null],
      ["Suspended until", p.suspendedUntil ? `${dateTime(p.suspendedUntil)} (${relative(p.suspendedUntil)})` : null],
      ["Failures in a row", p.consecutiveFailures ? String(p.consecutiveFailures) : null],
      ["Worker restarts", p.restarts ? String(p.restarts) : null],
    ]),
    h(
      "div",
      { class: "stats", "data-testid": `stats-${p.name}` },
      h(
        "div",
        { class: "muted small" },
        seen === STATS_WINDOW
          ? `last ${seen} decisions`
          : seen
            ? `${plural(seen, "decision")} so far`
            : "no decisions yet",
      ),
      seen
        ? h(
            "div",
            { class: "counts" },
            ...DECISION_OUTCOMES.filter((o) => stats!.counts[o]).map((o) =>
              h("span", { class: "count-of", "data-outcome": o }, outcomeChip(o), ` ${stats!.counts[o]}`),
            ),
          )
        : null,
      seen
        ? h(
            "div",
            { class: "durations" },
            `duration p50 ${quantile(durations, 0.5)} ms · p95 ${quantile(durations, 0.95)} ms · max ${durations.at(-1)} ms`,
          )
        : null,
      seen ? h("div", { class: "muted small" }, `latest ${relative(stats!.decisions[0]!.at)}`) : null,
    ),
    h("button", { type: "button", class: "link", onclick: onLog }, "decision log →"),
  );
}

/** One decision of the log. */
function decisionRow(d: Decision) {
  return h(
    "tr",
    { "data-decision-id": d.id },
    h("td", null, dateTime(d.at)),
    h("td", null, d.plugin),
    h("td", null, h("code", null, d.hook)),
    h("td", { class: "muted" }, d.subjectId ?? "—"),
    h("td", null, outcomeChip(d.outcome), d.shadow ? badge("shadow", "shadow") : null),
    h("td", { class: "num" }, `${d.durationMs} ms`),
    h("td", { class: "why" }, d.reason ?? (d.fields?.length ? `changed ${d.fields.join(", ")}` : "")),
  );
}

const LOG_COLUMNS = ["At", "Plugin", "Hook", "Subject", "Outcome", "Duration", "Reason / fields"];

/** A page of the decision log, newest first, or a note that none match. */
const decisionsTable = (decisions: Decision[]) =>
  decisions.length
    ? h(
        "table",
        { class: "decisions", "data-testid": "decisions-table" },
        h("thead", null, h("tr", null, ...LOG_COLUMNS.map((t) => h("th", null, t)))),
        h("tbody", null, ...decisions.map(decisionRow)),
      )
    : empty("No decisions match.");

/** Loaded plugins: hooks, state, outcome counts and durations; the decision log, filtered and paged. */
export function pluginsView(ctx: Ctx): View {
  let plugin: string | undefined;
  let hook: string | undefined;
  let cursors: (string | undefined)[] = [undefined];
  let seq = 0;
  const cards = h("div", { class: "cards", "data-testid": "plugin-cards" });
  const log = h("div", { class: "table-wrap" });
  const logPager = h("div");
  const pluginSelect = h(
    "select",
    { "aria-label": "Plugin", name: "plugin" },
    h("option", { value: "" }, "All plugins"),
  );
  const hookSelect = h(
    "select",
    { "aria-label": "Hook", name: "hook" },
    h("option", { value: "" }, "All hooks"),
    ...HOOK_CHOICES.map((x) => h("option", { value: x }, x)),
  );

  function changed() {
    cursors = [undefined];
    ctx.remember({ plugin, hook });
    void refresh().catch(ctx.fail);
  }

  async function refresh() {
    const mine = ++seq;
    const { plugins } = await api.get<{ plugins: Plugin[] }>("/v1/plugins");
    // The chain's order: manifest order, then name (plugins that failed to load last).
    plugins.sort((a, b) => (a.order ?? Infinity) - (b.order ?? Infinity) || a.name.localeCompare(b.name));
    const [stats, page] = await Promise.all([
      Promise.all(
        plugins.map((p) =>
          p.state === "failed"
            ? Promise.resolve(null)
            : api.get<Decisions>("/v1/hook-decisions", { plugin: p.name, limit: STATS_WINDOW }),
        ),
      ),
      api.get<Decisions>("/v1/hook-decisions", { plugin, hook, limit: DECISIONS_PAGE, before: cursors.at(-1) }),
    ]);
    if (mine !== seq) return;
    const names = plugins.map((p) => p.name);
    if (pluginSelect.options.length !== names.length + 1) {
      fill(pluginSelect, h("option", { value: "" }, "All plugins"), ...names.map((n) => h("option", { value: n }, n)));
      pluginSelect.value = plugin ?? "";
    }
    fill(
      cards,
      plugins.length
        ? plugins.map((p, i) =>
            card(p, stats[i] ?? null, () => {
              plugin = p.name;
              pluginSelect.value = p.name;
              changed();
            }),
          )
        : empty(
            "No plugins loaded. Point plugin_dirs (or MISSIOND_PLUGIN_DIRS) at plugin folders and restart the daemon.",
          ),
    );
    fill(log, decisionsTable(page.decisions));
    const start = (cursors.length - 1) * DECISIONS_PAGE;
    fill(
      logPager,
      pager({
        testid: "decisions-pager",
        label: page.decisions.length ? `${start + 1}–${start + page.decisions.length}, newest first` : "",
        hasPrevious: cursors.length > 1,
        hasNext: page.decisions.length === DECISIONS_PAGE,
        onPrevious: () => {
          cursors = cursors.slice(0, -1);
          void refresh().catch(ctx.fail);
        },
        onNext: () => {
          cursors = [...cursors, page.decisions.at(-1)!.id];
          void refresh().catch(ctx.fail);
        },
      }),
    );
  }

  return {
    mount(root, params) {
      plugin = params.get("plugin") ?? undefined;
      hook = params.get("hook") ?? undefined;
      if (plugin) pluginSelect.append(h("option", { value: plugin }, plugin));
      pluginSelect.value = plugin ?? "";
      hookSelect.value = hook ?? "";
      pluginSelect.addEventListener("change", () => {
        plugin = pluginSelect.value || undefined;
        changed();
      });
      hookSelect.addEventListener("change", () => {
        hook = hookSelect.value || undefined;
        changed();
      });
      fill(
        root,
        panel("Plugins", "in chain order", cards),
        panel(
          "Decision log",
          h(
            "span",
            { class: "filters inline" },
            h("label", null, "Plugin ", pluginSelect),
            h("label", null, "Hook ", hookSelect),
          ),
          log,
          logPager,
        ),
      );
    },
    refresh,
  };
}
