//! A target's live stream: `debugtop-cli --hello watch --json` on the far side, read line by
//! line into the latest update and a status. A stream that stalls is marked stale (the last
//! tree is kept, with its age) and, after a longer silence, restarted; a stream that ends is
//! retried with backoff (1 s doubling to a cap, reset after a good update). Each target has
//! its own task and publishes on its own `watch` channel, so a stalled target never blocks the
//! views or another target.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::command::{classify, tidy, Engines};
use super::hello::check_hello;
use super::once::{read_capped, start};
use super::MAX_LINE;
use crate::error::Error;
use crate::judging::Judging;
use crate::model::{Target, TargetFailure, TargetState, TargetStatus, Update};

/// How a stream is paced and judged.
#[derive(Debug, Clone)]
pub struct StreamConfig {
    /// How the far side looks and judges (its `watch` gets every setting as a flag).
    pub judging: Judging,
    /// Silence after which the tree is marked stale.
    pub stale_after: Duration,
    /// Silence after which the command is killed and restarted.
    pub restart_after: Duration,
    /// How long the hello line may take (connecting, logging in).
    pub hello_within: Duration,
    /// The first retry delay (doubled each failure).
    pub backoff_first: Duration,
    /// The longest retry delay.
    pub backoff_max: Duration,
    /// The programs that reach targets.
    pub engines: Engines,
}

impl Default for StreamConfig {
    fn default() -> Self {
        Self {
            judging: Judging::default(),
            stale_after: Duration::from_secs(5),
            restart_after: Duration::from_secs(45),
            hello_within: Duration::from_secs(30),
            backoff_first: Duration::from_secs(1),
            backoff_max: Duration::from_secs(30),
            engines: Engines::from_env(),
        }
    }
}

impl StreamConfig {
    /// The silences after which the tree is stale and the stream restarted, for the far side's
    /// interval: a far side told to look once a minute is not stale after five seconds.
    pub fn silences(&self) -> (Duration, Duration) {
        let interval = self.judging.interval;
        let stale = self.stale_after.max(interval.saturating_mul(2));
        (stale, self.restart_after.max(stale.saturating_mul(3)))
    }
}

/// What a target's channel holds: its status and its latest update.
#[derive(Debug, Clone)]
pub struct Feed {
    /// Where the stream stands.
    pub status: TargetStatus,
    /// The newest update (kept when the stream is stale).
    pub update: Option<Arc<Update>>,
}

/// A running stream.
#[derive(Debug)]
pub struct TargetFeed {
    /// The target.
    pub target: Target,
    /// Its status and latest update.
    pub feed: watch::Receiver<Feed>,
    /// The task; abort it (or drop the feed) to stop, which kills the command.
    pub task: JoinHandle<()>,
}

impl Drop for TargetFeed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How one connection ended.
struct Ended {
    failure: TargetFailure,
    detail: String,
    /// At least one update arrived on it.
    delivered: bool,
}

fn target_error(e: Error) -> (TargetFailure, String) {
    match e {
        Error::Target {
            failure, detail, ..
        } => (failure, detail),
        other => (TargetFailure::Lost, other.to_string()),
    }
}

/// Publishes changes to one target's feed.
struct Publisher {
    tx: watch::Sender<Feed>,
}

impl Publisher {
    fn set(&self, f: impl FnOnce(&mut Feed)) {
        self.tx.send_modify(f);
    }

    fn state(&self, state: TargetState, failure: Option<TargetFailure>, detail: String) {
        self.set(|feed| {
            let s = &mut feed.status;
            if s.state != state {
                s.since = Utc::now();
            }
            s.state = state;
            s.failure = failure;
            s.detail = detail;
        });
    }

    fn has_update(&self) -> bool {
        self.tx.borrow().update.is_some()
    }

    fn last_update_at(&self) -> Option<DateTime<Utc>> {
        self.tx.borrow().status.last_update_at
    }
}

/// Starts streaming `target` on the current runtime.
pub fn spawn_stream(target: Target, config: StreamConfig) -> TargetFeed {
    let status = TargetStatus {
        target: target.clone(),
        state: TargetState::Connecting,
        failure: None,
        detail: "connecting".to_owned(),
        hello: None,
        last_update_at: None,
        since: Utc::now(),
        attempts: 0,
        retry_at: None,
    };
    let (tx, rx) = watch::channel(Feed {
        status,
        update: None,
    });
    let pubr = Publisher { tx };
    let t = target.clone();
    let task = tokio::spawn(async move { run(t, config, pubr).await });
    TargetFeed {
        target,
        feed: rx,
        task,
    }
}

