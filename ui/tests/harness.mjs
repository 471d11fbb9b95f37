// Browser-test harness: serves ui/dist on loopback and opens it in Debian's headless Chromium
// with the backend replaced by a mock IPC (window.__TAURI_INTERNALS__). The mock records every
// command and lets a test push channel messages, as the Rust sampler would.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const dist = path.join(here, '..', 'dist');
export const sample = JSON.parse(fs.readFileSync(path.join(here, 'fixtures', 'sample-snapshot.json'), 'utf8'));
/** Made by the Rust state step: a crashed MCP host's orphaned server, a containerised server. */
export const hostSample = JSON.parse(fs.readFileSync(path.join(here, 'fixtures', 'host-snapshot.json'), 'utf8'));

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml' };

export async function serve() {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const file = path.join(dist, url.pathname === '/' ? 'index.html' : path.normalize(url.pathname));
    if (!file.startsWith(dist) || !fs.existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, {
      'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream',
      // The same policy the app's webview enforces.
      'Content-Security-Policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'",
    });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${server.address().port}/` };
}

export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', '--disable-component-update', '--disable-sync'],
  });
}

/** The mock backend, installed before any page script runs. `responses` maps command → value. */
function installMock(responses) {
  const callbacks = new Map();
  let next = 1;
  window.__ipc = { calls: [], channels: {}, responses, alerts: 0 };
  window.alert = () => (window.__ipc.alerts += 1);
  window.__TAURI_INTERNALS__ = {
    metadata: { currentWindow: { label: 'main' }, currentWebview: { windowLabel: 'main', label: 'main' } },
    transformCallback(cb, once) {
      const id = next++;
      callbacks.set(id, (m) => {
        if (once) callbacks.delete(id);
        return cb(m);
      });
      return id;
    },
    unregisterCallback(id) {
      callbacks.delete(id);
    },
    runCallback(id, m) {
      callbacks.get(id)?.(m);
    },
    convertFileSrc: (p) => p,
    async invoke(cmd, args) {
      window.__ipc.calls.push({ cmd, args: JSON.parse(JSON.stringify(args ?? {})) });
      for (const [k, v] of Object.entries(args ?? {})) {
        const s = typeof v === 'string' ? v : v && typeof v.toJSON === 'function' ? v.toJSON() : null;
        if (typeof s === 'string' && s.startsWith('__CHANNEL__:')) {
          window.__ipc.channels[cmd + ':' + k] = { id: Number(s.slice(12)), index: 0 };
        }
      }
      const r = window.__ipc.responses[cmd];
      if (r && r.error) throw r.error;
      if (cmd === 'execute_kill') {
        const ch = window.__ipc.channels['execute_kill:onProgress'];
        for (const p of r.progress) {
          window.__TAURI_INTERNALS__.runCallback(ch.id, { message: p, index: ch.index++ });
        }
        return r.report;
      }
      return r === undefined ? null : r;
    },
  };
  window.__push = (cmdArg, message) => {
    const ch = window.__ipc.channels[cmdArg];
    window.__TAURI_INTERNALS__.runCallback(ch.id, { message, index: ch.index++ });
  };
}

export async function open(browser, url, responses = {}, init = null) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  if (init) await page.addInitScript(init);
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('dialog', async (d) => {
    errors.push(`dialog: ${d.message()}`);
    await d.dismiss();
  });
  const defaults = { get_settings: { interval_ms: 1000, grace_secs: 6, extra_servers: [], notify_critical: true } };
  await page.addInitScript(installMock, { ...defaults, ...responses });
  await page.goto(url);
  await page.waitForFunction(() => window.__ipc.channels['subscribe:onUpdate']);
  return { page, errors };
}

/** Sends one whole snapshot through the subscribe channel. */
export async function push(page, snapshot, seq = 1, events = []) {
  await page.evaluate(([snapshot, seq, events]) => window.__push('subscribe:onUpdate', { type: 'full', seq, snapshot, events }), [snapshot, seq, events]);
}

/** Sends changes (a `SnapshotChanges`) through the subscribe channel. */
export async function pushChanges(page, changes) {
  await page.evaluate((c) => window.__push('subscribe:onUpdate', { type: 'changes', ...c }), changes);
}

/**
 * Runs `act` (a function source, evaluated in the page) while counting DOM mutations under
 * each selector; returns the counts.
 */
export async function mutationsDuring(page, selectors, act, arg) {
  return page.evaluate(
    async ([selectors, act, arg]) => {
      const counts = {};
      const observers = selectors.map((sel) => {
        counts[sel] = { added: 0, removed: 0, text: 0, attrs: 0, clock: 0 };
        const mo = new MutationObserver((ms) => {
          for (const m of ms) {
            // Labels that follow the clock (a session's age) are counted apart.
            const el = m.target.nodeType === 3 ? m.target.parentElement : m.target;
            if (el?.closest('[data-clock]')) counts[sel].clock += 1;
            else if (m.type === 'childList') {
              counts[sel].added += m.addedNodes.length;
              counts[sel].removed += m.removedNodes.length;
            } else if (m.type === 'characterData') counts[sel].text += 1;
            else counts[sel].attrs += 1;
          }
        });
        const el = document.querySelector(sel);
        if (el) mo.observe(el, { subtree: true, childList: true, characterData: true, attributes: true });
        return mo;
      });
      await new Function('arg', `return (${act})(arg)`)(arg);
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r())));
      for (const mo of observers) mo.disconnect();
      return counts;
    },
    [selectors, act.toString(), arg],
  );
}

export function clone(x) {
  return JSON.parse(JSON.stringify(x));
}
