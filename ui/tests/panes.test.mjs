// What the shell keeps and picks for the detail pane (src/lib/history.ts, src/lib/detail.ts):
// a process's CPU and memory history by its identity, bounded and pruned; and the selected
// node's parts picked from the snapshot's. Runs in node over the UI's own fixture snapshot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadLib } from './load-ts.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const sample = () => JSON.parse(fs.readFileSync(path.join(here, 'fixtures', 'sample-snapshot.json'), 'utf8'));
const at = (s) => new Date(Date.UTC(2026, 11, 3, 15, 0, 0) + s * 1000).toISOString();
const proc = (pid, ticks, cpu) => ({ pid, start_ticks: ticks, cpu_percent: cpu, rss_bytes: 1000 * pid });

test('a history is kept by identity: a new process with a reused pid starts its own', async () => {
  const { History } = await loadLib('history');
  const h = new History(3);
  const a = proc(10, 100, 1);
  h.record(at(0), [a], [a]);
  h.record(at(1), [{ ...a, cpu_percent: 2 }], [a]);
  assert.deepEqual(h.until(a, Date.parse(at(1)))?.cpu, [1, 2]);
  // The pid is reused by another process (other start ticks): no history of its own yet.
  const b = proc(10, 900, 50);
  assert.equal(h.until(b, Date.parse(at(1))), undefined);
  h.record(at(2), [b], [b]);
  assert.deepEqual(h.until(b, Date.parse(at(2)))?.cpu, [50]);
  assert.equal(h.size, 1, 'the gone process is forgotten');
});

test('a history is bounded, a resync replaces its last point, and the last value is held', async () => {
  const { History } = await loadLib('history');
  const h = new History(3);
  const p = proc(10, 100, 0);
  for (const s of [0, 1, 2, 3, 4]) h.record(at(s), [{ ...p, cpu_percent: s }], [p]);
  assert.deepEqual(h.until(p, Date.parse(at(4)))?.cpu, [2, 3, 4]);
  h.record(at(4), [{ ...p, cpu_percent: 9 }], [p]);
  assert.deepEqual(h.until(p, Date.parse(at(4)))?.cpu, [2, 3, 9]);
  const later = h.until(p, Date.parse(at(10)));
  assert.deepEqual(later?.cpu, [2, 3, 9, 9], 'held up to the snapshot time');
  assert.equal(later?.t.at(-1), Date.parse(at(10)) / 1000);
});

test("the detail pane's parts: a process's own findings, a session's log lines, nothing else", async () => {
  const { detailParts } = await loadLib('detail');
  const { procsByPid } = await loadLib('tree');
  const s = sample();
  const procs = procsByPid(s.processes);
  const parts = (node) => detailParts(node, procs, s.servers, s.findings, s.timeline, s.debug_sessions);
  const leaked = s.findings.find((f) => f.kind === 'leaked-adapter');
  assert.ok(leaked, 'the fixture has a leaked adapter');
  const adapter = { kind: 'process', pid: leaked.pids[0], session_id: leaked.session_id };
  const p = parts(adapter);
  assert.equal(p.proc?.pid, leaked.pids[0]);
  assert.deepEqual(p.findings.map((f) => f.id), [leaked.id]);
  assert.equal(p.session?.id, leaked.session_id);
  assert.ok(p.logLines.every((e) => e.session_id === leaked.session_id && (e.kind === 'log' || e.kind === 'stage')));
  // Near miss: a server row has its server and none of the adapter's findings.
  const server = s.servers[0];
  const sp = parts({ kind: 'server', pid: server.pid, session_id: null });
  assert.equal(sp.server?.pid, server.pid);
  assert.deepEqual(sp.findings, []);
  assert.deepEqual(parts(null), { proc: undefined, server: undefined, findings: [], logLines: [], session: undefined });
});

test('clock times come from one formatter, as toLocaleTimeString writes them (regression: a formatter per line)', async () => {
  const made = [];
  const Real = Intl.DateTimeFormat;
  Intl.DateTimeFormat = function (...args) {
    made.push(args);
    return new Real(...args);
  };
  // Not UTC (where this runs, likely): a formatter fixed to UTC or to one locale would differ.
  const tz = process.env.TZ;
  process.env.TZ = 'Asia/Kolkata';
  try {
    const { clock } = await loadLib('format');
    const times = Array.from({ length: 200 }, (_, i) => at(i * 37));
    for (const t of times) assert.equal(clock(t), new Date(t).toLocaleTimeString());
    assert.equal(made.length, 1, `${made.length} formatters for ${times.length} times`);
    assert.equal(clock('not a time'), 'not a time');
  } finally {
    Intl.DateTimeFormat = Real;
    if (tz === undefined) delete process.env.TZ;
    else process.env.TZ = tz;
  }
});
