import type { Command } from "commander";

/** `--help` examples for every command, by its path under `missiond`. */
export const EXAMPLES: Record<string, readonly string[]> = {
  "": [
    "missiond serve",
    "missiond cron ls --json",
    "missiond --url https://missiond.internal:7878 --token $TOKEN doctor",
  ],
  serve: [
    "missiond serve",
    "DATABASE_URL=postgres://missiond@db/missiond missiond serve --config /etc/missiond/config.toml",
  ],
  migrate: ["missiond migrate", "DATABASE_URL=postgres://missiond@db/missiond missiond migrate"],
  backup: [
    "missiond backup /root/missiond-$(date +%F).tar.gz",
    "missiond --config /etc/missiond/config.toml backup /root/missiond.tar.gz",
  ],
  config: ["missiond config check"],
  "config check": ["missiond config check", "missiond config check --config /etc/missiond/config.toml --json"],
  cron: [
    "missiond cron ls",
    'missiond cron add --name backups --agent a1 --cron "0 3 * * *" --prompt "check the backups"',
  ],
  "cron add": [
    'missiond cron add --name nightly --agent a1 --cron "0 3 * * *" --tz Europe/Berlin --prompt "check the backups"',
    'missiond cron add --name pulse --agent a1 --every 30m --kind heartbeat --active-hours 09:00-18:00 --prompt "anything to do?"',
    'missiond cron add --name tick --agent a1 --cron "*/10 * * * * *" --overlap buffer_one --prompt "poll the queue"',
    'missiond cron add --name report --agent a1 --cron "0 6 * * *" --alert-failures 3 --alert-no-success-within 26h --pause-after-failures 5 --prompt "send the report"',
  ],
  "cron ls": ["missiond cron ls", "missiond cron ls --json | jq '.[] | select(.paused)'"],
  "cron show": ["missiond cron show 12", "missiond cron show 12 --json"],
  "cron pause": [
    'missiond cron pause 12 --note "database migration"',
    'missiond cron pause 12 --until 2030-06-01T14:00:00+02:00 --note "database migration"',
  ],
  "cron edit": [
    'missiond cron edit 12 --cron "30 4 * * *" --tz Europe/Berlin',
    'missiond cron edit 12 --prompt "check the backups and the replicas" --jitter none',
    "missiond cron edit 12 --every 2h --force",
  ],
  "cron history": ["missiond cron history 12", "missiond cron history 12 --json | jq '.[-1].changes'"],
  "cron resume": ["missiond cron resume 12"],
  "cron trigger": [
    "missiond cron trigger 12",
    "missiond cron trigger 12 --json | jq -r .id",
    `missiond cron trigger 12 --payload '{"pr": {"title": "fix the build"}}'`,
  ],
  "cron token": ["missiond cron token create 12 --name ci", "missiond cron token ls 12"],
  "cron token create": [
    "missiond cron token create 12 --name deploy",
    "missiond cron token create 12 --json | jq -r .token",
  ],
  "cron token ls": ["missiond cron token ls 12", "missiond cron token ls 12 --json"],
  "cron token rm": ["missiond cron token rm 12 ci"],
  "cron backfill": [
    "missiond cron backfill 12 --from 2026-03-01T00:00:00Z --to 2026-03-08T00:00:00Z --dry-run",
    "missiond cron backfill 12 --from 2026-03-01T00:00:00Z --to 2026-03-08T00:00:00Z --max 200 --json",
  ],
  "cron skip": [
    'missiond cron skip 12 --count 3 --reason "holiday week"',
    'missiond cron skip 12 --until 2030-04-01T00:00:00+02:00 --reason "office closed"',
    "missiond cron skip 12 --cancel",
  ],
  "cron rm": ["missiond cron rm 13", "missiond cron rm 12 --force"],
  "cron preview": [
    'missiond cron preview "0 9 * * 1-5" --tz Europe/Berlin -n 5',
    'missiond cron preview "every 90m" -n 3',
    `missiond cron preview "0 9 * * *" -n 1 --prompt 'Morning {{slot_local}}: {{#previous}}last run {{status}}{{/previous}}'`,
  ],
  "cron export": ["missiond cron export > jobs.toml", "missiond cron export --name nightly --name pulse"],
  apply: [
    "missiond apply /etc/missiond/jobs.toml --dry-run",
    "missiond apply jobs.toml team-jobs.toml --prune",
    "missiond apply jobs.toml --json | jq .plan.counts",
  ],
  runs: ["missiond runs ls --status Cancelled"],
  "runs show": ["missiond runs show 1207", "missiond runs show 1207 --json"],
  "runs ls": [
    "missiond runs ls --job 12 --limit 20",
    "missiond runs ls --status Missed --json",
    "missiond runs ls --summary --from 2030-01-01T00:00:00Z --to 2030-02-01T00:00:00Z",
  ],
  "runs approve": ["missiond runs approve 1207"],
  "runs reject": ['missiond runs reject 1207 --reason "not during the release freeze"'],
  "runs export": [
    "missiond runs export --before 2030-01-01T00:00:00Z | gzip > runs-2029.jsonl.gz",
    "missiond runs export --before 2030-01-01T00:00:00Z --job 12",
  ],
  session: ["missiond session ls", "missiond session clear s-42"],
  "session add": ["missiond session add --agent a1 --id s-42", "missiond session add --agent a1 --kind channel --json"],
  "session ls": ["missiond session ls", "missiond session ls --json"],
  "session clear": [
    'missiond session clear s-42 --text "start over with the billing bug"',
    "missiond session clear s-42 --json",
  ],
  "session rm": ["missiond session rm s-42", "missiond session rm s-42 --force --json"],
  "session say": [
    'missiond session say s-42 "what is left on the deploy?"',
    'missiond session say s-42 --role system "be brief"',
  ],
  "session messages": [
    "missiond session messages s-42",
    "missiond session messages s-42 --after 118 --limit 20 --json",
  ],
  "session events": ["missiond session events", "missiond session events --after 118 --session s-42 --json"],
  notify: [
    'missiond notify --session s-42 --in 10m --message "check whether the deploy finished"',
    "missiond notify ls --session s-42 --status Pending",
    "missiond notify cancel 17",
  ],
  "notify ls": ["missiond notify ls --session s-42", "missiond notify ls --status Dropped --json"],
  "notify show": ["missiond notify show 17"],
  "notify cancel": ["missiond notify cancel 17"],
  todo: ['missiond todo add --session s-42 "reproduce the bug"', "missiond todo ls --session s-42"],
  "todo add": ['missiond todo add --session s-42 "reproduce the bug" "write the fix; add a test"'],
  "todo ls": ["missiond todo ls --session s-42", "missiond todo ls --session s-42 --status all --json"],
  "todo done": ["missiond todo done 31"],
  "todo cancel": ["missiond todo cancel 32"],
  agent: [
    "missiond agent ls",
    "missiond agent set ops-bot --executor webhook --webhook-url https://agents.internal/missions",
  ],
  "agent ls": ["missiond agent ls", "missiond agent ls --json"],
  "agent set": [
    "missiond agent set ops-bot --executor webhook --webhook-url https://agents.internal/missions --secret $SECRET",
    "missiond agent set worker --executor command --timeout 10m --argv /usr/local/bin/run-agent --once",
  ],
  "agent rm": ["missiond agent rm ops-bot"],
  plugins: ["missiond plugins ls", "missiond plugins install cron-sentinel --yes", "missiond plugins reload"],
  "plugins install": [
    "missiond plugins install cron-sentinel",
    "missiond plugins install ./quiet-hours --yes",
    "missiond plugins install ./quiet-hours --yes --force",
    "missiond plugins install ./quiet-hours --yes --force --on-missing-grant warn",
  ],
  "plugins approve": ["missiond plugins approve quiet-hours", "missiond plugins approve quiet-hours --yes --json"],
  "plugins disable": ["missiond plugins disable quiet-hours"],
  "plugins enable": ["missiond plugins enable quiet-hours --json"],
  "plugins rm": ["missiond plugins rm quiet-hours --yes"],
  "plugins reload": ["missiond plugins reload", "missiond --socket /run/missiond/missiond.sock plugins reload --json"],
  "plugins ls": ["missiond plugins ls", "missiond plugins ls --json"],
  "plugins decisions": [
    "missiond plugins decisions --hook notifyDelivered --limit 20",
    "missiond plugins decisions --plugin maintenance-window --json",
  ],
  doctor: ["missiond doctor", "missiond doctor --json || alert-oncall"],
  alerts: ["missiond alerts ls --open", "missiond alerts ack 7"],
  "alerts ls": ["missiond alerts ls --open", "missiond alerts ls --json | jq '.[] | select(.resolvedAt == null)'"],
  "alerts ack": ["missiond alerts ack 7"],
};

/** The path of a command under the program: "cron add". */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

/** Appends each command's examples to its `--help`. */
export function addExamples(program: Command): void {
  const visit = (command: Command) => {
    const examples = EXAMPLES[commandPath(command)];
    if (examples) command.addHelpText("after", `\nExamples:\n${examples.map((e) => `  ${e}`).join("\n")}`);
    for (const sub of command.commands) visit(sub);
  };
  visit(program);
}
