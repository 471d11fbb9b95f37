// The live view, kept from the backend's messages: a whole snapshot, then only what changed.
// The same rule as debugtop_core::delta::apply (proved there: apply(a, diff(a, b)) == b).
// Parts that did not change keep their identity, so what draws them is not redrawn; a tick
// where nothing but the clock moved changes nothing at all. One exception: the processes' list
// is changed in place (it changes every tick), and `LiveView.processesChanged` says when.
// Pure: no DOM, no IPC.
import type { Snapshot } from './bindings/Snapshot';
import type { SnapshotChanges } from './bindings/SnapshotChanges';
import type { ViewMessage } from './bindings/ViewMessage';
import type { Keyed } from './bindings/Keyed';
import type { TreeRow } from './bindings/TreeRow';
import type { TreeNode } from './bindings/TreeNode';
import type { Proc } from './bindings/Proc';
import type { Finding } from './bindings/Finding';
import type { LogEvent } from './bindings/LogEvent';
import { procId, type ProcId } from './bindings/words';
import type { PidLookup } from './tree';

/** A process by its identity, as the core spells it. */
export const procKey = (p: Proc): ProcId => procId(p.pid, p.start_ticks);
export const findingKey = (f: Finding) => f.id;
export const rowKey = (r: TreeRow) => r.node.id;

/** The tree as rows in depth-first order, each without its children. */
export function rows(tree: TreeNode[]): TreeRow[] {
  const out: TreeRow[] = [];
  const walk = (n: TreeNode, parent: string | null) => {
    out.push({ parent, node: { ...n, children: [] } });
    for (const c of n.children) walk(c, n.id);
  };
  for (const n of tree) walk(n, null);
  return out;
}

/** The tree back from rows in depth-first order. */
export function forest(rs: TreeRow[]): TreeNode[] {
  const roots: TreeNode[] = [];
  const open: TreeNode[] = [];
  const close = () => {
    const done = open.pop();
    if (!done) return;
    const parent = open[open.length - 1];
    if (parent) parent.children.push(done);
    else roots.push(done);
  };
  for (const r of rs) {
    if (r.parent !== null && open.some((o) => o.id === r.parent)) {
      while (open.length && open[open.length - 1].id !== r.parent) close();
    } else {
      while (open.length) close();
    }
    open.push({ ...r.node, children: [] });
  }
  while (open.length) close();
  return roots;
}

export function applyKeyed<T>(a: T[], k: Keyed<T>, key: (x: T) => string): T[] {
  const gone = new Set(k.remove ?? []);
  const out = gone.size ? a.filter((x) => !gone.has(key(x))) : a.slice();
  const at = new Map<string, number>();
  out.forEach((x, i) => at.set(key(x), i));
  for (const x of k.upsert ?? []) {
    const i = at.get(key(x));
    if (i === undefined) {
      at.set(key(x), out.length);
      out.push(x);
    } else out[i] = x;
  }
  if (!k.order) return out;
  const by = new Map(out.map((x) => [key(x), x]));
  return k.order.flatMap((kk) => (by.has(kk) ? [by.get(kk) as T] : []));
}

/**
 * A keyed list and its index by key, kept between messages: an upsert of a few elements among
 * 5,000 looks each one up instead of indexing the whole list again. A removal or a new order
 * rebuilds the list and the index.
 */
export class KeyedList<T> {
  private at = new Map<string, number>();
  /** `inPlace`: upserts replace and append in `items` itself rather than in a copy, for the
   * list that changes every tick (the processes): its readers follow the view's change flags,
   * not the list's identity. */
  constructor(
    public items: T[],
    private key: (x: T) => string,
    private inPlace = false,
  ) {
    this.reindex();
  }

  private reindex() {
    this.at = new Map(this.items.map((x, i) => [this.key(x), i]));
  }

  /** The keys the last `apply` added (upserts of keys the list did not hold). */
  added: string[] = [];
  /** Whether the last `apply` built the list again (a removal or a new order) rather than
   * replacing and appending in place. */
  rebuilt = false;

  /** Where `key` is in the list. */
  indexOf(key: string): number | undefined {
    return this.at.get(key);
  }

  apply(k: Keyed<T>): T[] {
    this.added = (k.upsert ?? []).map(this.key).filter((key) => !this.at.has(key));
    this.rebuilt = (k.remove ?? []).length > 0 || !!k.order;
    if (this.rebuilt) {
      this.items = applyKeyed(this.items, k, this.key);
      this.reindex();
      return this.items;
    }
    const out = this.inPlace ? this.items : this.items.slice();
    for (const x of k.upsert ?? []) {
      const key = this.key(x);
      const i = this.at.get(key);
      if (i === undefined) {
        this.at.set(key, out.length);
        out.push(x);
      } else out[i] = x;
    }
    this.items = out;
    return out;
  }
}

/**
 * The processes by pid, kept with their list between messages: a tick that changes one process
 * of 5,000 sets one entry, where building the map again made a 5,000-entry map and array each
 * tick that the window's JavaScript engine held as garbage until its next collection (about
 * a megabyte a tick). The same answers as `procsByPid(list)`: where two processes share a pid
 * (a reused one), the later in the list wins. Each change gives a new lookup, so what reads it
 * is drawn again; every lookup reads the one index, so an older one answers as the newest.
 */
class PidIndex {
  private byPid = new Map<number, Proc>();
  lookup: PidLookup = this.byPid;

  reset(items: Proc[]) {
    this.byPid = new Map();
    for (const p of items) this.byPid.set(p.pid, p);
    this.renew();
  }

