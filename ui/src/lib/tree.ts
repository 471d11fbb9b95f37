// Pure view logic: the reconciled tree → the rows to draw. No DOM, no IPC; unit-tested in node.
import type { TreeNode } from './bindings/TreeNode';
import type { Proc } from './bindings/Proc';
import type { Finding } from './bindings/Finding';
import { SESSION_KINDS } from './bindings/words';

/** A line as drawn: with its process's figures and worst finding. */
export interface Row extends Line {
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

/** Processes by pid: all the views read of them (a `Map`, or the live view's kept index). */
export type PidLookup = Pick<ReadonlyMap<number, Proc>, 'get'>;

/** Processes by pid, built afresh; where two share a pid (a reused one), the later wins. */
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

function totals(n: TreeNode, procs: PidLookup): { cpu: number; rss: number; count: number } {
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
 * A row's place in the list: what only the tree, the collapsed set, the filter and the sort
 * decide. Kept while those stay the same, so a tick that changes only processes' figures
 * (CPU, memory) or findings does not walk 10,000 nodes again: those are read for the rows
 * in view ({@link decorate}).
 */
export interface Line {
  id: string;
  depth: number;
  node: TreeNode;
  hasChildren: boolean;
  expanded: boolean;
}

/**
 * Flattens the forest into lines. `collapsed` holds ids the user collapsed (everything is
 * expanded by default, so new leaks are visible). A filter keeps matching nodes and their
 * ancestors, and expands them.
 */
export function flattenLines(forest: TreeNode[], collapsed: Set<string>, filter: string): Line[] {
  const q = filter.trim().toLowerCase();
  const lines: Line[] = [];
  const walk = (n: TreeNode, depth: number) => {
    if (q && !subtreeMatches(n, q)) return;
    const expanded = q ? true : !collapsed.has(n.id);
    lines.push({ id: n.id, depth, node: n, hasChildren: n.children.length > 0, expanded });
    if (expanded) for (const c of n.children) walk(c, depth + 1);
  };
  for (const n of forest) walk(n, 0);
  return lines;
}

/** A line with what the current figures and findings say of it. */
export function decorate(line: Line, findings: Map<number | string, Finding>, procs: PidLookup): Row {
  const n = line.node;
  const p = n.pid != null ? procs.get(n.pid) : undefined;
  let cpu = p && n.kind !== 'http-session' ? (p.cpu_percent ?? 0) : 0;
  let rss = p && n.kind !== 'http-session' ? p.rss_bytes : 0;
  let hidden = 0;
  if (line.hasChildren && !line.expanded) {
    const t = totals(n, procs);
    cpu = t.cpu;
    rss = t.rss;
    hidden = t.count;
  }
  return {
    ...line,
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
  };
}

/** The slice of rows to render for a scroll position (virtualization). */
export function visibleRange(count: number, rowHeight: number, scrollTop: number, height: number, overscan = 8) {
  const start = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const end = Math.min(count, Math.ceil((scrollTop + height) / rowHeight) + overscan);
  return { start, end };
}

/** How the tree pane orders rows: the tree (default), or a flat list of processes. */
export type SortKey = 'tree' | 'cpu' | 'rss' | 'pid';

/** Whether the order of `key` follows the processes' figures (re-sorted when they change). */
export const sortFollowsFigures = (key: SortKey) => key === 'cpu' || key === 'rss';

/**
 * The lines for a sort: the tree as it is, or every process of the (filtered) tree as a flat
 * list, highest first for CPU and RSS (pid ascending), ties by pid — "top" is `cpu`.
 */
export function sortLines(
  forest: TreeNode[],
  collapsed: Set<string>,
  filter: string,
  procs: PidLookup,
  key: SortKey,
): Line[] {
  if (key === 'tree') return flattenLines(forest, collapsed, filter);
  const flat = flattenLines(forest, new Set(), filter)
    .filter((l) => l.node.kind === 'process')
    .map((l) => ({ ...l, depth: 0, hasChildren: false, expanded: false }));
  const value = (l: Line) => {
    const p = l.node.pid != null ? procs.get(l.node.pid) : undefined;
    return key === 'cpu' ? (p?.cpu_percent ?? 0) : key === 'rss' ? (p?.rss_bytes ?? 0) : -(l.node.pid ?? 0);
  };
  const by = new Map(flat.map((l) => [l, value(l)]));
  return flat.sort((a, b) => (by.get(b) ?? 0) - (by.get(a) ?? 0) || (a.node.pid ?? 0) - (b.node.pid ?? 0));
}
