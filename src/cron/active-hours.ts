/**
 * Heartbeat active hours: "HH:MM" to "HH:MM" local to the job's time zone, possibly across
 * midnight (22:00–06:00). Pure: takes the instant it reasons about.
 */

const formats = new Map<string, Intl.DateTimeFormat>();

function localMinutes(instant: Date, timezone: string): number {
  let format = formats.get(timezone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: timezone,
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    });
    formats.set(timezone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(instant).map((p) => [p.type, p.value]));
  return Number(parts.hour) * 60 + Number(parts.minute);
}

export const toMinutes = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

export function withinActiveHours(instant: Date, start: string, end: string, timezone: string): boolean {
  const now = localMinutes(instant, timezone);
  const from = toMinutes(start);
  const to = toMinutes(end);
  return from <= to ? now >= from && now < to : now >= from || now < to;
}

/** "09:00-18:00" → ["09:00", "18:00"], or null if it is not that shape. */
export function parseActiveHours(text: string): [string, string] | null {
  const match = /^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$/.exec(text.trim());
  if (!match || `${match[1]}:${match[2]}` === `${match[3]}:${match[4]}`) return null;
  return [`${match[1]}:${match[2]}`, `${match[3]}:${match[4]}`];
}
