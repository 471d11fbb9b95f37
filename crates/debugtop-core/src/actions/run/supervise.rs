//! The command's life under `run` on Linux: the scope made (a cgroup, else debugtop as a
//! subreaper), the command started in it with everything it would have had without debugtop
//! (stdio, terminal, process group, environment, directory), the four signals a user or a CI
//! runner sends passed on, the command's status taken, and the scope let go.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use chrono::Utc;
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use signal_hook::low_level::siginfo::Cause;

use super::watch::{Lived, NotLived, Watch};
use super::{Joiner, ScopeChoice};
use crate::collect::scope::forks::Forks;
use crate::collect::scope::{self, Cgroup, Heard, Reaped, ScopeLook};
use crate::model::{CommandEnd, RunScope, ScopeKind};

/// The scope as it is held during the run.
#[derive(Debug)]
pub struct Held {
    /// What the report says of it.
    pub scope: RunScope,
    /// The cgroup, in that mode.
    pub cgroup: Option<Cgroup>,
    /// The kernel's fork and exec events, where this process may hear them.
    forks: Option<Forks>,
}

impl Held {
    /// Every member now (zombies included; the caller reads their state). Nothing leaves a
    /// cgroup or a subreaper's tree on its own, so none left.
    pub fn look(&self) -> std::io::Result<ScopeLook> {
        let pids = match &self.cgroup {
            Some(cg) => cg.members()?,
            None => scope::descendants(std::process::id()),
        };
        Ok(ScopeLook {
            members: pids.into_iter().filter_map(scope::read_member).collect(),
            left: Vec::new(),
        })
    }

    /// What the kernel said since the last call (nothing where it cannot be heard).
    pub fn heard(&self) -> Vec<Heard> {
        self.forks.as_ref().map(Forks::drain).unwrap_or_default()
    }

