import { z } from "zod";
import { idString } from "../answer-fields.ts";
import { RUN_STATUSES } from "../db/schema/enums.ts";

/** What a reject takes: why, in the operator's words (recorded in the run's reason). */
export const rejectInput = z
  .object({ reason: z.string().trim().max(500).optional().describe("Why the run is rejected (its reason says it).") })
  .strict();

/** What a signed link answers its holder: the decision made and the run's status, nothing more. */
export const linkDecision = z
  .object({
    action: z.enum(["approve", "reject"]),
    runId: idString,
    status: z.enum(RUN_STATUSES),
  })
  .strict();
