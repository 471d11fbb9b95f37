// Pure formatting helpers (no DOM): numbers and times as people read them.
import type { Proc } from './bindings/Proc';

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

export function cpu(p: number | null): string {
  return p === null ? '–' : `${p.toFixed(1)} %`;
}

export function shortId(id: string | null): string {
  return id ? id.slice(0, 8) : '–';
}

const STATE_WORDS: Record<string, string> = {
  R: 'running',
  S: 'sleeping',
  D: 'disk wait',
  Z: 'zombie',
  T: 'stopped',
  t: 'traced',
  X: 'dead',
  I: 'idle',
  P: 'parked',
  K: 'wakekill',
  W: 'waking',
  '?': 'unknown',
};

export function stateWord(s: Proc['state']): string {
  return STATE_WORDS[s] ?? 'unknown';
}
