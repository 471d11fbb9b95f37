//! Ending a container through its engine (`docker kill`) rather than by signalling what runs in
//! it: the engine keeps its own state right (an `--rm` container is removed), and a user in the
//! `docker` group may end containers whose processes it could not signal. The container id comes
//! from a cgroup path, which a local user can name as they like in a cgroup delegated to them:
//! nothing is killed unless the engine itself says the container's main process is the planned
//! one (pid and start), and the id is hex only.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::model::{ContainerStop, KillTarget, LiveTable};
use crate::targets::Engines;

/// How long the engine may take to answer.
const ENGINE_WAIT: Duration = Duration::from_secs(15);

/// Whether a plan's container still stands at execution: a valid id, its main process in the
/// live table with the planned identity, in that very container (pid 1 there), and still one
/// of the plan's targets.
pub fn still_holds(c: &ContainerStop, live: &LiveTable, targets: &[KillTarget]) -> bool {
    ContainerStop::valid_id(&c.id)
        && targets
            .iter()
            .any(|t| t.pid == c.main_pid && t.start_ticks == c.main_start_ticks)
        && live.get(c.main_pid).is_some_and(|p| {
            p.start_ticks == c.main_start_ticks
                && p.ns
                    .as_ref()
                    .is_some_and(|ns| ns.pid == 1 && ns.container.as_deref() == Some(&c.id[..12]))
        })
}

/// Asks the engine (`DEBUGTOP_DOCKER_COMMAND`, else `docker`) which host pid runs container
/// `id`'s main process, then kills the container if that is `main_pid`. `Ok` once the engine
/// says it killed it; the error in words otherwise (the plan's signals then do the work).
pub fn kill(c: &ContainerStop) -> Result<(), String> {
    kill_with(c, &Engines::from_env().docker)
}

/// [`kill`] through this engine command (its program and its own arguments).
pub fn kill_with(c: &ContainerStop, docker: &[String]) -> Result<(), String> {
    if !ContainerStop::valid_id(&c.id) {
        return Err(format!("{:?} is not a container id", c.id));
    }
    let engine = |args: &[&str]| ask(docker, args);
    let said = engine(&["inspect", "--format", "{{.State.Pid}}", &c.id])?;
    let pid: u32 = said
        .trim()
        .parse()
        .map_err(|_| format!("docker named no main process for container {}", c.id))?;
    if pid != c.main_pid {
        return Err(format!(
            "docker says container {}'s main process is pid {pid}, not the planned pid {}: not \
             killed through docker",
            c.id, c.main_pid
        ));
    }
    engine(&["kill", &c.id]).map(|_| ())
}

/// Runs the engine command `words` with `args`, no shell; its stdout, or its error in words.
pub fn ask(words: &[String], args: &[&str]) -> Result<String, String> {
    let (program, own) = words
        .split_first()
        .ok_or_else(|| "no docker command".to_owned())?;
    let mut child = Command::new(program)
        .args(own)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let end = Instant::now() + ENGINE_WAIT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{program} did not answer within {} s",
                    ENGINE_WAIT.as_secs()
                ));
            }
            Err(e) => return Err(format!("{program}: {e}")),
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "{program} {}: {}",
            args.first().copied().unwrap_or(""),
            crate::model::printable::one_line(err.trim())
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{KillTarget, PidNs, Role, Via};
    use crate::testing::ProcBuilder;

    #[test]
    fn a_container_id_is_hex_only_and_never_an_option_or_a_name() {
        assert!(ContainerStop::valid_id("e84ebd27c0a2"));
        assert!(ContainerStop::valid_id(&"a".repeat(64)));
        for bad in [
            "--help",
            "e84ebd27c0a",
            "mcp-server-x",
            "e84ebd27c0a2 x",
            &"a".repeat(65),
        ] {
            assert!(!ContainerStop::valid_id(bad), "{bad}");
        }
        let stop = ContainerStop {
            id: "--all".into(),
            main_pid: 1,
            main_start_ticks: 1,
        };
        assert!(kill_with(&stop, &["true".into()]).is_err_and(|e| e.contains("not a container id")));
    }

    #[test]
    fn a_plans_container_stands_only_for_its_own_main_process_at_execution() {
        let mut main = ProcBuilder::new(700, Role::Server).build();
        main.ns = Some(PidNs {
            inode: 9,
            pid: 1,
            container: Some("e84ebd27c0a2".into()),
        });
        let live = LiveTable {
            procs: vec![std::sync::Arc::new(main.clone())],
            me: crate::model::SelfInfo::default(),
        };
        let target = KillTarget {
            pid: 700,
            start_ticks: main.start_ticks,
            role: Role::Server,
            pgid: 700,
            sid: 700,
            argv: Vec::new(),
            via: Via::Target,
        };
        let stop = |id: &str, ticks: u64| ContainerStop {
            id: id.into(),
            main_pid: 700,
            main_start_ticks: ticks,
        };
        let targets = [target];
        assert!(still_holds(
            &stop("e84ebd27c0a2", main.start_ticks),
            &live,
            &targets
        ));
        // Another container's id; another identity; no longer a target.
        assert!(!still_holds(
            &stop("0123456789ab", main.start_ticks),
            &live,
            &targets
        ));
        assert!(!still_holds(&stop("e84ebd27c0a2", 1), &live, &targets));
        assert!(!still_holds(
            &stop("e84ebd27c0a2", main.start_ticks),
            &live,
            &[]
        ));
        // Not the container's main process (pid 5 inside).
        let mut inner = main;
        if let Some(ns) = inner.ns.as_mut() {
            ns.pid = 5;
        }
        let live = LiveTable {
            procs: vec![std::sync::Arc::new(inner)],
            me: crate::model::SelfInfo::default(),
        };
        assert!(!still_holds(&stop("e84ebd27c0a2", 7000), &live, &targets));
    }
}
