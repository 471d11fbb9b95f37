//! The command's life under `run` on Windows: a job object made for the run, the command
//! started suspended, put in the job and only then resumed (so nothing it starts is born
//! outside), with the same console, standard handles, environment and directory it would
//! have had without debugtop; its exit code taken; a console's Ctrl-C or Ctrl-Break, which
//! Windows delivers to every process on the console (the command has it already), recorded
//! and survived, so the run still reports.

use std::ffi::OsString;
use std::time::Instant;

use chrono::Utc;
use tokio::signal::windows::{ctrl_break, ctrl_c, CtrlBreak, CtrlC};

use super::watch::{Lived, NotLived, Watch};
use super::{Joiner, ScopeChoice};
use crate::collect::scope::{self, Heard, RunJob, ScopeLook};
use crate::model::{CommandEnd, RunScope, ScopeKind};

/// The scope as it is held during the run.
#[derive(Debug)]
pub struct Held {
    /// What the report says of it.
    pub scope: RunScope,
    job: RunJob,
}

impl Held {
    /// The job's members now, and who left it.
    pub fn look(&self) -> std::io::Result<ScopeLook> {
        self.job.look()
    }

    /// Lets the job go: its handle closes when the run ends, and what is left running in it
    /// (kept, allowed) goes on running; the job never kills on close.
    #[allow(clippy::unused_self)]
    pub fn release(&self, problems: &mut Vec<String>) {
        let _ = problems;
    }

    /// Windows tells nothing of a fork as it happens: the looks and the job's records are all.
    #[allow(clippy::unused_self)]
    pub fn heard(&self) -> Vec<Heard> {
        Vec::new()
    }

    /// Nothing to let go for a command that never started.
    #[allow(clippy::unused_self)]
    pub fn release_unstarted(&self) {}
}

/// Makes the job (the only scope there is on Windows).
pub fn open(
    choice: ScopeChoice,
    joiner: Option<&Joiner>,
    follow_forks: bool,
) -> Result<Held, String> {
    let _ = joiner;
    if follow_forks {
        return Err("--follow-forks hears Linux's fork events; Windows has none".to_owned());
    }
    match choice {
        ScopeChoice::Auto => Ok(Held {
            scope: RunScope {
                kind: ScopeKind::JobObject,
                path: None,
                why: None,
                heard_forks: false,
                forks_unheard: None,
            },
            job: RunJob::create()?,
        }),
        ScopeChoice::Cgroup | ScopeChoice::Subreaper => Err(
            "cgroups and subreapers are Linux's; on Windows a run's scope is a job object \
             (leave out --scope)"
                .to_owned(),
        ),
    }
}

/// Starts the command in the job and lives with it until it exits.
pub async fn live(
    held: &Held,
    command: &[OsString],
    joiner: Option<&Joiner>,
    signals: &mut Forwarder,
) -> Result<Lived, NotLived> {
    let _ = joiner;
    let (program, args) = command
        .split_first()
        .ok_or_else(|| NotLived::NotStarted("no command to run".to_owned()))?;
    let started = Instant::now();
    let started_at = Utc::now();
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .creation_flags(scope::START_SUSPENDED)
        .spawn()
        .map_err(|e| {
            NotLived::NotStarted(format!("cannot start {}: {e}", program.to_string_lossy()))
        })?;
    let pid = child.id().unwrap_or(0);
    if let Err(e) = held.job.enter(pid) {
        // It never ran: ended before its first instruction.
        let _ = child.start_kill();
        let _ = child.wait().await;
        return Err(NotLived::Unchecked(format!(
            "cannot put {} in the run's job object: {e}",
            program.to_string_lossy()
        )));
    }
    let mut watch = Watch::begin(pid, command, (started, started_at));
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            _ = signals.next_interrupt() => {}
            _ = watch.tick.tick() => watch.look(held),
        }
    };
    let code = status.ok().and_then(|s| s.code()).unwrap_or(-1);
    let end = CommandEnd::Exited { code };
    Ok(watch.ended(held, end, std::mem::take(&mut signals.forwarded)))
}

/// The console's interrupts, taken so that debugtop outlives them and reports; the command,
/// on the same console, receives them from Windows itself.
#[derive(Debug)]
pub struct Forwarder {
    c: Option<CtrlC>,
    brk: Option<CtrlBreak>,
    forwarded: Vec<String>,
}

impl Forwarder {
    /// Takes Ctrl-C and Ctrl-Break (where there is a console to take them from).
    pub fn start() -> Result<Self, String> {
        Ok(Self {
            c: ctrl_c().ok(),
            brk: ctrl_break().ok(),
            forwarded: Vec::new(),
        })
    }

    /// The next interrupt (recorded): it always asks the run to stop waiting.
    pub async fn next_interrupt(&mut self) -> bool {
        let name = tokio::select! {
            Some(()) = async { self.c.as_mut()?.recv().await } => "CTRL_C_EVENT",
            Some(()) = async { self.brk.as_mut()?.recv().await } => "CTRL_BREAK_EVENT",
            else => std::future::pending().await,
        };
        self.forwarded
            .push(format!("{name} (from the console, to every process on it)"));
        true
    }
}
