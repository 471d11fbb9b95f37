// Pure formatting helpers (no DOM): numbers and times as people read them.
import type { FdKind } from './bindings/FdKind';
import type { McpEvidence } from './bindings/McpEvidence';
import type { Proc } from './bindings/Proc';
import { STATE_WORDS } from './bindings/words';

export { HOST_TITLE } from './bindings/words';

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

export function cpu(p: number | null | undefined): string {
  return p == null ? '–' : `${p.toFixed(1)} %`;
}

export function shortId(id: string | null | undefined): string {
  return id ? id.slice(0, 8) : '–';
}

export function age(fromIso: string, now: number = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(fromIso)) / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** The one formatter of clock times, made at first use with the engine's default locale and
 * time zone (a change of either while the window is open is not followed).
 * `toLocaleTimeString` makes a new ICU date formatter at every call — in the
 * window's JavaScriptCore some 25 KB of native memory, given back only when the engine next
 * collects — and the timeline and the finding cards call it for every line they draw: at
 * 5,000 orphans that was 80 MB of the web process's malloc heap, kept by it after. */
let timeFormat: Intl.DateTimeFormat | undefined;

/** A time of day as `toLocaleTimeString` writes it (hours, minutes, seconds). */
export function clock(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  timeFormat ??= new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: 'numeric', second: 'numeric' });
  return timeFormat.format(d);
}

export function stateWord(s: Proc['state'] | null | undefined): string {
  return s ? (STATE_WORDS[s] ?? 'unknown') : '';
}

export const ROLE_ICON: Record<string, string> = {
  server: '◆',
  worker: '⚙',
  adapter: '⇄',
  launcher: '↗',
  debuggee: '▶',
  watchdog: '◉',
  host: '⌂',
  wrapper: '↳',
  other: '·',
};

export const KIND_ICON: Record<string, string> = {
  server: '◆',
  'gone-server': '✝',
  'remote-server': '☁',
  host: '⌂',
  'gone-host': '✝',
  'http-session': '⌁',
  'debug-session': '⬡',
  process: '·',
};

/** A standard stream, as `ls -l /proc/<pid>/fd` would show it. */
export function fdWord(f: FdKind | null | undefined): string {
  if (!f) return '–';
  switch (f.type) {
    case 'pipe':
      return `pipe:[${f.inode}]`;
    case 'socket':
      return `socket:[${f.inode}]`;
    case 'tty':
      return 'tty';
    case 'null':
      return '/dev/null';
    case 'other':
      return 'file';
    default:
      return 'unknown';
  }
}

/** Why a process counts as an MCP server, in words. */
export function mcpWord(m: McpEvidence | null | undefined): string {
  if (!m) return '';
  switch (m.type) {
    case 'argv':
      return `argv says MCP (${m.arg})`;
    case 'package':
      return `${m.file} says ${m.says}`;
    default:
      return 'spawned by an MCP host over stdio pipes';
  }
}

/** A shape beside each severity's colour, so it reads without colour (red-green blindness). */
export const SEVERITY_MARK: Record<string, string> = { critical: '▲', warning: '◆', info: '●' };
