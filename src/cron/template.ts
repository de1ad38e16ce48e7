import Mustache from "mustache";
import { nearest } from "../did-you-mean.ts";
import { MissiondError } from "../errors.ts";

/**
 * Prompt templates: a job with `promptTemplate` on has its prompt rendered for each run, once,
 * before its cronJobFiring chain (mustache, HTML escaping off). The variables are a closed set,
 * checked when the job is saved so that a typo is refused then, with its position, instead of
 * rendering as nothing at 3 a.m. Pure: the values are read by the caller (`template-values.ts`).
 *
 * A value is never rendered again: mustache substitutes a value's text as it is (only lambdas,
 * which JSON cannot carry, would run), so a payload or an earlier output holding `{{…}}` reaches
 * the agent literally.
 */

/** The most of the previous run's output a template receives (its tail: where an answer ends). */
export const OUTPUT_EXCERPT_CHARS = 2000;

/** Every variable a template may name, with what it holds (the docs' table is made from this). */
export const TEMPLATE_VARIABLES = {
  slot: "the run's slot, UTC (ISO 8601)",
  slot_local: "the run's slot in the job's time zone (ISO 8601 with its offset)",
  timezone: "the job's time zone",
  "job.id": "the job's id",
  "job.name": "the job's name",
  "run.id": "the run's id",
  trigger: "what made the run: schedule, catchup, manual, deferred, backfill or event",
  attempt: "1 for a slot's first run, 2 for its first re-fire after a deferral, and so on",
  previous: "the job's previous finished run (a section: empty when there is none)",
  "previous.id": "the previous run's id",
  "previous.status": "the previous run's status",
  "previous.finished_at": "when the previous run finished (ISO 8601)",
  "previous.output": `the end of the previous run's output (the agent's answer), at most ${OUTPUT_EXCERPT_CHARS} characters`,
  payload: "the event's JSON body (a section: empty unless the run is an event's)",
  "payload.<field>": "a field of the event's JSON body (any depth: payload.pr.title)",
} as const;

const ROOTS = new Set(["slot", "slot_local", "timezone", "job", "run", "trigger", "attempt", "previous", "payload"]);
const KNOWN = new Set(Object.keys(TEMPLATE_VARIABLES).filter((k) => !k.includes("<")));

/** What a template renders with. */
export interface TemplateValues {
  slot: string;
  slot_local: string;
  timezone: string;
  job: { id: string; name: string };
  run: { id: string };
  trigger: string;
  attempt: number;
  previous: { id: string; status: string; finished_at: string | null; output: string } | null;
  payload: Record<string, unknown> | null;
}

type Token = [string, string, number, number, Token[]?, number?];

/** `line L, column C` of an offset in `text` (both from 1). */
function position(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return `line ${line}, column ${offset - before.lastIndexOf("\n")}`;
}

/**
 * Whether `name` (as written inside a tag, in a section of `scope`) is a variable. Inside a
 * section over `payload` or `previous`, a bare name is that object's field; `.` is the section's value.
 */
function known(name: string, scopes: readonly string[]): boolean {
  if (name === ".") return true;
  if (KNOWN.has(name) || name.startsWith("payload.")) return true;
  const inner = scopes.at(-1);
  if (inner === "payload" || inner?.startsWith("payload.")) return true;
  if (inner === "previous") return KNOWN.has(`previous.${name}`);
  return false;
}

/**
 * Refuses a template that mustache cannot parse, a partial (there is nothing to include) or a
 * variable outside TEMPLATE_VARIABLES, naming the problem and where it is. `field` prefixes the
 * message as validation.ts words a field's problem.
 */
export function checkTemplate(text: string, field = "prompt"): void {
  const problem = templateProblem(text);
  if (problem) throw new MissiondError("BAD_REQUEST", `${field}: ${problem}`);
}

/** What checkTemplate refuses in `text`, without the field's name; null when it is a good template. */
export function templateProblem(text: string): string | null {
  let tokens: Token[];
  try {
    tokens = Mustache.parse(text, ["{{", "}}"]) as Token[];
  } catch (err) {
    const message = (err as Error).message;
    const at = /at (\d+)$/.exec(message);
    const where = at ? ` (${position(text, Number(at[1]))})` : "";
    return `template syntax: ${message.replace(/ at \d+$/, "")}${where}`;
  }
  return walk(text, tokens, []);
}

function walk(text: string, tokens: readonly Token[], scopes: readonly string[]): string | null {
  for (const [type, value, start, , children] of tokens) {
    if (type === "text" || type === "!" || type === "=") continue;
    const at = position(text, start);
    if (type === ">") return `template partial "${value}" at ${at}: partials are not supported`;
    if (!known(value, scopes)) {
      const root = value.split(".")[0]!;
      const near = nearest(value, [...KNOWN]) ?? (ROOTS.has(root) ? null : nearest(root, [...ROOTS]));
      return `unknown template variable "${value}" at ${at}${near ? ` (did you mean "${near}"?)` : ""}`;
    }
    const inner = children ? walk(text, children, [...scopes, value]) : null;
    if (inner) return inner;
  }
  return null;
}

/** The prompt for one run: `text` rendered with `values`, no HTML escaping, no partials. */
export function renderTemplate(text: string, values: TemplateValues): string {
  return Mustache.render(text, values, {}, { escape: (value: unknown) => String(value) });
}

/** The previous run's output as a template shows it: its last OUTPUT_EXCERPT_CHARS characters. */
export const outputExcerpt = (output: string | null): string =>
  output === null ? "" : output.length <= OUTPUT_EXCERPT_CHARS ? output : output.slice(-OUTPUT_EXCERPT_CHARS);

/** `date` in `timezone` as ISO 8601 with that zone's offset at that instant (`2026-03-01T09:00:00.000+01:00`). */
export function localIso(date: Date, timezone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone: timezone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  const wall = Date.UTC(+parts.year!, +parts.month! - 1, +parts.day!, +parts.hour!, +parts.minute!, +parts.second!);
  const offsetMin = Math.round((wall - (date.getTime() - date.getUTCMilliseconds())) / 60_000);
  const sign = offsetMin < 0 ? "-" : "+";
  const abs = Math.abs(offsetMin);
  const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
  const ms = String(date.getUTCMilliseconds()).padStart(3, "0");
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}.${ms}${offset}`;
}
