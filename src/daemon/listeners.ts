import { chmodSync, existsSync, mkdirSync, unlinkSync } from "node:fs";
import { connect } from "node:net";
import { dirname } from "node:path";
import type { FastifyInstance } from "fastify";
import { MissiondError } from "../errors.ts";

/**
 * Serves the API on its Unix socket: a stale file is replaced, a live one (another daemon) is an
 * error. Resolves to the removal of the socket file.
 */
export async function listenOnSocket(api: FastifyInstance, path: string): Promise<() => void> {
  mkdirSync(dirname(path), { recursive: true, mode: 0o750 });
  if (existsSync(path)) {
    if (await socketAnswers(path)) {
      throw new MissiondError("CONFLICT", `another missiond is already listening on ${path}`);
    }
    unlinkSync(path);
  }
  await api.listen({ path });
  // Owner and group only: the group is how operators grant agents access to the API.
  chmodSync(path, 0o660);
  return () => {
    try {
      unlinkSync(path);
    } catch {
      /* already gone */
    }
  };
}

/** Serves `api` on TCP; resolves to its close (closed at once if it cannot listen). */
export async function listenOnTcp(
  api: FastifyInstance,
  address: { host: string; port: number },
): Promise<() => Promise<void>> {
  try {
    await api.listen({ host: address.host, port: address.port });
  } catch (err) {
    await api.close();
    throw err;
  }
  return () => api.close();
}

function socketAnswers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
