import { api, type Backfill, type Job, type Run } from "../../api.ts";
import { dialogForm } from "../../dialog.ts";
import { h } from "../../dom.ts";
import { dateTime, fromLocalInput, toLocalInput } from "../../time.ts";
import { statusChip, toast } from "../../widgets.ts";

/** Each returns true when it changed something (the page then reloads the job). */

export async function pauseJob(job: Job): Promise<boolean> {
  const values = await dialogForm({
    title: `Pause “${job.name}”?`,
    text: "No slot is claimed while it is paused, and none is written Missed. With “until”, it resumes by itself then.",
    fields: [
      { name: "note", label: "Note (optional)", placeholder: "why" },
      { name: "until", label: "Until (optional, your time)", type: "datetime-local" },
    ],
    confirm: "Pause",
    testid: "pause-dialog",
  });
  if (!values) return false;
  const until = values.until ? fromLocalInput(values.until) : null;
  await api.post<Job>(`/v1/cron-jobs/${job.id}/pause`, {
    ...(values.note ? { note: values.note } : {}),
    ...(until ? { until } : {}),
  });
  toast(`Paused “${job.name}”`);
  return true;
}

export async function resumeJob(job: Job): Promise<boolean> {
  await api.post<Job>(`/v1/cron-jobs/${job.id}/resume`);
  toast(`Resumed “${job.name}”`);
  return true;
}

/** The payload typed in the trigger dialog: nothing, or a JSON object (anything else is refused here, by name). */
function payloadOf(text: string): Record<string, unknown> | null {
  if (!text) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`the payload is not JSON (${(err as Error).message}): nothing triggered`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new Error('the payload must be a JSON object, like {"pr": 12}: nothing triggered');
  return value as Record<string, unknown>;
}

export async function triggerJob(job: Job): Promise<boolean> {
  const values = await dialogForm({
    title: `Trigger “${job.name}” now?`,
    text: "A manual run starts now, outside the schedule, through the plugin chain like any slot. With a payload it is an event's run (trigger event), and the prompt template sees {{payload.…}}.",
    fields: [{ name: "payload", label: "Payload (optional, a JSON object)", placeholder: '{"pr": 12}' }],
    confirm: "Trigger now",
    danger: true,
    testid: "trigger-dialog",
  });
  if (!values) return false;
  const payload = payloadOf(values.payload ?? "");
  const run = await api.post<Run>(`/v1/cron-jobs/${job.id}/trigger`, payload ?? undefined);
  toast(`Triggered “${job.name}”${payload ? " with a payload" : ""}: run ${run.id}`);
  return true;
}

export async function skipJob(job: Job): Promise<boolean> {
  const values = await dialogForm({
    title: `Skip the next slots of “${job.name}”`,
    text: "Each skipped slot is recorded Skipped, with the reason, when it comes. Give a count or an end (every slot before it); a count of 0 cancels the skips still pending.",
    fields: [
      { name: "count", label: "How many slots", type: "number", value: "1" },
      { name: "until", label: "Or every slot until (your time)", type: "datetime-local" },
      { name: "reason", label: "Reason (optional)", placeholder: "why" },
    ],
    confirm: "Skip",
    testid: "skip-dialog",
  });
  if (!values) return false;
  // An end replaces the count: the API takes exactly one of them and says so when given neither.
  const until = values.until ? fromLocalInput(values.until) : null;
  await api.post<Job>(`/v1/cron-jobs/${job.id}/skip`, {
    ...(until ? { until } : values.count ? { count: Number(values.count) } : {}),
    ...(values.reason ? { reason: values.reason } : {}),
  });
  toast(
    until
      ? `Skipping every slot until ${dateTime(until)}`
      : values.count === "0"
        ? `No slot of “${job.name}” will be skipped`
        : `Skipping ${values.count} slot(s)`,
  );
  return true;
}

const slotList = (plan: Backfill, timeZone: string) =>
  h(
    "ol",
    { class: "slots", "data-testid": "backfill-slots" },
    ...plan.slots.map((s) =>
      h(
        "li",
        null,
        dateTime(s.scheduledFor, timeZone),
        " ",
        s.outcome === "exists" ? statusChip(s.status ?? "exists") : null,
      ),
    ),
  );

/** A past range: the dry run's list of slots first, then the backfill itself once confirmed. */
export async function backfillJob(job: Job): Promise<boolean> {
  const hourAgo = toLocalInput(new Date(Date.now() - 3_600_000).toISOString());
  const range = await dialogForm({
    title: `Backfill “${job.name}”`,
    text: "Runs the job's own slots of a past range (your time), each through the plugin chain once; a slot that already has a run is left alone.",
    fields: [
      { name: "from", label: "From", type: "datetime-local", value: hourAgo, required: true },
      {
        name: "to",
        label: "To (not in the future)",
        type: "datetime-local",
        value: toLocalInput(new Date().toISOString()),
        required: true,
      },
      // Empty: the API's own default limit (`cron backfill --max`).
      { name: "max", label: "Most slots (optional)", type: "number", placeholder: "the daemon's default" },
    ],
    confirm: "List the slots",
    testid: "backfill-dialog",
  });
  if (!range) return false;
  const body = {
    from: fromLocalInput(range.from ?? ""),
    to: fromLocalInput(range.to ?? ""),
    ...(range.max ? { max: Number(range.max) } : {}),
  };
  const plan = await api.post<Backfill>(`/v1/cron-jobs/${job.id}/backfill`, { ...body, dryRun: true });
  const fresh = plan.slots.filter((s) => s.outcome !== "exists").length;
  const ok = await dialogForm({
    title: `${plan.slots.length} slot(s) in the range`,
    text: [
      h("p", null, `${fresh} would run; ${plan.slots.length - fresh} already have a run.`),
      slotList(plan, job.timezone),
    ],
    confirm: `Run ${fresh} slot(s)`,
    danger: true,
    testid: "backfill-plan",
  });
  if (!ok) return false;
  const done = await api.post<Backfill>(`/v1/cron-jobs/${job.id}/backfill`, body);
  toast(
    `Backfill of “${job.name}”: ${done.slots.filter((s) => s.outcome !== "exists").length} slot(s) started or queued`,
  );
  return true;
}

/** Deleting needs the name typed back; a job a jobs file manages needs "edit anyway" too (force). */
export async function deleteJob(job: Job): Promise<boolean> {
  const values = await dialogForm({
    title: `Delete “${job.name}”?`,
    text: [
      h("p", null, "The job goes; its run history stays in the ledger. Type its name to confirm."),
      job.managedBy
        ? h("p", null, "It is managed by ", h("code", null, job.managedBy), ": its next apply adds it again.")
        : null,
    ],
    fields: [{ name: "name", label: "Name", required: true }],
    confirm: "Delete",
    danger: true,
    testid: "delete-dialog",
  });
  if (!values) return false;
  if (values.name !== job.name)
    throw new Error(`the name typed (“${values.name}”) is not “${job.name}”: nothing deleted`);
  await api.delete(`/v1/cron-jobs/${job.id}`, job.managedBy ? { force: "true" } : {});
  toast(`Deleted “${job.name}”`);
  return true;
}
