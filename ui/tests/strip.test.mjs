// The timeline strip's buckets (src/lib/strip.ts, what the window draws): fitted to the stretch
// the events cover, so a burst is spread over the axis instead of landing in its last pixel.
// Runs in node: strip.ts is pure, its types stripped by TypeScript's own transpiler.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadLib } from './load-ts.mjs';

const load = () => loadLib('strip');

const at = (s) => new Date(Date.UTC(2026, 11, 3, 15, 0, 0) + s * 1000).toISOString();

test('a burst of start-up events is spread over the axis, not piled into its last bucket', async () => {
  const { strip, stripLabel } = await load();
  // Twenty events over 8 seconds (a server and its sessions appearing).
  const events = Array.from({ length: 20 }, (_, i) => ({ at: at(i * 0.4), kind: i % 5 === 0 ? 'stage' : 'process-appeared' }));
  const s = strip(events);
  assert.equal(s.bucket, 1);
  assert.equal(stripLabel(s.bucket), 'events per 1 s over the last 1 minute');
  const used = s.all.filter((n) => n > 0).length;
  assert.ok(used >= 8, `spread over ${used} buckets`);
  assert.equal(s.all.reduce((a, b) => a + b, 0), 20, 'every event counted');
  assert.equal(s.stages.reduce((a, b) => a + b, 0), 4);
});

test('ten minutes of events take 10 s buckets and the newest, on a bucket edge, is counted', async () => {
  const { strip, stripLabel, BUCKETS } = await load();
  const events = Array.from({ length: 60 }, (_, i) => ({ at: at(i * 10), kind: 'log' }));
  const s = strip(events);
  assert.equal(s.bucket, 10);
  assert.equal(stripLabel(s.bucket), 'events per 10 s over the last 10 minutes');
  assert.equal(s.xs.length, BUCKETS);
  assert.equal(s.all.reduce((a, b) => a + b, 0), 60, 'the edge event is inside the axis');
  assert.equal(s.all[BUCKETS - 1], 1);
});

test('between the two: two and a half minutes take 5 s buckets; no events, an empty strip', async () => {
  const { strip, stripLabel } = await load();
  const s = strip([{ at: at(0), kind: 'log' }, { at: at(150), kind: 'finding-raised' }]);
  assert.equal(s.bucket, 5);
  assert.equal(stripLabel(5), 'events per 5 s over the last 5 minutes');
  assert.equal(s.raised.reduce((a, b) => a + b, 0), 1);
  const empty = strip([]);
  assert.equal(empty.all.reduce((a, b) => a + b, 0), 0);
});

test('the time axis: one row, the clock on the first tick and where the minute turns', async () => {
  const { tickLabel } = await load();
  const t0 = Date.UTC(2026, 11, 3, 15, 47, 55) / 1000;
  const ticks = [t0, t0 + 5, t0 + 10];
  const labels = ticks.map((v, i) => tickLabel(v, i, ticks[i - 1]));
  assert.match(labels[0], /^\d\d:47:55$/);
  assert.match(labels[1], /^\d\d:48:00$/, 'the minute turned');
  assert.equal(labels[2], ':05');
});
