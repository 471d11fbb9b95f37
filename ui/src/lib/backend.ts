// The one place the UI talks to the backend. Types come from the Rust model (ts-rs).
import { invoke } from '@tauri-apps/api/core';
import type { Snapshot } from './bindings/Snapshot';

export async function firstSnapshot(): Promise<Snapshot> {
  return invoke<Snapshot>('first_snapshot');
}
