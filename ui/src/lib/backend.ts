// The one place the UI talks to the backend. Types come from the Rust model (ts-rs); the UI
// never polls: live updates arrive on a channel pushed by the backend's sampler.
import { Channel, invoke } from '@tauri-apps/api/core';
import type { Update } from './bindings/Update';
import type { Snapshot } from './bindings/Snapshot';
import type { KillPlan } from './bindings/KillPlan';
import type { KillReport } from './bindings/KillReport';
import type { KillRequest } from './bindings/KillRequest';
import type { Progress } from './bindings/Progress';
import type { AuditResult } from './bindings/AuditResult';
import type { Settings } from './bindings/Settings';
import type { ExportFormat } from './bindings/ExportFormat';

export function subscribe(onUpdate: (u: Update) => void): Promise<void> {
  const channel = new Channel<Update>();
  channel.onmessage = onUpdate;
  return invoke('subscribe', { onUpdate: channel });
}

export const currentSnapshot = () => invoke<Snapshot | null>('current_snapshot');
export const planKill = (request: KillRequest) => invoke<KillPlan>('plan_kill', { request });

export function executeKill(plan: KillPlan, onProgress: (p: Progress) => void): Promise<KillReport> {
  const channel = new Channel<Progress>();
  channel.onmessage = onProgress;
  return invoke<KillReport>('execute_kill', { plan, onProgress: channel });
}

export const runAudit = () => invoke<AuditResult>('run_audit');
export const exportSnapshot = (format: ExportFormat) => invoke<string | null>('export_snapshot', { format });
export const openSnapshot = () => invoke<Snapshot | null>('open_snapshot');
export const closeSnapshot = () => invoke<void>('close_snapshot');
export const getSettings = () => invoke<Settings>('get_settings');
export const setSettings = (settings: Settings) => invoke<Settings>('set_settings', { settings });
export const setPaused = (paused: boolean) => invoke<void>('set_paused', { paused });
export const startDemo = () => invoke<string>('start_demo');

/** Errors from the backend arrive as strings (the Rust error's message). */
export function errorText(e: unknown): string {
  return typeof e === 'string' ? e : e instanceof Error ? e.message : JSON.stringify(e);
}
