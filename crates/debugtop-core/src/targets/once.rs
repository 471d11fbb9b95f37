//! One remote action: run `debugtop-cli --hello <action> --json` on a target, check the hello,
//! and hand back the body and exit status. Output is capped, the whole run has a deadline, and
//! the child is killed if we stop waiting.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::process::Command;

use super::command::{classify, invocation, tidy, Engines};
use super::hello::check_hello;
use super::MAX_LINE;
use crate::error::{Error, Result};
use crate::model::{Hello, Target, TargetFailure};

/// What the far side answered.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Who answered.
    pub hello: Hello,
    /// Everything after the hello line.
    pub body: String,
    /// Its exit status (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Its stderr (capped, tidied).
    pub stderr: String,
}

fn fail(target: &Target, failure: TargetFailure, detail: String) -> Error {
    Error::Target {
        target: target.to_string(),
        failure,
        detail,
    }
}

/// Starts a target's command (stdin closed, stdout and stderr piped, killed when dropped).
pub fn start(
    target: &Target,
    remote: &[String],
    engines: &Engines,
) -> Result<tokio::process::Child> {
    let inv = invocation(target, remote, engines).ok_or_else(|| {
        fail(
            target,
            TargetFailure::NoEngine,
            "the local target runs in process, not through a command".to_owned(),
        )
    })?;
    Command::new(&inv.program)
        .args(&inv.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            let detail = if e.kind() == std::io::ErrorKind::NotFound {
                format!(
                    "{} is not installed on this machine (or not on PATH)",
                    inv.program
                )
            } else {
                format!("cannot start {}: {e}", inv.program)
            };
            fail(target, TargetFailure::NoEngine, detail)
        })
}

/// Reads at most `cap` bytes of `r` (the rest is drained and dropped).
pub async fn read_capped(r: impl AsyncRead + Unpin, cap: u64) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut limited = r.take(cap);
    let _ = limited.read_to_end(&mut buf).await;
    let mut rest = limited.into_inner();
    let _ = tokio::io::copy(&mut rest, &mut tokio::io::sink()).await;
    buf
}

/// Runs `debugtop-cli <remote…>` on `target` (the remote arguments must start with `--hello`)
/// within `deadline`.
pub async fn run_once(
    target: &Target,
    remote: &[String],
    deadline: Duration,
    engines: &Engines,
) -> Result<Answer> {
    let mut child = start(target, remote, engines)?;
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(fail(
            target,
            TargetFailure::Lost,
            "no pipes to the command".to_owned(),
        ));
    };
    let work = async {
        let stderr = tokio::spawn(read_capped(err, 64 << 10));
        let mut out = BufReader::new(out);
        let mut first = Vec::new();
        let _ = (&mut out)
            .take(MAX_LINE)
            .read_until(b'\n', &mut first)
            .await;
        let body = read_capped(out, MAX_LINE).await;
        let status = child.wait().await.ok();
        let stderr = stderr.await.unwrap_or_default();
        (first, body, status.and_then(|s| s.code()), stderr)
    };
    let (first, body, code, stderr) = tokio::time::timeout(deadline, work).await.map_err(|_| {
        fail(
            target,
            TargetFailure::Stalled,
            format!(
                "no answer within {} s (a slow link, or a prompt waiting for input?)",
                deadline.as_secs()
            ),
        )
    })?;
    let stderr = tidy(&String::from_utf8_lossy(&stderr), 4000);
    if first.iter().all(u8::is_ascii_whitespace) {
        let (failure, detail) = classify(target, code, &stderr);
        return Err(fail(target, failure, detail));
    }
    let hello = check_hello(target, first.trim_ascii())?;
    Ok(Answer {
        hello,
        body: String::from_utf8_lossy(&body).into_owned(),
        code,
        stderr,
    })
}
