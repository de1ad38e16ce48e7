import { api, type Job, type Run } from "../../api.ts";
import { ask, toast } from "../../widgets.ts";

export type JobAction = "pause" | "resume" | "trigger";

/** Pauses (asking for a note), resumes or triggers (after confirming) a job; false when the operator backed out. */
export async function jobAction(job: Job, action: JobAction): Promise<boolean> {
  if (action === "pause") {
    const note = await ask({
      title: `Pause “${job.name}”?`,
      text: "No slot is claimed while it is paused, and none is written Missed. Resuming restarts it from its next slot.",
      field: { label: "Note (optional)", placeholder: "why, and until when" },
      confirm: "Pause",
    });
    if (note === null) return false;
    await api.post<Job>(`/v1/cron-jobs/${job.id}/pause`, note ? { note } : {});
    toast(`Paused “${job.name}”`);
  } else if (action === "resume") {
    await api.post<Job>(`/v1/cron-jobs/${job.id}/resume`);
    toast(`Resumed “${job.name}”`);
  } else {
    const ok = await ask({
      title: `Trigger “${job.name}” now?`,
      text: "A manual run starts now, outside the schedule, through the plugin chain like any slot (the overlap policy does not apply).",
      confirm: "Trigger now",
      danger: true,
    });
    if (ok === null) return false;
    const run = await api.post<Run>(`/v1/cron-jobs/${job.id}/trigger`);
    // The answer comes once the slot is claimed; the chain and the mission follow (the ledger shows them).
    toast(
      `Triggered “${job.name}”: run ${run.id}, ${run.status === "Claimed" ? "claimed, going through the plugin chain" : run.status}`,
    );
  }
  return true;
}
