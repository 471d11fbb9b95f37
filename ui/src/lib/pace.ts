// When an update reaches the screen. Anything that changes what the tree says — a process or
// session come or gone, a state, a finding, an event, a source's state — is drawn with the
// tick that brings it. What only moves a little — a CPU figure by a few points, memory by a few
// per cent (from what is drawn), the wording of an ok source's counts, the clock — waits for the
// next drawing: the first tick `SMALL_MOVES_EVERY_MS` or more after the last one, by the
// snapshots' own time (every fifth tick at 1 s; top redraws every 3 s, Activity Monitor every
// 5 s, for the same reason), or sooner when the stream stops (App.svelte draws on a pause, a
// sampling error, a target that is not live, a selection).
// At a 1 s interval a quiet tree would otherwise draw every tick for figures that flicker by one
// clock tick of CPU (0.0 ↔ 1.0 %: a 100 Hz clock over one second), and a drawn frame is most of
// what the window costs (BENCHMARKS.md). Nothing is lost while waiting: the view and the history
// take every tick, and the next drawing shows all of it. (The processes' list is the view's,
// changed in place: a row drawn again meanwhile for its own reason — scrolled into view — shows
// its latest figures.)
// Pure: no DOM, no IPC.
import type { Proc } from './bindings/Proc';
import type { SnapshotChanges } from './bindings/SnapshotChanges';
import type { SourceStatus } from './bindings/SourceStatus';
import { procKey } from './delta';

/** A small move is drawn at the first tick this long or more (by the snapshots' clock) after
 * the last drawing. */
export const SMALL_MOVES_EVERY_MS = 4500;
/** A CPU figure that moves by at least this many points from what is drawn is drawn at once. */
export const CPU_STEP = 10;
/** Memory that moves by at least this fraction of what is drawn is drawn at once. */
export const RSS_STEP = 0.1;

/** What a message is weighed against. */
export interface Before {
  /** The process under `p`'s identity as the screen shows it (its figures as last drawn), if
   * the view holds it. */
  proc(p: Proc): Proc | undefined;
  /** The sources as the view holds them. */
  sources: SourceStatus[];
}

/** The parts of a message a small move may carry; any other part, present, is drawn at once
 * (a part added to the protocol later included). */
const SMALL_PARTS = new Set(['type', 'seq', 'base', 'taken_at', 'events', 'processes', 'sources']);

/** Whether `c` only moves figures a little: no part but the processes and the sources, no
 * event; each changed process only in CPU and memory, each by less than a step from what is
 * drawn; each source only in the wording of one that is ok (a failing source's words are on
 * screen). */
export function onlySmallMoves(c: SnapshotChanges, before: Before): boolean {
  const parts = c as unknown as Record<string, unknown>;
  if (Object.keys(parts).some((k) => parts[k] !== undefined && !SMALL_PARTS.has(k))) return false;
  if ((c.events ?? []).length > 0) return false;
  if (c.sources && !sameStates(before.sources, c.sources)) return false;
  const p = c.processes;
  if (!p) return true;
  if ((p.remove ?? []).length > 0 || p.order) return false;
  return (p.upsert ?? []).every((next) => {
    const was = before.proc(next);
    return was !== undefined && smallMove(was, next);
  });
}

/** The processes whose small moves wait, as the screen shows them: measured from these, moves
 * that wait add up to a step and are drawn (a CPU climbing 9 points a tick is drawn at its
 * second tick, not after the pause). */
export class Drawn {
  private held = new Map<string, Proc>();

  /** `p`'s identity as the screen shows it: as held when a move of it waits, else `current`. */
  proc(p: Proc, current: Proc | undefined): Proc | undefined {
    return this.held.get(procKey(p)) ?? current;
  }

  /** The moves of `upserts` wait: each process is kept as `current` gives it now (before the
   * message), unless a move of it already waits. */
  hold(upserts: Proc[], current: (p: Proc) => Proc | undefined) {
    for (const p of upserts) {
      const key = procKey(p);
      const was = this.held.has(key) ? undefined : current(p);
      if (was) this.held.set(key, was);
    }
  }

  /** The screen was drawn: it shows every process as the view holds it. */
  clear() {
    this.held.clear();
  }
}

/** `next` is `was` but for CPU and memory, each moved by less than its step. */
export function smallMove(was: Proc, next: Proc): boolean {
  const cpu = was.cpu_percent !== null && next.cpu_percent !== null && Math.abs(next.cpu_percent - was.cpu_percent) < CPU_STEP;
  const rss = Math.abs(next.rss_bytes - was.rss_bytes) < RSS_STEP * Math.max(was.rss_bytes, 1);
  return cpu && rss && sameBut(was, next, FIGURES);
}

const FIGURES = new Set(['cpu_percent', 'rss_bytes']);

/** The same sources in the same states, the words changed only where the source is ok (the
 * status bar shows an ok source's words only on hover, a failing one's on screen). */
function sameStates(a: SourceStatus[], b: SourceStatus[]): boolean {
  const same = (x: SourceStatus, y: SourceStatus) =>
    x.source === y.source && x.server_pid === y.server_pid && x.state === y.state && (x.state === 'ok' || x.detail === y.detail);
  return a.length === b.length && a.every((x, i) => same(x, b[i]));
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
