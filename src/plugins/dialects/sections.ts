import { PLATFORM } from "./moments.ts";
import { failure, type Verdict } from "./results.ts";
import type { DialectMember, DialectRunner } from "./runner.ts";

/** The decision log's name for one section's turn. */
export const SECTION_HOOK = "system_prompt_section";
/** Every section together, heading included, and how many: the bounds of the page's platform. */
const MAX_TOTAL_CHARS = 8_000;
const MAX_SECTIONS = 32;
const HEADING = "## Plugin Context: ";

/** The systemPrompt hook's context (POST /v1/hooks/systemPrompt). */
export interface PromptContext {
  readonly sessionId: string;
  readonly agentId: string;
  readonly sessionKind: string;
  readonly systemPrompt: string;
}

interface Section {
  readonly member: DialectMember;
  readonly key: string;
  readonly id: string;
  readonly maxChars: number;
}

async function sectionsOf(runner: DialectRunner): Promise<Section[]> {
  const found: Section[] = [];
  for (const member of runner.members("python")) {
    const registrations = await member.handle.registrations(runner.options.handlerTimeoutMs);
    for (const reg of registrations as readonly { key: string; kind?: string; section?: Record<string, unknown> }[])
      if (reg.kind === "section" && reg.section)
        found.push({ member, key: reg.key, id: String(reg.section.id), maxChars: Number(reg.section.max_chars) });
  }
  // Ordered by id, as the page's platform orders them; for one id, the first plugin in plugin order owns it.
  return found.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * The Python plugins' system prompt sections (`ctx.register_system_prompt_section`), appended to the
 * system prompt the contract's chain answered: each as `## Plugin Context: <id>`, a blank line and its
 * text (stripped), after a blank line. A callable gets `session_info` (read-only: session_id,
 * agent_id, profile_name (the agent), session_kind, platform, and model, provider and cwd as null)
 * on every call; None or empty text adds nothing. A section that throws, times out, answers
 * something other than text or more than its `max_chars`, a second section with an id already
 * taken, and one past 32 sections or 8,000 characters in all are skipped. Each is recorded in the
 * decision log as `system_prompt_section` under its plugin; a shadow plugin's is not appended.
 */
export async function appendSections(
  runner: DialectRunner,
  context: PromptContext,
): Promise<{ systemPrompt: string; changedBy: string[] }> {
  const sections = await sectionsOf(runner);
  if (sections.length === 0) return { systemPrompt: context.systemPrompt, changedBy: [] };
  const info = {
    session_id: context.sessionId,
    agent_id: context.agentId,
    profile_name: context.agentId,
    session_kind: context.sessionKind,
    platform: PLATFORM,
    model: null,
    provider: null,
    cwd: null,
  };
  const blocks: string[] = [];
  const changedBy: string[] = [];
  const owners = new Map<string, string>();
  let total = 0;
  for (const { member, key, id, maxChars } of sections) {
    const owner = owners.get(id);
    if (owner === undefined) owners.set(id, member.name);
    let block = "";
    const judge = (raw: Parameters<typeof failure>[0]): Verdict => {
      const failed = failure(raw);
      if (failed) return failed;
      if (owner !== undefined) return { kind: "skipped", why: `duplicate: section ${id} is registered by ${owner}` };
      const value = (raw as { value?: unknown }).value;
      if (value === undefined || value === null) return { kind: "passed" };
      if (typeof value !== "string") return { kind: "skipped", why: `malformed: section ${id} is not text` };
      const text = value.trim();
      if (text === "") return { kind: "passed" };
      if (text.length > maxChars)
        return { kind: "skipped", why: `section ${id} has ${text.length} characters, over its max_chars ${maxChars}` };
      block = `${HEADING}${id}\n\n${text}`;
      if (blocks.length >= MAX_SECTIONS || total + block.length > MAX_TOTAL_CHARS)
        return {
          kind: "skipped",
          why: `section ${id} is past the ${MAX_SECTIONS} sections or ${MAX_TOTAL_CHARS} characters in all`,
        };
      return { kind: "changed", patch: { systemPrompt: block } };
    };
    const verdict = await runner.call(
      member,
      SECTION_HOOK,
      key,
      { args: [info] },
      { sessionId: context.sessionId },
      judge,
    );
    if (verdict.kind !== "changed" || member.shadow) continue;
    blocks.push(block);
    total += block.length + 2;
    if (!changedBy.includes(member.name)) changedBy.push(member.name);
  }
  const systemPrompt = [context.systemPrompt, ...blocks].filter((part) => part !== "").join("\n\n");
  return { systemPrompt, changedBy };
}
