// The one place the UI talks to the backend. Types come from the Rust model (ts-rs); the UI
// never polls: live updates arrive on a channel pushed by the backend's sampler.
import { Channel, invoke } from '@tauri-apps/api/core';
import type { ViewMessage } from './bindings/ViewMessage';
import type { Snapshot } from './bindings/Snapshot';
import type { HeldPlan } from './bindings/HeldPlan';
import type { KillReport } from './bindings/KillReport';
import type { KillRequest } from './bindings/KillRequest';
import type { Progress } from './bindings/Progress';
import type { AuditResult } from './bindings/AuditResult';
import type { Settings } from './bindings/Settings';
import type { ExportFormat } from './bindings/ExportFormat';
import type { TargetStatus } from './bindings/TargetStatus';

/**
 * Live updates — the whole snapshot, then what changed since the message before — and tick
 * errors (`null` once ticks succeed again).
 */
export function subscribe(onUpdate: (m: ViewMessage) => void, onError: (e: string | null) => void): Promise<void> {
  const updates = new Channel<ViewMessage>();
  updates.onmessage = onUpdate;
  const errors = new Channel<string | null>();
  errors.onmessage = onError;
  return invoke('subscribe', { onUpdate: updates, onError: errors });
}

/** Asks for the whole snapshot again (a message did not follow the one the view has). */
export const resync = () => invoke<void>('resync');
export const currentSnapshot = () => invoke<Snapshot | null>('current_snapshot');
/** Plans live in the backend: the UI shows a held plan and executes it by id, once. */
export const planKill = (request: KillRequest) => invoke<HeldPlan>('plan_kill', { request });

export function executeKill(planId: number, onProgress: (p: Progress) => void): Promise<KillReport> {
  const channel = new Channel<Progress>();
  channel.onmessage = onProgress;
  return invoke<KillReport>('execute_kill', { planId, onProgress: channel });
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

/** Every target's status (local first), pushed by the backend at most twice a second. */
export function subscribeTargets(onStatus: (s: TargetStatus[]) => void): Promise<void> {
  const statuses = new Channel<TargetStatus[]>();
  statuses.onmessage = onStatus;
  return invoke('subscribe_targets', { onStatus: statuses });
}
/** Adds a remote target by its text (`ssh:box`, `docker:c`, `kubectl:pod`, `cmd:…`) and shows it. */
export const addTarget = (text: string) => invoke<Settings>('add_target', { text });
export const removeTarget = (target: string) => invoke<Settings>('remove_target', { target });
export const selectTarget = (target: string) => invoke<Settings>('select_target', { target });