async fn run(target: Target, config: StreamConfig, pubr: Publisher) {
    let mut backoff = config.backoff_first;
    loop {
        pubr.set(|f| {
            f.status.attempts += 1;
            f.status.retry_at = None;
        });
        if !pubr.has_update() {
            pubr.state(TargetState::Connecting, None, "connecting".to_owned());
        }
        let ended = connect_once(&target, &config, &pubr).await;
        if ended.delivered {
            backoff = config.backoff_first;
        }
        let retry = Utc::now() + chrono::Duration::from_std(backoff).unwrap_or_default();
        let (state, detail) = if pubr.has_update() {
            let age = pubr.last_update_at().map_or(String::new(), |at| {
                format!(
                    "; showing the tree of {} ({} s old)",
                    at.format("%H:%M:%S"),
                    (Utc::now() - at).num_seconds()
                )
            });
            (TargetState::Stale, format!("{}{age}", ended.detail))
        } else {
            (TargetState::Failed, ended.detail)
        };
        pubr.state(
            state,
            Some(ended.failure),
            format!("{detail}; retrying in {} s", backoff.as_secs().max(1)),
        );
        pubr.set(|f| f.status.retry_at = Some(retry));
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(config.backoff_max);
    }
}

/// The command a stream of `target` runs here, as a person should read it before it runs
/// (shell-quoted; its far-side words included): what the app's confirmation names.
pub fn stream_command(target: &Target, config: &StreamConfig) -> Option<String> {
    let inv = super::command::invocation(target, &watch_args(config), &config.engines)?;
    let words = std::iter::once(inv.program.as_str()).chain(inv.args.iter().map(String::as_str));
    Some(
        shlex::try_join(words)
            .unwrap_or_else(|_| format!("{} {}", inv.program, inv.args.join(" "))),
    )
}

fn watch_args(config: &StreamConfig) -> Vec<String> {
    let mut args: Vec<String> = ["--hello", "watch", "--json"].map(String::from).into();
    args.extend(config.judging.watch_flags());
    args
}

/// One connection: start, hello, updates until it ends or stalls for good.
async fn connect_once(target: &Target, config: &StreamConfig, pubr: &Publisher) -> Ended {
    let mut child = match start(target, &watch_args(config), &config.engines) {
        Ok(c) => c,
        Err(e) => {
            let (failure, detail) = target_error(e);
            return Ended {
                failure,
                detail,
                delivered: false,
            };
        }
    };
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        return Ended {
            failure: TargetFailure::Lost,
            detail: "no pipes to the command".to_owned(),
            delivered: false,
        };
    };
    let stderr = tokio::spawn(read_capped(err, 64 << 10));
    let mut lines = Lines::new(out);
    let outcome = read_stream(target, config, pubr, &mut lines).await;
    // The command may still run (stalled, or it sent garbage): it is killed here.
    let _ = child.start_kill();
    let code = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .ok()
        .and_then(Result::ok)
        .and_then(|s| s.code());
    let stderr = tokio::time::timeout(Duration::from_secs(2), stderr)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    match outcome {
        Outcome::Failed(failure, detail, delivered) => Ended {
            failure,
            detail,
            delivered,
        },
        Outcome::Eof(delivered) => {
            let stderr = String::from_utf8_lossy(&stderr);
            let (failure, detail) = if delivered {
                let (_, why) = classify(target, code, &stderr);
                (TargetFailure::Lost, format!("the stream ended: {why}"))
            } else {
                classify(target, code, &stderr)
            };
            Ended {
                failure,
                detail,
                delivered,
            }
        }
    }
}

enum Outcome {
    /// The far side closed its stdout.
    Eof(bool),
    /// We gave up on it.
    Failed(TargetFailure, String, bool),
}

/// Capped lines from the far side.
struct Lines {
    r: BufReader<tokio::process::ChildStdout>,
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no newline.
    scanned: usize,
}

enum Line {
    Text(Vec<u8>),
    Eof,
    TooLong,
}

impl Lines {
    fn new(out: tokio::process::ChildStdout) -> Self {
        Self {
            r: BufReader::with_capacity(256 << 10, out),
            buf: Vec::new(),
            scanned: 0,
        }
    }

    /// The next line; cancel-safe (a partial line stays in the buffer).
    async fn next(&mut self) -> Line {
        loop {
            if let Some(i) = self.buf[self.scanned..].iter().position(|b| *b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=self.scanned + i).collect();
                line.pop();
                self.scanned = 0;
                return Line::Text(line);
            }
            self.scanned = self.buf.len();
            if self.buf.len() as u64 > MAX_LINE {
                return Line::TooLong;
            }
            let n = match self.r.fill_buf().await {
                Ok([]) | Err(_) => return Line::Eof,
                Ok(chunk) => {
                    self.buf.extend_from_slice(chunk);
                    chunk.len()
                }
            };
            self.r.consume(n);
        }
    }
}