  /** `list` after an `apply` that upserted `upserts`. */
  follow(list: KeyedList<Proc>, upserts: Proc[]) {
    if (list.rebuilt) return this.reset(list.items);
    const later = (k: ProcId) => list.indexOf(k) ?? -1;
    for (const p of upserts) {
      const held = this.byPid.get(p.pid);
      if (held && procKey(held) !== procKey(p) && later(procKey(held)) > later(procKey(p))) continue;
      this.byPid.set(p.pid, p);
    }
    this.renew();
  }

  private renew() {
    const m = this.byPid;
    this.lookup = { get: (pid) => m.get(pid) };
  }
}

/** What receiving a message did. */
export type Received = 'changed' | 'idle' | 'resync';

/** The live snapshot as the messages build it. */
export class LiveView {
  snapshot: Snapshot | null = null;
  seq: number | null = null;
  /** When the last message's sample was taken (an idle tick moves only this). */
  takenAt: string | null = null;
  events: LogEvent[] = [];
  /** The tree as rows, kept so a tree change is applied without re-walking the tree. */
  private treeRows = new KeyedList<TreeRow>([], rowKey);
  private processes = new KeyedList<Proc>([], procKey);
  private pids = new PidIndex();
  private findings = new KeyedList<Finding>([], findingKey);
  /** The processes the last message brought (new or changed), or `null` when it brought the
   * whole list: what follows the figures of each process looks at these alone. */
  changedProcesses: Proc[] | null = null;
  /** Whether the last message changed the processes. Their list is changed in place when a
   * message only replaces and adds (a tick that moves one process of 5,000 copied all 5,000,
   * and the web process grew by a fifth of a megabyte a tick until its engine collected), so
   * its identity does not say it. */
  processesChanged = false;
  /** The ids of the tree nodes the last message added, or `null` when it brought the first tree. */
  addedNodes: string[] | null = null;
  /** How many timeline events fell off the front so far: event i's stable key is dropped + i. */
  timelineDropped = 0;

  /** The process this view holds under `p`'s identity (pid and start ticks), if any. */
  procOf(p: Proc): Proc | undefined {
    const i = this.processes.indexOf(procKey(p));
    return i === undefined ? undefined : this.processes.items[i];
  }

  /** The processes of `snapshot` by pid, kept between messages, when it is a snapshot this view
   * built (its list is this view's); `undefined` for any other (an opened snapshot). A new
   * lookup each time the processes change, the same one otherwise. */
  procsByPid(snapshot: Snapshot | null): PidLookup | undefined {
    return snapshot && snapshot.processes === this.processes.items ? this.pids.lookup : undefined;
  }

  receive(m: ViewMessage): Received {
    if (m.type === 'full') {
      // A whole tree after another (a resync): what it adds is still new to the viewer.
      const before = this.snapshot ? new Set(this.treeRows.items.map(rowKey)) : null;
      this.snapshot = m.snapshot;
      this.treeRows = new KeyedList(rows(m.snapshot.tree), rowKey);
      this.addedNodes = before ? this.treeRows.items.map(rowKey).filter((k) => !before.has(k)) : null;
      this.processes = new KeyedList(m.snapshot.processes, procKey, true);
      this.pids.reset(m.snapshot.processes);
      this.processesChanged = true;
      this.findings = new KeyedList(m.snapshot.findings, findingKey);
      this.changedProcesses = null;
      this.seq = Number(m.seq);
      this.takenAt = m.snapshot.taken_at;
      this.events = m.events;
      this.timelineDropped = 0;
      return 'changed';
    }
    if (!this.snapshot || Number(m.base) !== this.seq) return 'resync';
    this.seq = Number(m.seq);
    this.takenAt = m.taken_at;
    this.events = m.events ?? [];
    this.changedProcesses = m.processes?.upsert ?? [];
    this.processesChanged = m.processes !== undefined;
    this.addedNodes = [];
    let next: Snapshot;
    try {
      next = this.apply(this.snapshot, m);
    } catch (e) {
      // The processes' list may be changed in place already: nothing half-applied is kept; the
      // next message asks for the whole snapshot again.
      this.snapshot = null;
      this.seq = null;
      throw e;
    }
    if (next === this.snapshot) return 'idle';
    this.snapshot = next;
    return 'changed';
  }

  /** `a` with the changes; `a` itself when only the clock moved. */
  private apply(a: Snapshot, c: SnapshotChanges): Snapshot {
    const s: Snapshot = { ...a };
    let changed = false;
    const take = <K extends keyof Snapshot>(k: K, v: Snapshot[K] | undefined) => {
      if (v !== undefined) {
        s[k] = v;
        changed = true;
      }
    };
    if (c.head) {
      Object.assign(s, c.head);
      changed = true;
    }
    take('servers', c.servers);
    take('http_sessions', c.http_sessions);
    take('debug_sessions', c.debug_sessions);
    take('log_excerpts', c.log_excerpts);
    take('sources', c.sources);
    take('groups', c.groups);
    if (c.environment) take('environment', c.environment.value);
    if (c.processes) {
      take('processes', this.processes.apply(c.processes));
      this.pids.follow(this.processes, c.processes.upsert ?? []);
    }
    if (c.findings) take('findings', this.findings.apply(c.findings));
    if (c.tree) {
      take('tree', forest(this.treeRows.apply(c.tree)));
      this.addedNodes = this.treeRows.added;
    }
    if (c.timeline) {
      const t = c.timeline;
      const base = t.reset ? [] : a.timeline.slice(Math.min(t.drop_front, a.timeline.length));
      this.timelineDropped = t.reset ? 0 : this.timelineDropped + t.drop_front;
      take('timeline', base.concat(t.append));
    }
    if (!changed && (c.events ?? []).length === 0) return a;
    s.taken_at = c.taken_at;
    return s;
  }
}
