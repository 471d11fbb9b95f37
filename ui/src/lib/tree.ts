// Pure view logic: the reconciled tree → the rows to draw. No DOM, no IPC; unit-tested in node.
import type { TreeNode } from './bindings/TreeNode';
import type { Proc } from './bindings/Proc';
import type { Finding } from './bindings/Finding';

export interface Row {
  id: string;
  depth: number;
  node: TreeNode;
  hasChildren: boolean;
  expanded: boolean;
  /** Worst finding on this node's process, if any. */
  finding: Finding | null;
  /** CPU % and RSS of this node's process plus, when collapsed, of everything under it. */
  cpu: number;
  rss: number;
  /** Number of processes under a collapsed node. */
  hidden: number;
  /** For a process in a container: the container and its pid there. */
  inner: string | null;
}

/** "container abc123 · pid 56" for a process in another pid namespace. */
export function innerWord(p: Proc | undefined): string | null {
  if (!p?.ns) return null;
  const where = p.ns.container ? p.ns.container.slice(0, 12) : `pid-ns ${p.ns.inode}`;
  return p.ns.pid !== p.pid ? `${where} · pid ${p.ns.pid}` : where;
}

const SEVERITY_RANK: Record<string, number> = { info: 0, warning: 1, critical: 2 };

/** The worst finding per pid, and per debug session (`s:<id>`) for the findings about a
 * session itself (a stuck session, one without a worker). */
export function findingsByPid(findings: Finding[]): Map<number | string, Finding> {
  const m = new Map<number | string, Finding>();
  const keep = (k: number | string, f: Finding) => {
    const prev = m.get(k);
    if (!prev || SEVERITY_RANK[f.severity] > SEVERITY_RANK[prev.severity]) m.set(k, f);
  };
  for (const f of findings) {
    for (const pid of f.pids) keep(pid, f);
    if (f.session_id && SESSION_KINDS.has(f.kind)) keep(`s:${f.session_id}`, f);
  }
  return m;
}

const SESSION_KINDS = new Set(['stuck-session', 'session-without-worker']);

export function procsByPid(procs: Proc[]): Map<number, Proc> {
  return new Map(procs.map((p) => [p.pid, p]));
}

/** Text a filter matches against: pid, role, session, label, state. */
export function haystack(n: TreeNode): string {
  return [n.pid ?? '', n.role ?? '', n.session_id ?? '', n.label, n.kind, n.status ?? '', n.state ?? '']
    .join(' ')
    .toLowerCase();
}

function subtreeMatches(n: TreeNode, q: string): boolean {
  if (haystack(n).includes(q)) return true;
  return n.children.some((c) => subtreeMatches(c, q));
}

function totals(n: TreeNode, procs: Map<number, Proc>): { cpu: number; rss: number; count: number } {
  let cpu = 0;
  let rss = 0;
  let count = 0;
  const p = n.pid != null && n.kind === 'process' ? procs.get(n.pid) : undefined;
  if (p) {
    cpu += p.cpu_percent ?? 0;
    rss += p.rss_bytes;
  }
  for (const c of n.children) {
    const t = totals(c, procs);
    cpu += t.cpu;
    rss += t.rss;
    count += t.count + (c.kind === 'process' ? 1 : 0);
  }
  return { cpu, rss, count };
}

/**
 * Flattens the forest into rows. `collapsed` holds ids the user collapsed (everything is
 * expanded by default, so new leaks are visible). A filter keeps matching nodes and their
 * ancestors, and expands them.
 */
export function flatten(
  forest: TreeNode[],
  collapsed: Set<string>,
  filter: string,
  findings: Map<number | string, Finding>,
  procs: Map<number, Proc>,
): Row[] {
  const q = filter.trim().toLowerCase();
  const rows: Row[] = [];
  const walk = (n: TreeNode, depth: number) => {
    if (q && !subtreeMatches(n, q)) return;
    const expanded = q ? true : !collapsed.has(n.id);
    const p = n.pid != null ? procs.get(n.pid) : undefined;
    let cpu = p && n.kind !== 'http-session' ? (p.cpu_percent ?? 0) : 0;
    let rss = p && n.kind !== 'http-session' ? p.rss_bytes : 0;
    let hidden = 0;
    if (!expanded && n.children.length > 0) {
      const t = totals(n, procs);
      cpu = t.cpu;
      rss = t.rss;
      hidden = t.count;
    }
    rows.push({
      id: n.id,
      depth,
      node: n,
      hasChildren: n.children.length > 0,
      expanded,
      finding:
        n.pid != null
          ? (findings.get(n.pid) ?? null)
          : n.kind === 'debug-session' && n.session_id
            ? (findings.get(`s:${n.session_id}`) ?? null)
            : null,
      cpu,
      rss,
      hidden,
      inner: n.kind === 'http-session' ? null : innerWord(p),
    });
    if (expanded) for (const c of n.children) walk(c, depth + 1);
  };
  for (const n of forest) walk(n, 0);
  return rows;
}

/** The slice of rows to render for a scroll position (virtualization). */
export function visibleRange(count: number, rowHeight: number, scrollTop: number, height: number, overscan = 8) {
  const start = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const end = Math.min(count, Math.ceil((scrollTop + height) / rowHeight) + overscan);
  return { start, end };
}

/** How the tree pane orders rows: the tree (default), or a flat list of processes. */
export type SortKey = 'tree' | 'cpu' | 'rss' | 'pid';

/**
 * The rows for a sort: the tree as it is, or every process of the (filtered) tree as a flat
 * list, highest first for CPU and RSS (pid ascending), ties by pid — "top" is `cpu`.
 */
export function sortRows(
  forest: TreeNode[],
  collapsed: Set<string>,
  filter: string,
  findings: Map<number | string, Finding>,
  procs: Map<number, Proc>,
  key: SortKey,
): Row[] {
  if (key === 'tree') return flatten(forest, collapsed, filter, findings, procs);
  const all = flatten(forest, new Set(), filter, findings, procs).filter((r) => r.node.kind === 'process');
  const flat = all.map((r) => ({ ...r, depth: 0, hasChildren: false, expanded: false, hidden: 0 }));
  const by = (r: Row) => (key === 'cpu' ? r.cpu : key === 'rss' ? r.rss : -(r.node.pid ?? 0));
  return flat.sort((a, b) => by(b) - by(a) || (a.node.pid ?? 0) - (b.node.pid ?? 0));
}
