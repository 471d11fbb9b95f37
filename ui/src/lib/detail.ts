// What the detail pane shows of the selected node, picked from the snapshot's parts. Pure:
// unit-tested in node. The pane is given these parts, not the snapshot.
import type { TreeNode } from './bindings/TreeNode';
import type { Proc } from './bindings/Proc';
import type { Finding } from './bindings/Finding';
import type { ServerInfo } from './bindings/ServerInfo';
import type { TimelineEvent } from './bindings/TimelineEvent';
import type { DebugSession } from './bindings/DebugSession';
import type { PidLookup } from './tree';

/** The selected node's process, server, findings, recent log lines and debug session. */
export interface Parts {
  proc: Proc | undefined;
  server: ServerInfo | undefined;
  findings: Finding[];
  logLines: TimelineEvent[];
  session: DebugSession | undefined;
}

/** How many of the session's log and stage events the pane lists. */
const LOG_LINES = 12;

export function detailParts(
  node: TreeNode | null,
  procs: PidLookup,
  servers: ServerInfo[],
  findings: Finding[],
  timeline: TimelineEvent[],
  sessions: DebugSession[],
): Parts {
  const pid = node?.pid ?? null;
  const proc = pid != null ? procs.get(pid) : undefined;
  const sessionId = node?.session_id ?? proc?.session_id ?? null;
  const mine = (f: Finding) =>
    (pid != null && f.pids.includes(pid)) || (node?.kind === 'debug-session' && f.session_id === sessionId);
  return {
    proc,
    server: pid != null ? servers.find((s) => s.pid === pid) : undefined,
    findings: node ? findings.filter(mine) : [],
    logLines: sessionId
      ? timeline.filter((e) => (e.kind === 'log' || e.kind === 'stage') && e.session_id === sessionId).slice(-LOG_LINES)
      : [],
    session: sessionId ? sessions.find((d) => d.id === sessionId) : undefined,
  };
}
