import { knownAgents } from "../cron/queries.ts";
import type { Db } from "../db/client.ts";
import { MissiondError } from "../errors.ts";
import { validate } from "../validation.ts";
import { agentSchema, compileAgent, type AgentConfig, type AgentExtras } from "./agent-config.ts";
import { deleteAgent, findAgent, listAgents, storedBudgets, upsertAgent } from "./agent-queries.ts";
import { parseBudget, type BudgetLimit } from "../budgets/limits.ts";
import type { Executor } from "../db/client.ts";

export interface AgentView {
  id: string;
  source: "config" | "api";
  executor: string;
  /** Settings with any secret replaced by "[set]". */
  settings: Record<string, unknown>;
}

/** An agent id set over the API (the route's `:id`). */
export const agentIdPattern = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;

const redact = (settings: Record<string, unknown>) =>
  "secret" in settings ? { ...settings, secret: "[set]" } : settings;

/**
 * Agents and how their missions are delivered: those of the config file (authoritative, not
 * editable over the API) and those set over the API (stored in the database, shared by every
 * instance, read when a mission is delivered so a change applies to the next one).
 */
export class AgentService {
  private readonly db: Db;
  private readonly fromConfig: Readonly<Record<string, AgentConfig>>;
  private readonly base: string;
  private readonly now: () => number;

  constructor(db: Db, fromConfig: Readonly<Record<string, AgentConfig>>, base: string, now: () => number) {
    this.db = db;
    this.fromConfig = fromConfig;
    this.base = base;
    this.now = now;
  }

  async put(id: string, raw: unknown): Promise<AgentView> {
    if (!agentIdPattern.test(id))
      throw new MissiondError("BAD_REQUEST", `agent id "${id}" must be letters, digits, '.', '_', ':' or '-'`);
    if (Object.hasOwn(this.fromConfig, id))
      throw new MissiondError("CONFLICT", `agent "${id}" is configured in the config file; change it there`);
    const settings = validate(agentSchema, raw, "body");
    const at = new Date(this.now());
    await upsertAgent(this.db, id, settings, at);
    return { id, source: "api", executor: settings.executor, settings: redact(settings) };
  }

  async list(): Promise<AgentView[]> {
    const stored = await listAgents(this.db);
    const configured = Object.entries(this.fromConfig).map(([id, a]): AgentView => ({
      id,
      source: "config",
      executor: a.executor,
      settings: redact({ ...a }),
    }));
    const api = stored
      .filter((row) => !Object.hasOwn(this.fromConfig, row.id))
      .map((row): AgentView => {
        const settings = row.executor as Record<string, unknown>;
        return { id: row.id, source: "api", executor: String(settings.executor), settings: redact(settings) };
      });
    return [...configured, ...api];
  }

  async remove(id: string): Promise<void> {
    // No agent can have a malformed id (and one with a NUL character must not reach Postgres).
    if (!agentIdPattern.test(id)) throw new MissiondError("NOT_FOUND", `no agent "${id}" set over the API`);
    if (Object.hasOwn(this.fromConfig, id))
      throw new MissiondError("CONFLICT", `agent "${id}" is configured in the config file; remove it there`);
    if (!(await deleteAgent(this.db, id))) throw new MissiondError("NOT_FOUND", `no agent "${id}" set over the API`);
  }

  /**
   * Every agent the daemon knows, sorted by id (host.agents.list()): those of the config file,
   * those set over the API, and those that only appear as the agent of a cron job.
   */
  async known(): Promise<{ id: string }[]> {
    const [stored, scheduled] = await Promise.all([listAgents(this.db), knownAgents(this.db)]);
    const ids = new Set([...Object.keys(this.fromConfig), ...stored.map((row) => row.id), ...scheduled]);
    return [...ids].sort().map((id) => ({ id }));
  }

  /** What plugins may reach on an agent's behalf (workspace, ssh); nothing for an unconfigured agent. */
  async extras(id: string): Promise<AgentExtras> {
    const resolved = await this.resolve(id);
    return { workspace: resolved?.config.workspace ?? null, ssh: resolved?.config.ssh ?? null };
  }

  /**
   * The budgets of these agents, read in the caller's transaction (a claim): those of the config
   * file from memory, those set over the API from the shared table, so every daemon sees a change
   * at its next claim. Agents without a budget are left out.
   */
  async budgets(tx: Executor, ids: readonly string[]): Promise<Map<string, readonly BudgetLimit[]>> {
    const found = new Map<string, readonly BudgetLimit[]>();
    const stored: string[] = [];
    for (const id of ids) {
      const configured = this.fromConfig[id];
      if (!configured) stored.push(id);
      else if (configured.budget) found.set(id, configured.budget);
    }
    if (stored.length > 0)
      for (const row of await storedBudgets(tx, stored)) found.set(row.id, parseBudget(row.budget));
    return found;
  }

  /** The agent's executor settings, or null for an agent nobody configured (the log executor). */
  async resolve(id: string): Promise<{ config: AgentConfig; version: string } | null> {
    const configured = this.fromConfig[id];
    if (configured) return { config: configured, version: "config" };
    const row = await findAgent(this.db, id);
    if (!row) return null;
    return { config: compileAgent(agentSchema.parse(row.executor), this.base), version: row.updatedAt.toISOString() };
  }
}
