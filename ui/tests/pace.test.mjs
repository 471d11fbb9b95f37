// When an update reaches the screen (src/lib/pace.ts): small moves of figures wait for the next
// drawing, anything else is drawn at once. Each rule with its near miss, over the UI's own
// fixture snapshot kept by the real live view (src/lib/delta.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadLib } from './load-ts.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const sample = () => JSON.parse(fs.readFileSync(path.join(here, 'fixtures', 'sample-snapshot.json'), 'utf8'));

/** A live view holding the sample (its first source ok, then `edit`ed), what messages are
 * weighed against, and two processes of it. */
async function held(edit = () => {}) {
  const { LiveView } = await loadLib('delta');
  const pace = await loadLib('pace');
  const view = new LiveView();
  const snap = sample();
  // One process at known figures: 50 % CPU, 100 MiB.
  const p = snap.processes.find((x) => x.cpu_percent !== null);
  assert.ok(p, 'the sample has a process with figures');
  Object.assign(p, { cpu_percent: 50, rss_bytes: 100 * 2 ** 20 });
  // And one whose CPU is not known yet (its first tick).
  const fresh = snap.processes.find((x) => x !== p);
  assert.ok(fresh, 'the sample has a second process');
  fresh.cpu_percent = null;
  assert.ok(snap.sources.length > 0, 'the sample has a source');
  snap.sources[0] = { ...snap.sources[0], state: 'ok' };
  edit(snap);
  assert.equal(view.receive({ type: 'full', seq: 1, snapshot: snap, events: [] }), 'changed');
  const drawn = new pace.Drawn();
  const before = { proc: (p) => drawn.proc(p, view.procOf(p)), sources: snap.sources };
  const changes = (more) => ({ type: 'changes', base: 1, seq: 2, taken_at: snap.taken_at, ...more });
  const small = (more) => pace.onlySmallMoves(changes(more), before);
  return { pace, view, drawn, snap, p: { ...p }, fresh: { ...fresh }, small };
}

test('a tick that moves CPU and memory a little, and the sources in words only, is a small move', async () => {
  const { pace, snap, p, small } = await held();
  assert.ok(small({}), 'only the clock moved');
  const moved = { ...p, cpu_percent: p.cpu_percent + pace.CPU_STEP - 0.1, rss_bytes: Math.floor(p.rss_bytes * (1 + pace.RSS_STEP / 2)) };
  assert.ok(small({ processes: { upsert: [moved] } }));
  const worded = snap.sources.map((s) => ({ ...s, detail: `${s.detail} (again)` }));
  assert.ok(small({ processes: { upsert: [moved] }, sources: worded }));
});

test('a figure that moves by a step, or from none, is drawn at once', async () => {
  const { pace, p, fresh, small } = await held();
  const cpu = (c) => small({ processes: { upsert: [{ ...p, cpu_percent: c }] } });
  const rss = (r) => small({ processes: { upsert: [{ ...p, rss_bytes: r }] } });
  assert.ok(cpu(50 + pace.CPU_STEP - 0.1) && cpu(50 - pace.CPU_STEP + 0.1), 'less than a step either way');
  assert.ok(!cpu(50 + pace.CPU_STEP) && !cpu(50 - pace.CPU_STEP), 'a whole step either way');
  assert.ok(!cpu(null), 'CPU no longer known');
  assert.ok(!small({ processes: { upsert: [{ ...fresh, cpu_percent: 0 }] } }), 'CPU known for the first time');
  const mib = 2 ** 20;
  assert.ok(rss(109 * mib) && rss(91 * mib), 'memory by less than a tenth');
  assert.ok(!rss(110 * mib) && !rss(90 * mib), 'memory by a tenth either way');
});

test('small moves are measured from what is drawn: moves that wait add up to a step', async () => {
  const { view, drawn, p, small } = await held();
  const step = (cpu) => ({ processes: { upsert: [{ ...p, cpu_percent: cpu }] } });
  // 50 is drawn; 58 waits (as App.svelte does: the screen's process kept, then the message applied).
  assert.ok(small(step(58)));
  drawn.hold([{ ...p }], (q) => view.procOf(q));
  assert.equal(view.receive({ type: 'changes', base: 1, seq: 2, taken_at: new Date().toISOString(), ...step(58) }), 'changed');
  // 66 is 8 from the last tick but 16 from what is drawn.
  const next = (more) => small({ base: 2, seq: 3, ...more });
  assert.ok(!next(step(66)), 'a climb that adds up to a step');
  assert.ok(next(step(55)), 'a move back within a step of what is drawn');
  drawn.clear();
  assert.ok(next(step(66)), 'once drawn, measured from the new figure');
});

