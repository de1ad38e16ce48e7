// Holds scheduled missions (and drops notify deliveries) inside maintenance windows.
//
// Windows come from the manifest's config: recurring ({ days, start, end, timezone }, local
// "HH:MM" times, possibly across midnight) or one-off ({ from, to }, ISO instants). Inside a
// window a cron slot is deferred to the window's end (action "defer") or cancelled ("cancel").
// The manifest marks the plugin `required`: if it breaks, slots are cancelled, not let through.

const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const MINUTE = 60_000;
// Longest stretch of back-to-back windows we will walk to find the end (a week and a day).
const MAX_SCAN_MINUTES = 8 * 24 * 60;

const toMinutes = (hhmm) => {
  const match = /^(\d{2}):(\d{2})$/.exec(hhmm ?? "");
  if (!match || Number(match[1]) > 23 || Number(match[2]) > 59) throw new Error(`maintenance-window: bad time "${hhmm}" (use HH:MM)`);
  return Number(match[1]) * 60 + Number(match[2]);
};

/** Validates the config once, at load: a bad window fails the plugin's load with its name. */
export function compileWindows(config) {
  const windows = config.windows;
  if (!Array.isArray(windows) || windows.length === 0) throw new Error("maintenance-window: config.windows must be a non-empty list");
  return windows.map((w, i) => {
    if (w.from !== undefined || w.to !== undefined) {
      const from = Date.parse(w.from);
      const to = Date.parse(w.to);
      if (Number.isNaN(from) || Number.isNaN(to) || to <= from) throw new Error(`maintenance-window: windows[${i}] needs ISO from < to`);
      return { kind: "once", from, to, label: w.label ?? `${w.from} – ${w.to}` };
    }
    const timezone = w.timezone ?? "UTC";
    const format = new Intl.DateTimeFormat("en-US", { timeZone: timezone, weekday: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
    const days = (w.days ?? DAYS).map((d) => String(d).toLowerCase().slice(0, 3));
    for (const d of days) if (!DAYS.includes(d)) throw new Error(`maintenance-window: windows[${i}] has an unknown day "${d}"`);
    return { kind: "recurring", start: toMinutes(w.start), end: toMinutes(w.end), days, format, label: w.label ?? `${w.start}–${w.end} ${timezone}` };
  });
}

function local(format, instant) {
  const parts = Object.fromEntries(format.formatToParts(new Date(instant)).map((p) => [p.type, p.value]));
  return { day: DAYS.indexOf(parts.weekday.toLowerCase()), minutes: Number(parts.hour) * 60 + Number(parts.minute) };
}

function covers(window, instant) {
  if (window.kind === "once") return instant >= window.from && instant < window.to;
  const { day, minutes } = local(window.format, instant);
  const today = window.days.includes(DAYS[day]);
  const yesterday = window.days.includes(DAYS[(day + 6) % 7]);
  if (window.start <= window.end) return today && minutes >= window.start && minutes < window.end;
  // Across midnight: the evening part belongs to today, the morning part to yesterday's window.
  return (today && minutes >= window.start) || (yesterday && minutes < window.end);
}

/** The window covering `instant` and the first instant after it that no window covers, or null. */
export function windowAt(windows, instant) {
  const active = windows.find((w) => covers(w, instant));
  if (!active) return null;
  let t = Math.floor(instant / MINUTE) * MINUTE;
  for (let i = 0; i < MAX_SCAN_MINUTES && windows.some((w) => covers(w, t)); i++) t += MINUTE;
  return { label: active.label, until: t };
}

const windows = compileWindows(host.config);
const action = host.config.action ?? "defer";
if (action !== "defer" && action !== "cancel") throw new Error(`maintenance-window: action must be "defer" or "cancel", not "${action}"`);

globalThis.middleware.cronJobFiring = async (context, tools) => {
  const inside = windowAt(windows, host.clock.now());
  if (!inside) return context.prompt;
  const reason = `maintenance window ${inside.label} until ${new Date(inside.until).toISOString()}`;
  host.log("info", `holding ${context.kind} "${context.name}": ${reason}`);
  return action === "defer" ? tools.defer({ until: inside.until, reason }) : tools.cancel(reason);
};

globalThis.middleware.notifyDelivered = async (context, tools) => {
  const inside = windowAt(windows, host.clock.now());
  if (!inside) return context.message;
  return tools.cancel(`dropped during maintenance window ${inside.label}`);
};
