import { z } from "zod";
import { field } from "../cron/field-spec.ts";
import { labelsInput, normalizeLabels, parseLabel, type Labels } from "./labels.ts";

/**
 * A job's labels as an entry of the job table (`src/cron/fields.ts` spreads it into JOB_FIELDS, so
 * the `--label` flag, the API, jobs files' `labels = { team = "ops" }`, revisions and views come
 * from here like every other field). A set of labels is given whole: it replaces the job's.
 */

/** `--label team=ops --label env=prod` → { team: "ops", env: "prod" }. */
function collectLabel(text: string, previous: unknown): Labels {
  const [key, value] = parseLabel(text);
  const before = previous && typeof previous === "object" ? (previous as Labels) : {};
  return { ...before, [key]: value };
}

export const LABEL_FIELDS = {
  labels: field({
    input: labelsInput,
    view: z
      .record(z.string(), z.string())
      .nullable()
      .describe("The job's labels (`team: ops`), keys sorted; null: none."),
    clearable: true,
    cli: {
      flags: "--label <key=value>",
      help: "label the job, e.g. team=ops (repeat for more)",
      editHelp: 'replace the job\'s labels by these, e.g. team=ops (repeat for more); "none" removes them',
      collect: collectLabel,
      fileKey: "labels",
    },
    read: (row) => normalizeLabels(row.labels),
    columns: (v) => ({ labels: normalizeLabels(v) }),
    normalize: (v) => normalizeLabels(v),
  }),
};
