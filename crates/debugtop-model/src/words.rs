//! The words the window shows for the model's states and kinds, said once, here: the UI's
//! `bindings/words.ts` is generated from these functions when the TypeScript types are
//! (`cargo test -p debugtop-model`), so a state or a kind added in Rust is named in the window
//! without anyone copying a table. (A stage's words travel with it: `StageMark::text`.)

use strum::IntoEnumIterator;

use super::{FindingKind, HostKind, ProcId, ProcState};

/// The generated TypeScript module.
pub fn typescript() -> String {
    let mut out = String::from(
        "// Generated from the Rust model (model::words) by `cargo test -p debugtop-model`. Do not edit.\n\n",
    );
    let entry = |k: String, v: &str| format!("  {}: {},\n", quoted(&k), quoted(v));
    out.push_str("/** A process state (the kernel's letter) in words. */\n");
    out.push_str("export const STATE_WORDS: Record<string, string> = {\n");
    for s in ProcState::ALL {
        out.push_str(&entry(s.letter().to_string(), s.word()));
    }
    out.push_str("};\n\n/** How a person names an MCP host kind. */\n");
    out.push_str("export const HOST_TITLE: Record<string, string> = {\n");
    for h in HostKind::ALL {
        out.push_str(&entry(h.to_string(), h.title()));
    }
    out.push_str("};\n\n/** The finding kinds about a debug session itself, not a process. */\n");
    let session: Vec<String> = FindingKind::iter()
        .filter(|k| k.about_session())
        .map(|k| quoted(k.as_str()))
        .collect();
    out.push_str(&format!(
        "export const SESSION_KINDS: ReadonlySet<string> = new Set([{}]);\n",
        session.join(", ")
    ));
    out.push_str(&proc_id());
    out
}

/// A process identity as the core spells it (`ProcId`'s `Display`: pid, separator, ticks).
fn proc_id() -> String {
    let sample = ProcId::new(1, 2).to_string();
    let sep = sample
        .strip_prefix('1')
        .and_then(|s| s.strip_suffix('2'))
        .unwrap_or(".");
    format!(
        "\n/** A process identity as the core spells it: pid and start ticks (`ProcId`). */\n\
         export type ProcId = string;\n\n\
         /** The identity of the process with this pid and start ticks. */\n\
         export function procId(pid: number, startTicks: number): ProcId {{\n  return `${{pid}}{sep}${{startTicks}}`;\n}}\n"
    )
}

/// A TypeScript string literal (JSON's form is one).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `words.ts` beside the generated types (as ts-rs does for them); `make test`'s
    /// binding check fails if the committed file differs.
    #[test]
    fn export_words() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let dir =
            std::env::var("TS_RS_EXPORT_DIR").unwrap_or_else(|_| "ui/src/lib/bindings".into());
        let path = root.join(dir).join("words.ts");
        let written = std::fs::write(&path, typescript());
        assert!(written.is_ok(), "{}: {written:?}", path.display());
    }

    #[test]
    fn every_state_and_host_kind_has_its_word() {
        let ts = typescript();
        assert!(ts.contains("\"Z\": \"zombie\""), "{ts}");
        assert!(ts.contains("\"claude-code\": \"Claude Code\""), "{ts}");
        assert!(
            ts.contains("new Set([\"session-without-worker\", \"stuck-session\"])"),
            "{ts}"
        );
        assert!(ts.contains("return `${pid}.${startTicks}`;"), "{ts}");
    }
}
