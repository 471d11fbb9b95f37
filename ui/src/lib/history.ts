// CPU and RSS history per process, by identity (pid and start ticks): bounded to `limit`
// points each, pruned to the processes the snapshot still shows. Pure (no DOM, no Svelte):
// unit-tested in node. A point is added only for a process whose figures changed — the view
// keeps the object of an unchanged process — so a tick that moves one process of 5,000 adds
// one point, and a chart holds each value until the next.
import type { Proc } from './bindings/Proc';
import { procId, type ProcId } from './bindings/words';

/** One process's points: times (seconds), CPU % and RSS bytes. */
export interface Series {
  t: number[];
  cpu: number[];
  rss: number[];
}

export class History {
  private series = new Map<ProcId, Series>();

  constructor(private readonly limit = 300) {}

  /** A point at `takenAt` for each of `changed` (new or changed processes); `all` is every
   * process the snapshot shows, to forget those that are gone. */
  record(takenAt: string, changed: Proc[], all: Proc[]) {
    const at = Date.parse(takenAt) / 1000;
    for (const p of changed) this.point(this.of(p), at, p);
    // Every live process has a series, so more series than processes means some are of
    // processes that are gone.
    if (this.series.size > all.length) {
      const present = new Set(all.map((p) => procId(p.pid, p.start_ticks)));
      for (const key of this.series.keys()) if (!present.has(key)) this.series.delete(key);
    }
  }

  /** `p`'s points, its last value held up to `now` (ms); a copy. */
  until(p: Proc | undefined, now: number): Series | undefined {
    const h = p ? this.series.get(procId(p.pid, p.start_ticks)) : undefined;
    if (!h || h.t.length === 0) return undefined;
    const last = h.t.length - 1;
    const at = now / 1000;
    if (at <= h.t[last]) return { t: [...h.t], cpu: [...h.cpu], rss: [...h.rss] };
    return { t: [...h.t, at], cpu: [...h.cpu, h.cpu[last]], rss: [...h.rss, h.rss[last]] };
  }

  clear() {
    this.series.clear();
  }

  get size(): number {
    return this.series.size;
  }

  private of(p: Proc): Series {
    const key = procId(p.pid, p.start_ticks);
    let h = this.series.get(key);
    if (!h) {
      h = { t: [], cpu: [], rss: [] };
      this.series.set(key, h);
    }
    return h;
  }

  private point(h: Series, at: number, p: Proc) {
    if (h.t.length > 0 && h.t[h.t.length - 1] === at) {
      // The same sample again (a resync): its figures replace the point's.
      h.cpu[h.cpu.length - 1] = p.cpu_percent ?? 0;
      h.rss[h.rss.length - 1] = p.rss_bytes;
      return;
    }
    h.t.push(at);
    h.cpu.push(p.cpu_percent ?? 0);
    h.rss.push(p.rss_bytes);
    if (h.t.length > this.limit) {
      h.t.shift();
      h.cpu.shift();
      h.rss.shift();
    }
  }
}