test('a process that changes anything but its figures, or is new, or goes, is drawn at once', async () => {
  const { p, small } = await held();
  assert.ok(!small({ processes: { upsert: [{ ...p, state: p.state === 'R' ? 'S' : 'R' }] } }), 'a state');
  assert.ok(!small({ processes: { upsert: [{ ...p, argv: [...p.argv, '--more'] }] } }), 'a nested list');
  assert.ok(!small({ processes: { upsert: [{ ...p, markers: { ...p.markers, extra: 'x' } }] } }), 'a nested field it did not have');
  assert.ok(p.argv.length > 0, 'the process has a command line');
  assert.ok(!small({ processes: { upsert: [{ ...p, argv: ['other', ...p.argv.slice(1)] }] } }), 'a nested value');
  assert.ok(!small({ processes: { upsert: [{ ...p, stdio_quiet_since: '2026-12-05T00:00:00Z' }] } }), 'a field it did not have');
  assert.ok(!small({ processes: { upsert: [{ ...p, start_ticks: p.start_ticks + 1 }] } }), 'a new process (its pid reused)');
  assert.ok(!small({ processes: { remove: [`${p.pid}.${p.start_ticks}`] } }), 'a process gone');
  assert.ok(!small({ processes: { upsert: [], order: [`${p.pid}.${p.start_ticks}`] } }), 'a new order');
});

test('anything else a message carries is drawn at once', async () => {
  const { snap, small } = await held();
  const s = snap.sources[0];
  assert.ok(!small({ sources: [{ ...s, state: s.state === 'ok' ? 'failed' : 'ok' }, ...snap.sources.slice(1)] }), "a source's state");
  assert.ok(!small({ sources: snap.sources.slice(1) }), 'a source gone');
  const failing = { ...s, state: 'failed', detail: 'connection refused' };
  const { small: smallFailing } = await held((snap2) => (snap2.sources[0] = failing));
  assert.ok(!smallFailing({ sources: [{ ...failing, detail: 'timed out' }, ...snap.sources.slice(1)] }), "a failing source's words (on screen)");
  assert.ok(small({ sources: [{ ...s, detail: 'other words' }, ...snap.sources.slice(1)] }), "an ok source's words (on hover only)");
  assert.ok(!small({ future_part: [] }), 'a part the protocol may add later');
  assert.ok(!small({ events: [{ kind: 'x' }] }), 'an event');
  for (const part of ['head', 'servers', 'http_sessions', 'debug_sessions', 'tree', 'findings', 'groups', 'timeline', 'log_excerpts', 'environment']) {
    assert.ok(!small({ [part]: part === 'tree' || part === 'findings' ? { upsert: [] } : [] }), part);
  }
});

test('small moves are drawn once the pause has passed by the snapshots clock; anything else at once', async () => {
  const { Pace, SMALL_MOVES_EVERY_MS } = await loadLib('pace');
  const pace = new Pace();
  const t0 = Date.parse('2026-12-05T00:00:00Z');
  assert.ok(pace.draw(true, t0), 'the first update is drawn');
  const drawn = [1, 2, 3, 4, 5, 6].map((s) => pace.draw(true, t0 + s * 1000));
  const every = Math.ceil(SMALL_MOVES_EVERY_MS / 1000);
  assert.deepEqual(drawn, [1, 2, 3, 4, 5, 6].map((s) => s % every === 0), 'at a 1 s interval, every fifth tick');
  assert.ok(pace.draw(false, t0 + 6500), 'a change that is not small: at once');
  assert.ok(!pace.draw(true, t0 + 7000), 'and the pause starts again from it');
  assert.ok(pace.draw(true, t0 + 1000), 'a clock that went back: drawn');
  assert.ok(pace.draw(true, Number.NaN), 'no time: drawn');
  pace.reset();
  assert.ok(pace.draw(true, t0 + 1000), 'after a reset (another target) the first is drawn');
});
