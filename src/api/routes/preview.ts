import { z } from "zod";
import { promptPreviewAnswer } from "../../cron/answers.ts";
import { JOB_FIELDS } from "../../cron/fields.ts";
import { assertTimezone } from "../../cron/schedule.ts";
import { previewPrompt } from "../../cron/template-preview.ts";
import { eventPayload, MAX_PAYLOAD_BYTES, payloadObject } from "../../cron/trigger-tokens.ts";
import { route } from "../route.ts";

const promptPreviewInput = z
  .object({
    prompt: JOB_FIELDS.prompt.input,
    slot: z.iso.datetime({ offset: true }),
    timezone: z.string().min(1).max(100).default("UTC"),
    payload: payloadObject.optional(),
  })
  .strict();

/** What `cron preview --prompt` renders, for a caller without the CLI (the dashboard's job form). */
export const previewRoutes = [
  route({
    method: "POST",
    url: "/v1/prompt-preview",
    tag: "cron",
    scope: "operator",
    summary: "Render a prompt template for an example run, as `missiond cron preview --prompt` does",
    description: `The run is an example: job \`example\`, its previous run Succeeded a minute before \`slot\`; \`slot\` and \`timezone\` are the caller's, and with \`payload\` (a JSON object of at most ${MAX_PAYLOAD_BYTES} bytes) it is an event's run. A template the daemon would refuse answers 400 with the problem.`,
    body: promptPreviewInput,
    ok: { 200: { description: "`{ prompt }`: the prompt as that run would fire it", schema: promptPreviewAnswer } },
    errors: [413],
    handler: async ({ body }) => {
      assertTimezone(body.timezone);
      const payload = eventPayload(body.payload) ?? undefined;
      return { prompt: previewPrompt(body.prompt, { slot: new Date(body.slot), timezone: body.timezone, payload }) };
    },
  }),
];
