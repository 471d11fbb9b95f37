//! The command's life under `run` on Linux: the scope made (a cgroup, else debugtop as a
//! subreaper), the command started in it with everything it would have had without debugtop
//! (stdio, terminal, process group, environment, directory), the four signals a user or a CI
//! runner sends passed on, every member looked at as it appears (for its ancestry and its
//! test), the command's status taken, and what is left waited for through the grace.

use std::collections::HashSet;
use std::ffi::OsString;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use signal_hook::low_level::siginfo::Cause;

use super::lineage::{FirstSight, Lineage};
use super::{Joiner, ScopeChoice};
use crate::collect::scope::{self, Cgroup, Member, Reaped};
use crate::model::{CommandEnd, ProcId, RunScope, ScopeKind};

/// How often the run looks at its members while the command runs: a parent that lives less
/// than this between forking and exiting is not seen (its child is then shown adopted).
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// The scope as it is held during the run.
#[derive(Debug)]
pub struct Held {
    /// What the report says of it.
    pub scope: RunScope,
    /// The cgroup, in that mode.
    pub cgroup: Option<Cgroup>,
}

impl Held {
    /// Every member's pid now (zombies included; the caller reads their state).
    pub fn members(&self, me: u32) -> std::io::Result<Vec<u32>> {
        match &self.cgroup {
            Some(cg) => cg.members(),
            None => Ok(scope::descendants(me)),
        }
    }
}

