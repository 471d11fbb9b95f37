//! The hello line: the first line of every stream and remote answer, saying which debugtop is
//! speaking, in which stream version, on which host. A far side of another version, or a
//! command that prints something else (a login banner, a shell error), is a worded error
//! before a single update is parsed.

use crate::error::{Error, Result};
use crate::model::{Capability, Hello, HelloLine, Target, TargetFailure, STREAM_SCHEMA};

/// This build's hello.
pub fn local_hello() -> Hello {
    let kernel = crate::os::release().unwrap_or_else(|| std::env::consts::OS.to_owned());
    let mut capabilities = vec![
        Capability::Watch,
        Capability::Audit,
        Capability::Kill,
        Capability::Snapshot,
    ];
    if crate::os::privileged() {
        capabilities.push(Capability::AllUsers);
    }
    Hello {
        stream: STREAM_SCHEMA.to_owned(),
        debugtop: env!("CARGO_PKG_VERSION").to_owned(),
        snapshot_schema: crate::model::SCHEMA.to_owned(),
        host: hostname::get()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default(),
        kernel,
        capabilities,
    }
}

/// This build's hello line, as sent.
pub fn hello_line() -> String {
    serde_json::to_string(&HelloLine {
        hello: local_hello(),
    })
    .unwrap_or_default()
}

fn fail(target: &Target, failure: TargetFailure, detail: String) -> Error {
    Error::Target {
        target: target.to_string(),
        failure,
        detail,
    }
}

/// An engine's own error printed on stdout instead of the stream (docker 20.10 prints "OCI
/// runtime exec failed: … executable file not found" there), worded like the same text on
/// stderr would be.
fn engine_said(target: &Target, line: &[u8]) -> Option<Error> {
    let text = String::from_utf8_lossy(line);
    let (failure, detail) = super::command::classify(target, None, &text);
    (failure != TargetFailure::Lost).then(|| fail(target, failure, detail))
}

/// The longest first line read as a hello.
const MAX_HELLO: usize = 64 << 10;

/// Checks the first line a target printed: a hello of this stream version.
pub fn check_hello(target: &Target, line: &[u8]) -> Result<Hello> {
    let shown = super::command::tidy(&String::from_utf8_lossy(line), 120);
    let garbage = || {
        fail(
            target,
            TargetFailure::Garbage,
            format!(
                "it printed something that is not debugtop's stream: {shown:?} (a login banner or \
                 shell message on stdout? debugtop-cli must be the first thing to print)"
            ),
        )
    };
    // A hello is a few hundred bytes: a longer first line is not one (and is not built).
    if line.len() > MAX_HELLO {
        return Err(garbage());
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
        return Err(engine_said(target, line).unwrap_or_else(garbage));
    };
    let hello = value.get("hello").ok_or_else(garbage)?;
    let stream = hello.get("stream").and_then(|s| s.as_str()).unwrap_or("");
    let version = hello
        .get("debugtop")
        .and_then(|s| s.as_str())
        .unwrap_or("unknown");
    if stream != STREAM_SCHEMA {
        return Err(fail(
            target,
            TargetFailure::Incompatible,
            format!(
                "the far side speaks {} (debugtop {}), this debugtop speaks {STREAM_SCHEMA} \
                 (debugtop {}): install the same debugtop-cli version there",
                super::command::tidy(
                    if stream.is_empty() {
                        "no stream version"
                    } else {
                        stream
                    },
                    60
                ),
                super::command::tidy(version, 30),
                env!("CARGO_PKG_VERSION"),
            ),
        ));
    }
    serde_json::from_value(hello.clone()).map_err(|e| {
        fail(
            target,
            TargetFailure::Incompatible,
            format!("its hello line does not match {STREAM_SCHEMA}: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(line: &str) -> String {
        let t: Target = "cmd:x".parse().unwrap_or(Target::Local);
        match check_hello(&t, line.as_bytes()) {
            Ok(h) => format!("ok {}", h.host),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn our_own_hello_is_accepted() {
        let line = hello_line();
        assert!(said(&line).starts_with("ok "), "{line}");
    }

    #[test]
    fn another_version_garbage_and_banners_are_worded() {
        let other = hello_line().replace(STREAM_SCHEMA, "debugtop.stream/0");
        let e = said(&other);
        assert!(
            e.contains("speaks debugtop.stream/0") && e.contains("install the same"),
            "{e}"
        );
        let e = said("Welcome to Ubuntu 24.04 LTS\u{1b}[0m");
        assert!(
            e.contains("not debugtop's stream") && !e.contains('\u{1b}'),
            "{e}"
        );
        let e = said(r#"{"seq":1}"#);
        assert!(e.contains("not debugtop's stream"), "{e}");
        let e = said(r#"{"hello":{"stream":"debugtop.stream/1","host":3}}"#);
        assert!(e.contains("does not match"), "{e}");
        let e = said(r#"{"hello":{}}"#);
        assert!(e.contains("no stream version"), "{e}");
    }

    /// Regression: docker 20.10 prints a missing command's error on stdout; it read as garbage.
    #[test]
    fn docker_printing_its_exec_error_on_stdout_is_not_garbage() {
        let t: Target = "docker:web".parse().unwrap_or(Target::Local);
        let line = br#"OCI runtime exec failed: exec failed: unable to start container process: exec: "debugtop-cli": executable file not found in $PATH: unknown"#;
        match check_hello(&t, line) {
            Err(Error::Target {
                failure, detail, ..
            }) => {
                assert_eq!(failure, TargetFailure::NotInstalled, "{detail}");
                assert!(detail.contains("install debugtop-cli there"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
    }
}
