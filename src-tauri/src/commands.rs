//! The IPC commands. Each is a thin call into the core.

use std::time::Duration;

use debugtop_core::sampler::{Config, Engine};
use debugtop_core::snapshot::Snapshot;

use crate::AppError;

/// One reconciled, redacted snapshot of the machine (two ticks, so CPU is filled in).
#[tauri::command]
pub async fn first_snapshot() -> Result<Snapshot, AppError> {
    let mut engine = Engine::new(Config::default())?;
    engine.tick().await?;
    tokio::time::sleep(Duration::from_millis(250)).await;
    Ok(engine.tick().await?.snapshot)
}

#[cfg(test)]
mod tests {
    use tauri::test::{get_ipc_response, mock_builder, mock_context, noop_assets, INVOKE_KEY};
    use tauri::webview::InvokeRequest;

    #[test]
    fn first_snapshot_answers_over_ipc() {
        let app = crate::setup(mock_builder())
            .build(mock_context(noop_assets()))
            .unwrap();
        let webview = tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
            .build()
            .unwrap();
        let res = get_ipc_response(
            &webview,
            InvokeRequest {
                cmd: "first_snapshot".into(),
                callback: tauri::ipc::CallbackFn(0),
                error: tauri::ipc::CallbackFn(1),
                url: "tauri://localhost".parse().unwrap(),
                body: tauri::ipc::InvokeBody::default(),
                headers: Default::default(),
                invoke_key: INVOKE_KEY.to_string(),
            },
        )
        .map(|b| b.deserialize::<serde_json::Value>().unwrap());
        let v = res.expect("command answered");
        assert_eq!(v["schema"], "debugtop.snapshot/1");
        assert!(v["sources"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("processes read"));
    }
}