/// Makes the scope `choice` asks for: a cgroup named for this run (checked by a probe that
/// joins it, as the command will), else a subreaper, with the reason.
pub fn open(choice: ScopeChoice, joiner: Option<&Joiner>) -> Result<Held, String> {
    let cgroup = match (choice, joiner) {
        (ScopeChoice::Subreaper, _) => {
            Err("a subreaper was asked for (--scope subreaper)".to_owned())
        }
        (_, None) => Err("no program to join a cgroup with".to_owned()),
        (_, Some(j)) => cgroup_for_run(j),
    };
    match cgroup {
        Ok(cg) => Ok(Held {
            scope: RunScope {
                kind: ScopeKind::Cgroup,
                path: Some(cg.dir().display().to_string()),
                why: None,
            },
            cgroup: Some(cg),
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
                },
                cgroup: None,
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

/// What the command's life left for the report.
#[derive(Debug)]
pub struct Lived {
    /// Its pid and start.
    pub id: ProcId,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// How long it ran.
    pub ran: Duration,
    /// How it ended.
    pub end: CommandEnd,
    /// When it ended.
    pub ended: Instant,
    /// Who started whom.
    pub lineage: Lineage,
    /// Signals passed on, by name.
    pub forwarded: Vec<String>,
    /// Whether a second interrupt asked to stop waiting.
    pub hurry: bool,
    /// What could not be read (members).
    pub problems: Vec<String>,
}

/// Starts the command in the scope and lives with it until it exits.
pub async fn live(
    held: &Held,
    command: &[OsString],
    joiner: Option<&Joiner>,
    signals: &mut Forwarder,
) -> Result<Lived, String> {
    let (program, mut cmd) = command_in(held, command, joiner)?;
    let mut sigchld = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child())
        .map_err(|e| format!("cannot watch for the command's exit: {e}"))?;
    let started = Instant::now();
    let started_at = Utc::now();
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.to_string_lossy()))?;
    let pid = child.id();
    // Never waited through `Child`: the run reaps with waitpid, the command with the rest.
    drop(child);
    let start_ticks = scope::read_member(pid).map_or(0, |m| m.start_ticks);
    let id = ProcId::new(pid, start_ticks);
    let mut lineage = Lineage::new(FirstSight {
        id,
        ppid: std::process::id(),
        argv: command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        test_env: Vec::new(),
    });
    let mut looks = Looks::default();
    let mut tick = tokio::time::interval(LOOK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let end = loop {
        if let Some(end) = reaped_command(pid) {
            break end;
        }
        tokio::select! {
            _ = sigchld.recv() => {}
            Some(sig) = signals.next() => signals.pass_on(sig, pid),
            _ = tick.tick() => {
                looks.look(held, &mut lineage);
            }
        }
    };
    looks.look(held, &mut lineage);
    Ok(Lived {
        id,
        started_at,
        ran: started.elapsed(),
        end,
        ended: Instant::now(),
        lineage,
        forwarded: std::mem::take(&mut signals.forwarded),
        hurry: false,
        problems: looks.problems,
    })
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

/// The looks at the members: each new one read once.
#[derive(Debug, Default)]
pub struct Looks {
    /// What could not be read, once each.
    pub problems: Vec<String>,
}

impl Looks {
    /// One look: new members remembered, gone ones marked. Returns the members alive now
    /// (not zombies).
    pub fn look(&mut self, held: &Held, lineage: &mut Lineage) -> Vec<Member> {
        let pids = match held.members(std::process::id()) {
            Ok(p) => p,
            Err(e) => {
                let problem = format!("cannot list the run's processes: {e}");
                if !self.problems.contains(&problem) {
                    self.problems.push(problem);
                }
                return Vec::new();
            }
        };
        // Oldest first: a parent seen for the first time in the same look as its child is
        // remembered before it.
        let mut members: Vec<Member> = pids.into_iter().filter_map(scope::read_member).collect();
        members.sort_by_key(|m| m.start_ticks);
        let ids: HashSet<ProcId> = members
            .iter()
            .filter(|m| m.state.is_alive())
            .map(|m| ProcId::new(m.pid, m.start_ticks))
            .collect();
        lineage.keep_only(&ids);
        for m in &members {
            let id = ProcId::new(m.pid, m.start_ticks);
            if !lineage.knows(id) {
                lineage.see(FirstSight {
                    id,
                    ppid: m.ppid,
                    argv: scope::read_argv(m.pid),
                    test_env: scope::read_test_env(m.pid),
                });
            } else if lineage.young(id) && m.state.is_alive() {
                lineage.read_again(id, scope::read_argv(m.pid), scope::read_test_env(m.pid));
            }
        }
        lineage.keep_only(&ids);
        members.retain(|m| m.state.is_alive());
        members
    }
}

/// Waits the grace after the command, looking as before, until nothing of the run is alive,
/// the grace has passed, or an interrupt asks to stop waiting; then the members alive.
pub async fn linger(
    held: &Held,
    lived: &mut Lived,
    grace: Duration,
    signals: &mut Forwarder,
) -> Vec<(Member, Option<f32>)> {
    let mut looks = Looks::default();
    let until = lived.ended + grace;
    let mut first = std::collections::HashMap::new();
    loop {
        scope::reap_children();
        let alive = looks.look(held, &mut lived.lineage);
        for m in &alive {
            first
                .entry(ProcId::new(m.pid, m.start_ticks))
                .or_insert((m.cpu_ticks, Instant::now()));
        }
        let done = Instant::now() >= until || lived.hurry;
        if alive.is_empty() || done {
            lived.problems.extend(looks.problems);
            return with_cpu(alive, &first);
        }
        tokio::select! {
            () = tokio::time::sleep(LOOK_EVERY) => {}
            Some((sig, _)) = signals.next() => {
                if sig == SIGINT || sig == SIGTERM {
                    lived.hurry = true;
                }
            }
        }
    }
}

/// Each member with its CPU since it was first seen after the command, in percent of a core
/// (none when that was under 200 ms: too short to say).
fn with_cpu(
    alive: Vec<Member>,
    first: &std::collections::HashMap<ProcId, (u64, Instant)>,
) -> Vec<(Member, Option<f32>)> {
    let tps = scope::ticks_per_second() as f64;
    alive
        .into_iter()
        .map(|m| {
            let cpu = first
                .get(&ProcId::new(m.pid, m.start_ticks))
                .filter(|(_, at)| at.elapsed() >= Duration::from_millis(200))
                .map(|(ticks, at)| {
                    let used = m.cpu_ticks.saturating_sub(*ticks) as f64 / tps;
                    (used / at.elapsed().as_secs_f64() * 100.0) as f32
                });
            (m, cpu)
        })
        .collect()
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
