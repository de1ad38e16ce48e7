import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import { MissiondError } from "../errors.ts";
import type { MissionExecutor, PeerMission } from "../executors/types.ts";
import type { Logger } from "../log.ts";
import { addPeerThread, appendMessages, findSession } from "../sessions/queries.ts";
import type { PluginChain } from "./chain.ts";

const MAX_TEXT_CHARS = 1_000_000;

export interface PeerDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  /** The account's chain (interAgentMessage runs on every message sent). */
  chain: () => PluginChain;
  executorFor: (agentId: string) => Promise<MissionExecutor>;
  /** Background work shutdown waits for. */
  detach: (work: Promise<unknown>) => void;
}

/** What host.session.peer.send asks for; the sender is the session the handler was invoked for. */
export interface PeerMessage {
  readonly senderSessionId: string;
  readonly targetSessionId: unknown;
  readonly text: unknown;
  /** The hop of the handler that sends; the message's chain runs one hop further. */
  readonly hop: number;
}

/**
 * host.session.peer.send: one session's message into another session of the account. The call
 * checks the target and returns; the rest runs in the background, because the handler that sends
 * may itself be one the new message's interAgentMessage chain must run (a plugin's handlers run
 * one at a time), so waiting for that chain would wait for itself. In the background: the chain
 * (one hop further, host.session in it the sender's), then, unless a plugin cancelled, the
 * message in the target's transcript (role "agent") and its delivery to the target session's
 * agent through that agent's executor. Messages into one session keep the order they were sent
 * in. At most once: a daemon stopped mid-way does not resume it.
 */
export class PeerMessages {
  private readonly deps: PeerDeps;
  private readonly log: Logger;
  /** The last message queued for each target session. */
  private readonly inOrder = new Map<string, Promise<void>>();

  constructor(deps: PeerDeps) {
    this.deps = deps;
    this.log = deps.log.child({ component: "peer" });
  }

  async send(message: PeerMessage): Promise<{ queued: true }> {
    const { targetSessionId: target, text, senderSessionId: sender } = message;
    if (typeof target !== "string" || target.length === 0 || target.length > 200)
      throw new MissiondError("BAD_REQUEST", "host.session.peer.send takes a target session id");
    if (typeof text !== "string" || text.length > MAX_TEXT_CHARS)
      throw new MissiondError(
        "BAD_REQUEST",
        `host.session.peer.send takes a text of at most ${MAX_TEXT_CHARS} characters`,
      );
    if (target === sender)
      throw new MissiondError("BAD_REQUEST", "host.session.peer.send: a session cannot message itself");
    const [from, to] = await Promise.all([findSession(this.deps.db, sender), findSession(this.deps.db, target)]);
    if (!from) throw new MissiondError("NOT_FOUND", `host.session.peer.send: no session "${sender}"`);
    if (!to) throw new MissiondError("NOT_FOUND", `host.session.peer.send: no session "${target}"`);
    const context = {
      senderSessionId: sender,
      senderAgentId: from.agentId,
      targetSessionId: target,
      isSubagentReport: false,
      text,
    };
    // Messages into one session pass their chains and reach its transcript in the order they
    // were sent: a reply sent while its cause is still in its chain lands after it.
    const previous = this.inOrder.get(target) ?? Promise.resolve();
    const work = previous.then(() => this.deliver(context, to.agentId, message.hop + 1));
    const done = work.then(
      () => {},
      () => {},
    );
    this.inOrder.set(target, done);
    void done.then(() => {
      if (this.inOrder.get(target) === done) this.inOrder.delete(target);
    });
    this.deps.detach(work);
    return { queued: true };
  }

  private async deliver(
    context: {
      senderSessionId: string;
      senderAgentId: string;
      targetSessionId: string;
      isSubagentReport: boolean;
      text: string;
    },
    targetAgentId: string,
    hop: number,
  ): Promise<void> {
    const { db, clock } = this.deps;
    const log = this.log.child({
      senderSessionId: context.senderSessionId,
      targetSessionId: context.targetSessionId,
      hop,
    });
    const result = await this.deps.chain().run("interAgentMessage", context, { hop });
    if (result.kind !== "passed") {
      log.info({ plugin: result.plugin, reason: result.reason }, "peer message cancelled by a plugin");
      return;
    }
    const text = result.context.text;
    const at = new Date(clock.now());
    await appendMessages(db, context.targetSessionId, [{ role: "agent", text }], at);
    await addPeerThread(db, context.senderSessionId, context.targetSessionId, at);
    const mission: PeerMission = {
      kind: "peer",
      agentId: targetAgentId,
      sessionId: context.targetSessionId,
      prompt: text,
      scheduledFor: at.toISOString(),
      firedAt: at.toISOString(),
      latenessMs: 0,
      senderSessionId: context.senderSessionId,
      senderAgentId: context.senderAgentId,
    };
    // Delivered outside the order above, so a slow executor does not hold up the next message.
    this.deps.detach(this.execute(mission, log));
  }

  private async execute(mission: PeerMission, log: Logger): Promise<void> {
    const executor = await this.deps.executorFor(mission.agentId);
    const outcome = await executor.execute(mission, new AbortController().signal);
    if (outcome.status === "Succeeded") log.debug({ executor: executor.name }, "peer message delivered");
    else
      log.warn(
        { executor: executor.name, status: outcome.status, output: outcome.output },
        "peer message not delivered",
      );
  }
}
