// Generated from the Rust model (model::words) by `cargo test -p debugtop-model`. Do not edit.

/** A process state (the kernel's letter) in words. */
export const STATE_WORDS: Record<string, string> = {
  "R": "running",
  "S": "sleeping",
  "D": "disk wait",
  "Z": "zombie",
  "T": "stopped",
  "t": "traced",
  "X": "exited",
  "I": "idle",
  "P": "parked",
  "K": "wakekill",
  "W": "waking",
  "?": "unknown",
};

/** How a person names an MCP host kind. */
export const HOST_TITLE: Record<string, string> = {
  "opencode": "opencode",
  "claude-code": "Claude Code",
  "codex": "Codex",
  "cursor": "Cursor",
  "vs-code": "VS Code",
  "mcp-inspector": "MCP Inspector",
  "unlabelled": "MCP",
};

/** The finding kinds about a debug session itself, not a process. */
export const SESSION_KINDS: ReadonlySet<string> = new Set(["session-without-worker", "stuck-session"]);

/** A process identity as the core spells it: pid and start ticks (`ProcId`). */
export type ProcId = string;

/** The identity of the process with this pid and start ticks. */
export function procId(pid: number, startTicks: number): ProcId {
  return `${pid}.${startTicks}`;
}
