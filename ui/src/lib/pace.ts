// When an update reaches the screen. Anything that changes what the tree says — a process or
// session come or gone, a state, a finding, an event, a source's state — is drawn with the
// tick that brings it. What only moves a little — a CPU figure by a few points, memory by a few
// per cent, the wording of a source's counts, the clock — waits for the next drawing: the first
// tick `SMALL_MOVES_EVERY_MS` or more after the last one, by the snapshots' own time (every
// fifth tick at 1 s; top redraws every 3 s, Activity Monitor every 5 s, for the same reason).
// At a 1 s interval a quiet tree would otherwise draw every tick for figures that flicker by one
// clock tick of CPU (0.0 ↔ 1.0 %: a 100 Hz clock over one second), and a drawn frame is most of
// what the window costs (BENCHMARKS.md). Nothing is lost while waiting: the view and the history
// take every tick, and the next drawing shows all of it.
// Pure: no DOM, no IPC.
import type { Proc } from './bindings/Proc';
import type { SnapshotChanges } from './bindings/SnapshotChanges';
import type { SourceStatus } from './bindings/SourceStatus';

/** A small move waits at most this long, by the snapshots' clock, to be drawn. */
export const SMALL_MOVES_EVERY_MS = 4500;
/** A CPU figure that moves by at least this many points is drawn at once. */
export const CPU_STEP = 10;
/** Memory that moves by at least this fraction is drawn at once. */
export const RSS_STEP = 0.1;

/** What a message changes, against what the view holds before it. */
export interface Before {
  /** The process the view holds under `p`'s identity, if any. */
  proc(p: Proc): Proc | undefined;
  sources: SourceStatus[];
}

/** Whether `c` only moves figures a little: no list but the processes' and the sources'
 * changes, no event; each changed process only in CPU and memory, and by less than a step;
 * each source only in its wording. */
export function onlySmallMoves(c: SnapshotChanges, before: Before): boolean {
  const others = [c.head, c.servers, c.http_sessions, c.debug_sessions, c.tree, c.findings, c.groups, c.timeline, c.log_excerpts, c.environment];
  if (others.some((x) => x !== undefined) || (c.events ?? []).length > 0) return false;
  if (c.sources && !sameStates(before.sources, c.sources)) return false;
  const p = c.processes;
  if (!p) return true;
  if ((p.remove ?? []).length > 0 || p.order) return false;
  return (p.upsert ?? []).every((next) => {
    const was = before.proc(next);
    return was !== undefined && smallMove(was, next);
  });
}

/** `next` is `was` but for CPU and memory, each moved by less than its step. */
export function smallMove(was: Proc, next: Proc): boolean {
  const cpu = was.cpu_percent !== null && next.cpu_percent !== null && Math.abs(next.cpu_percent - was.cpu_percent) < CPU_STEP;
  const rss = Math.abs(next.rss_bytes - was.rss_bytes) < RSS_STEP * Math.max(was.rss_bytes, 1);
  return cpu && rss && sameBut(was, next, FIGURES);
}

const FIGURES = new Set(['cpu_percent', 'rss_bytes']);

function sameStates(a: SourceStatus[], b: SourceStatus[]): boolean {
  return a.length === b.length && a.every((x, i) => x.source === b[i].source && x.server_pid === b[i].server_pid && x.state === b[i].state);
}

/** Equal in every field but `skip` (an absent field and an undefined one are the same). */
function sameBut(a: object, b: object, skip: Set<string>): boolean {
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
  for (const k of keys) if (!skip.has(k) && !equal(x[k], y[k])) return false;
  return true;
}

function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  return sameBut(a, b, NOTHING);
}

const NOTHING = new Set<string>();

/** When to draw: at once for anything but small moves; small moves once `SMALL_MOVES_EVERY_MS`
 * have passed since the last drawing (by the snapshots' clock, so a paused or slow stream
 * never draws for nothing). */
export class Pace {
  private drawnAt: number | null = null;

  /** Whether the update taken at `takenAt` (ms) is drawn now. */
  draw(small: boolean, takenAt: number): boolean {
    const last = this.drawnAt;
    const now = !small || last === null || !Number.isFinite(takenAt) || takenAt < last || takenAt - last >= SMALL_MOVES_EVERY_MS;
    if (now) this.drawnAt = takenAt;
    return now;
  }

  /** A new stream (another target): its first update is drawn. */
  reset() {
    this.drawnAt = null;
  }
}
