import cronstrue from "cronstrue";
import type { Job } from "./api.ts";

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string | undefined, withDate: boolean): Intl.DateTimeFormat {
  const key = `${timeZone ?? ""}|${withDate}`;
  let f = formatters.get(key);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat("en-GB", {
        timeZone,
        ...(withDate ? { weekday: "short", day: "numeric", month: "short" } : {}),
        hour: "2-digit",
        minute: "2-digit",
        second: "2-digit",
        hourCycle: "h23",
        timeZoneName: timeZone ? "short" : undefined,
      });
    } catch {
      // A zone this browser does not know: the viewer's own, and say so by leaving the name off.
      f = new Intl.DateTimeFormat("en-GB", { hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
    }
    formatters.set(key, f);
  }
  return f;
}

/** "Tue 3 Dec, 02:30:00 CET" in the given zone (the job's), or the viewer's own. */
export const dateTime = (iso: string | null, timeZone?: string): string =>
  iso ? formatter(timeZone, true).format(new Date(iso)) : "—";

/** "02:30:00" in the viewer's zone. */
export const clock = (iso: string | number | null): string =>
  iso === null ? "—" : formatter(undefined, false).format(new Date(iso));

/** "3m 20s", "2h 5m", "4d 1h". */
export function span(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m}m ${s % 60}s` : `${m}m`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return m % 60 ? `${hours}h ${m % 60}m` : `${hours}h`;
  const d = Math.floor(hours / 24);
  return hours % 24 ? `${d}d ${hours % 24}h` : `${d}d`;
}

/** "in 3m 20s" or "5m ago". */
export function relative(iso: string | null, now = Date.now()): string {
  if (!iso) return "";
  const ms = Date.parse(iso) - now;
  if (Math.abs(ms) < 1000) return "now";
  return ms > 0 ? `in ${span(ms)}` : `${span(ms)} ago`;
}

const UNITS: Record<string, [string, string]> = {
  ms: ["millisecond", "milliseconds"],
  s: ["second", "seconds"],
  m: ["minute", "minutes"],
  h: ["hour", "hours"],
  d: ["day", "days"],
};

/** "30m" → "Every 30 minutes"; "1h30m" → "Every 1 hour 30 minutes". */
export function everyInWords(every: string): string {
  const parts = [...every.matchAll(/(\d+)(ms|s|m|h|d)/g)].map(
    ([, n, unit]) => `${n} ${UNITS[unit!]![Number(n) === 1 ? 0 : 1]}`,
  );
  return parts.length ? `Every ${parts.join(" ")}` : `Every ${every}`;
}

const described = new Map<string, string>();

/** The schedule in words: cron through cronstrue, intervals in our own wording; plus active hours. */
export function scheduleInWords(job: Pick<Job, "cron" | "every" | "activeHours">): string {
  let words: string;
  if (job.cron) {
    words = described.get(job.cron) ?? "";
    if (!words) {
      try {
        words = cronstrue.toString(job.cron, { use24HourTimeFormat: true, throwExceptionOnParseError: true });
      } catch {
        words = job.cron;
      }
      described.set(job.cron, words);
    }
  } else words = everyInWords(job.every ?? "?");
  return job.activeHours ? `${words}, active ${job.activeHours.replace("-", "–")}` : words;
}

/** The next `count` slots of an interval job, from its next fire time (intervals are absolute time). */
export function nextIntervalSlots(nextFireAt: string, every: string, count: number): string[] {
  const ms = [...every.matchAll(/(\d+)(ms|s|m|h|d)/g)].reduce(
    (sum, [, n, unit]) => sum + Number(n) * { ms: 1, s: 1e3, m: 6e4, h: 3.6e6, d: 8.64e7 }[unit as "s"],
    0,
  );
  const first = Date.parse(nextFireAt);
  return Array.from({ length: ms > 0 ? count : 1 }, (_, i) => new Date(first + i * ms).toISOString());
}

/** A value for <input type="datetime-local"> in the viewer's zone, and back. */
export function toLocalInput(iso: string): string {
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export const fromLocalInput = (value: string): string | null => {
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
};
