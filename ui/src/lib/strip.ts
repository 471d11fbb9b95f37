// The timeline strip's buckets, fitted to what it shows: the bucket size grows with the
// stretch the events cover (1 s buckets for a minute of events, up to 10 s for the ten minutes
// the timeline keeps), so a burst of start-up events is spread over the axis instead of all
// falling into its last pixel. Pure: no DOM, tested in node.

/** Buckets drawn. */
export const BUCKETS = 60;
/** Bucket sizes tried, in seconds, smallest first: 60 of the largest cover ten minutes. */
export const SIZES = [1, 2, 5, 10];

export interface Strip {
  /** Each bucket's start, seconds since the epoch. */
  xs: number[];
  /** Every event, findings raised and session start stages, per bucket. */
  all: number[];
  raised: number[];
  stages: number[];
  /** Seconds per bucket. */
  bucket: number;
}

/** The events (`at`: an ISO time, `kind`) counted into BUCKETS buckets ending with the newest. */
export function strip(events: { at: string; kind: string }[]): Strip {
  const times = events.map((e) => Date.parse(e.at) / 1000).filter((t) => Number.isFinite(t));
  const last = times.length ? Math.max(...times) : 0;
  const first = times.length ? Math.min(...times) : 0;
  const bucket = SIZES.find((s) => s * BUCKETS > last - first) ?? SIZES[SIZES.length - 1];
  // The newest event falls inside the last bucket (never on its end, outside the axis).
  const end = (Math.floor(last / bucket) + 1) * bucket;
  const start = end - BUCKETS * bucket;
  const xs = Array.from({ length: BUCKETS }, (_, i) => start + i * bucket);
  const all = new Array(BUCKETS).fill(0);
  const raised = new Array(BUCKETS).fill(0);
  const stages = new Array(BUCKETS).fill(0);
  for (const e of events) {
    const b = Math.floor((Date.parse(e.at) / 1000 - start) / bucket);
    if (!(b >= 0 && b < BUCKETS)) continue;
    all[b] += 1;
    if (e.kind === 'finding-raised') raised[b] += 1;
    if (e.kind === 'stage') stages[b] += 1;
  }
  return { xs, all, raised, stages, bucket };
}

/** What the strip shows, in words: "events per 2 s over the last 2 minutes". */
export function stripLabel(bucket: number): string {
  const span = bucket * BUCKETS;
  const over = span % 60 === 0 ? `${span / 60} minute${span === 60 ? '' : 's'}` : `${span} s`;
  return `events per ${bucket} s over the last ${over}`;
}

/** A tick of the strip's time axis: the full clock time on the first tick and where the
 * minute changes, else only its seconds (one row of labels that never overlap). */
export function tickLabel(v: number, i: number, prev: number | undefined): string {
  const d = new Date(v * 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  const minute = Math.floor(v / 60);
  const whole = i === 0 || prev === undefined || Math.floor(prev / 60) !== minute;
  return whole ? `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}` : `:${pad(d.getSeconds())}`;
}
