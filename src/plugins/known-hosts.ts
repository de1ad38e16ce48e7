import { createHmac } from "node:crypto";

/**
 * Whether an OpenSSH known_hosts text lists `key` (the server's host key blob, as sent in the
 * handshake) for `host` on `port`. Understands what ssh-keygen and ssh write: plain and hashed
 * (`|1|salt|hash`) host names, `[host]:port` for a port other than 22, comma-separated names,
 * `*` / `?` patterns and `!` negations; a `@revoked` line refuses its key for every host it names.
 * `@cert-authority` lines are not understood and never match.
 */
export function knownHostsAllow(text: string, host: string, port: number, key: Buffer): boolean {
  const name = port === 22 ? host.toLowerCase() : `[${host.toLowerCase()}]:${port}`;
  let allowed = false;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const fields = line.split(/\s+/);
    const marker = fields[0]!.startsWith("@") ? fields.shift() : undefined;
    if (fields.length < 3) continue;
    const [hosts, , base64] = fields as [string, string, string];
    if (!Buffer.from(base64, "base64").equals(key) || !hostsMatch(hosts, name)) continue;
    if (marker === "@revoked") return false;
    if (marker === undefined) allowed = true;
  }
  return allowed;
}

function hostsMatch(hosts: string, name: string): boolean {
  if (hosts.startsWith("|1|")) {
    const [, , salt, hash] = hosts.split("|");
    if (!salt || !hash) return false;
    return createHmac("sha1", Buffer.from(salt, "base64")).update(name).digest("base64") === hash;
  }
  let matched = false;
  for (const pattern of hosts.toLowerCase().split(",")) {
    const negated = pattern.startsWith("!");
    if (!globMatch(negated ? pattern.slice(1) : pattern, name)) continue;
    if (negated) return false;
    matched = true;
  }
  return matched;
}

function globMatch(pattern: string, name: string): boolean {
  if (!/[*?]/.test(pattern)) return pattern === name;
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${source}$`).test(name);
}