    /// Lets the scope go: survivors left running (kept, allowed) handed back to the cgroup
    /// the run was made in, the run's cgroup removed once empty, adopted orphans reaped.
    pub fn release(&self, problems: &mut Vec<String>) {
        scope::reap_children();
        let Some(cg) = &self.cgroup else { return };
        if let Err(e) = cg.hand_back() {
            problems.push(format!(
                "cannot move what is left running out of the cgroup {}: {e}",
                cg.dir().display()
            ));
        }
        // The last members may take a moment to leave the cgroup after they are reaped.
        let until = Instant::now() + Duration::from_secs(2);
        while let Err(e) = cg.remove() {
            if Instant::now() >= until {
                problems.push(format!(
                    "cannot remove the cgroup {}: {e}",
                    cg.dir().display()
                ));
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Lets the scope of a command that never started go.
    pub fn release_unstarted(&self) {
        if let Some(cg) = &self.cgroup {
            let _ = cg.remove();
        }
    }
}

/// Makes the scope `choice` asks for: a cgroup named for this run (checked by a probe that
/// joins it, as the command will), else a subreaper, with the reason; and, when asked, the
/// kernel's fork events listened to.
pub fn open(
    choice: ScopeChoice,
    joiner: Option<&Joiner>,
    follow_forks: bool,
) -> Result<Held, String> {
    let cgroup = match (choice, joiner) {
        (ScopeChoice::Subreaper, _) => {
            Err("a subreaper was asked for (--scope subreaper)".to_owned())
        }
        (_, None) => Err("no program to join a cgroup with".to_owned()),
        (_, Some(j)) => cgroup_for_run(j),
    };
    // Listened to before the command starts, so its first fork is heard.
    let (forks, forks_unheard) = match follow_forks.then(Forks::listen) {
        None => (None, None),
        Some(Ok(f)) => (Some(f), None),
        Some(Err(e)) => (
            None,
            Some(format!(
                "the kernel does not tell this process of forks ({e}; it needs root)"
            )),
        ),
    };
    let heard_forks = forks.is_some();
    match cgroup {
        Ok(cg) => Ok(Held {
            scope: RunScope {
                kind: ScopeKind::Cgroup,
                path: Some(cg.dir().display().to_string()),
                why: None,
                heard_forks,
                forks_unheard: forks_unheard.clone(),
            },
            cgroup: Some(cg),
            forks,
        }),
        Err(why) if choice == ScopeChoice::Cgroup => Err(why),
        Err(why) => {
            scope::become_subreaper()
                .map_err(|e| format!("{why}; and no subreaper either: {e}"))?;
            Ok(Held {
                scope: RunScope {
                    kind: ScopeKind::Subreaper,
                    path: None,
                    why: Some(why),
                    heard_forks,
                    forks_unheard,
                },
                cgroup: None,
                forks,
            })
        }
    }
}

fn cgroup_for_run(j: &Joiner) -> Result<Cgroup, String> {
    let name = format!("debugtop-run-{}", std::process::id());
    let cg = Cgroup::create(&name)?;
    let probe = std::process::Command::new(&j.program)
        .args(&j.args)
        .arg(cg.dir())
        .arg("--probe")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match probe {
        Ok(s) if s.success() => Ok(cg),
        other => {
            let _ = cg.remove();
            Err(match other {
                Ok(s) => format!(
                    "cannot move a process into the cgroup {} ({s})",
                    cg.dir().display()
                ),
                Err(e) => format!(
                    "cannot start {} to join the cgroup: {e}",
                    j.program.display()
                ),
            })
        }
    }
}

/// Starts the command in the scope and lives with it until it exits.
pub async fn live(
    held: &Held,
    command: &[OsString],
    joiner: Option<&Joiner>,
    signals: &mut Forwarder,
) -> Result<Lived, NotLived> {
    let (program, mut cmd) = command_in(held, command, joiner).map_err(NotLived::NotStarted)?;
    let mut sigchld = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child())
        .map_err(|e| NotLived::Unchecked(format!("cannot watch for the command's exit: {e}")))?;
    let started = Instant::now();
    let started_at = Utc::now();
    let child = cmd.spawn().map_err(|e| {
        NotLived::NotStarted(format!("cannot start {}: {e}", program.to_string_lossy()))
    })?;
    let pid = child.id();
    // Never waited through `Child`: the run reaps with waitpid, the command with the rest.
    drop(child);
    let mut watch = Watch::begin(pid, command, (started, started_at));
    let end = loop {
        if let Some(end) = reaped_command(pid) {
            break end;
        }
        tokio::select! {
            _ = sigchld.recv() => {}
            Some(sig) = signals.next() => signals.pass_on(sig, pid),
            _ = watch.tick.tick() => watch.look(held),
        }
    };
    Ok(watch.ended(held, end, std::mem::take(&mut signals.forwarded)))
}

/// The command as it is started: through the joiner into the cgroup, or as it is.
fn command_in<'a>(
    held: &Held,
    command: &'a [OsString],
    joiner: Option<&Joiner>,
) -> Result<(&'a OsString, std::process::Command), String> {
    let (program, args) = command.split_first().ok_or("no command to run")?;
    let cmd = match (&held.cgroup, joiner) {
        (Some(cg), Some(j)) => {
            let mut c = std::process::Command::new(&j.program);
            c.args(&j.args)
                .arg(cg.dir())
                .arg("--")
                .arg(program)
                .args(args);
            c
        }
        _ => {
            let mut c = std::process::Command::new(program);
            c.args(args);
            c
        }
    };
    Ok((program, cmd))
}

/// Reaps what has ended; the command's end when it is among them.
fn reaped_command(pid: u32) -> Option<CommandEnd> {
    scope::reap_children()
        .into_iter()
        .find(|(p, _)| *p == pid)
        .map(|(_, how)| match how {
            Reaped::Exited(code) => CommandEnd::Exited { code },
            Reaped::Signalled(signal) => CommandEnd::Signalled { signal },
        })
}

/// The signals `run` passes on, read with who sent them. Made before the command starts and
/// held until the report is out: from then on they never end debugtop midway.
#[derive(Debug)]
pub struct Forwarder {
    rx: tokio::sync::mpsc::UnboundedReceiver<(i32, bool)>,
    handle: signal_hook::iterator::Handle,
    forwarded: Vec<String>,
}

impl Forwarder {
    /// Takes SIGINT, SIGTERM, SIGHUP and SIGQUIT.
    pub fn start() -> Result<Self, String> {
        let mut signals = SignalsInfo::<WithOrigin>::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT])
            .map_err(|e| format!("cannot take the signals to pass on: {e}"))?;
        let handle = signals.handle();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for o in signals.forever() {
                // The terminal's keys (Ctrl-C, Ctrl-\) come from the kernel to the whole
                // foreground group: the command, in debugtop's group, has it already.
                let from_terminal = matches!(o.cause, Cause::Kernel);
                if tx.send((o.signal, from_terminal)).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            rx,
            handle,
            forwarded: Vec::new(),
        })
    }

    async fn next(&mut self) -> Option<(i32, bool)> {
        self.rx.recv().await
    }

    /// The next signal, taken (after the command it is not passed on); whether it is an
    /// interrupt (SIGINT, SIGTERM), which asks the run to stop waiting.
    pub async fn next_interrupt(&mut self) -> bool {
        match self.next().await {
            Some((sig, _)) => sig == SIGINT || sig == SIGTERM,
            None => std::future::pending().await,
        }
    }

    /// Sends `sig` to the command (not yet reaped, so its pid is still its own), unless the
    /// terminal sent it to the command's group already.
    fn pass_on(&mut self, (sig, from_terminal): (i32, bool), pid: u32) {
        let name = signal_name(sig);
        if from_terminal {
            self.forwarded
                .push(format!("{name} (from the terminal, to the whole group)"));
            return;
        }
        let sent = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .zip(rustix::process::Signal::from_named_raw(sig))
            .map(|(p, s)| rustix::process::kill_process(p, s));
        if matches!(sent, Some(Ok(()))) {
            self.forwarded.push(name.to_owned());
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.handle.close();
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        SIGQUIT => "SIGQUIT",
        _ => "a signal",
    }
}