/// Reads the hello, then updates, judging silence.
async fn read_stream(
    target: &Target,
    config: &StreamConfig,
    pubr: &Publisher,
    lines: &mut Lines,
) -> Outcome {
    let hello = match tokio::time::timeout(config.hello_within, lines.next()).await {
        Err(_) => {
            return Outcome::Failed(
                TargetFailure::Stalled,
                format!(
                    "no hello within {} s (a slow link, or a prompt waiting for input? debugtop \
                     runs ssh without prompts)",
                    config.hello_within.as_secs()
                ),
                false,
            )
        }
        Ok(Line::Eof) => return Outcome::Eof(false),
        Ok(Line::TooLong) => return too_long(false),
        Ok(Line::Text(l)) => l,
    };
    match check_hello(target, hello.trim_ascii()) {
        Ok(h) => pubr.set(|f| f.status.hello = Some(h)),
        Err(e) => {
            let (failure, detail) = target_error(e);
            return Outcome::Failed(failure, detail, false);
        }
    }
    updates(config, pubr, lines).await
}

/// A line holding more JSON values than a document from elsewhere may (it is not built).
fn over_budget(values: u64, delivered: bool) -> Outcome {
    Outcome::Failed(
        TargetFailure::Garbage,
        format!(
            "it sent a line of {values} JSON values (at most {} are read): not debugtop's stream",
            crate::model::budget::MAX_JSON_VALUES
        ),
        delivered,
    )
}

fn too_long(delivered: bool) -> Outcome {
    Outcome::Failed(
        TargetFailure::Garbage,
        format!(
            "it sent a line over {} MiB: not debugtop's stream",
            MAX_LINE >> 20
        ),
        delivered,
    )
}

async fn updates(config: &StreamConfig, pubr: &Publisher, lines: &mut Lines) -> Outcome {
    let (stale_after, restart_after) = config.silences();
    let mut delivered = false;
    let mut silent = Duration::ZERO;
    let mut ignored = 0u64;
    loop {
        let line = match tokio::time::timeout(stale_after, lines.next()).await {
            Err(_) => {
                silent += stale_after;
                if silent >= restart_after {
                    return Outcome::Failed(
                        TargetFailure::Stalled,
                        format!(
                            "no update for {} s: restarting the stream",
                            silent.as_secs()
                        ),
                        delivered,
                    );
                }
                stale(pubr, silent);
                continue;
            }
            Ok(Line::Eof) => return Outcome::Eof(delivered),
            Ok(Line::TooLong) => return too_long(delivered),
            Ok(Line::Text(l)) => l,
        };
        silent = Duration::ZERO;
        if let Err(values) = crate::model::budget::within_budget(&line) {
            return over_budget(values, delivered);
        }
        match serde_json::from_slice::<Update>(&line) {
            Ok(u) => {
                delivered = true;
                let detail = if ignored == 0 {
                    "live".to_owned()
                } else {
                    format!("live ({ignored} line(s) that were not updates ignored)")
                };
                pubr.set(|f| {
                    f.update = Some(Arc::new(u));
                    f.status.last_update_at = Some(Utc::now());
                });
                pubr.state(TargetState::Live, None, detail);
            }
            Err(e) => {
                ignored += 1;
                let shown = tidy(&String::from_utf8_lossy(&line), 80);
                pubr.set(|f| {
                    f.status.detail =
                        format!("ignored a line that is not an update ({e}): {shown:?}");
                });
            }
        }
    }
}

fn stale(pubr: &Publisher, silent: Duration) {
    if !pubr.has_update() {
        pubr.set(|f| {
            f.status.detail = format!("connected, but no update for {} s", silent.as_secs());
        });
        return;
    }
    let age = pubr.last_update_at().map_or(String::new(), |at| {
        format!("; showing the tree of {}", at.format("%H:%M:%S"))
    });
    pubr.state(
        TargetState::Stale,
        Some(TargetFailure::Stalled),
        format!(
            "no update for {} s (a stalled far side or a slow link){age}",
            silent.as_secs()
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silences_follow_the_far_sides_interval() {
        let mut c = StreamConfig::default();
        assert_eq!(
            c.silences(),
            (Duration::from_secs(5), Duration::from_secs(45))
        );
        c.judging.interval = Duration::from_secs(60);
        assert_eq!(
            c.silences(),
            (Duration::from_secs(120), Duration::from_secs(360))
        );
    }
}
