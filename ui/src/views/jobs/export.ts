import { api, type Job } from "../../api.ts";
import type { GetJobsFileAnswer } from "../../api-types.ts";
import { download, fileSafe } from "../../download.ts";
import { h } from "../../dom.ts";
import { reportWith, toast } from "../../widgets.ts";

/**
 * `missiond cron export` from the page: one job, or every job, as the jobs file (TOML) the API
 * writes, downloaded; `missiond apply` reads it back as no changes.
 */
export async function exportJobs(job?: Job): Promise<void> {
  const file = await api.get<GetJobsFileAnswer>("/v1/jobs-file", { jobId: job?.id });
  download(job ? `${fileSafe(job.name)}.toml` : "jobs.toml", file.toml, "application/toml");
  toast(`Exported ${file.jobs === 1 ? "1 job" : `${file.jobs} jobs`} as a jobs file`);
}

/** The jobs list's button for every job's file. */
export const exportAllButton = (fail: (err: unknown) => void) =>
  h("button", { type: "button", onclick: () => void exportJobs().catch(reportWith(fail)) }, "Export all");
