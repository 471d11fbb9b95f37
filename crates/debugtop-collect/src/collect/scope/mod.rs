//! The reach of one `run`: every process a command starts, at any depth, however it leaves its
//! parent (double fork, `setsid`, `daemon(3)`, a detached process, its parent exiting first).
//! On Linux a cgroup or debugtop as a subreaper; on Windows a job object. Each OS answers the
//! same few questions: who is in the scope now, and what each member is (its parent, start,
//! CPU and memory, its command line and what a test runner put in its environment), read once
//! when it is first seen.

use debugtop_model::ProcState;

#[cfg(target_os = "linux")]
pub mod forks;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::*;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

/// The environment variables a test runner leaves in what a test starts: the only ones a
/// member's environment is read for (secrets stay where they are).
pub const TEST_ENV: [&str; 7] = [
    "PYTEST_CURRENT_TEST",
    "NEXTEST_TEST_NAME",
    "NEXTEST_BINARY_ID",
    "NODE_TEST_CONTEXT",
    "JEST_WORKER_ID",
    "VITEST_POOL_ID",
    "VITEST_WORKER_ID",
];

/// One member of a run, as the OS tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its pid.
    pub pid: u32,
    /// Its parent now (on Windows, the one recorded when it was created).
    pub ppid: u32,
    /// Its state.
    pub state: ProcState,
    /// Its start in the collector's unit (its identity with the pid): clock ticks since boot
    /// on Linux, 100 ns units since 1601 on Windows; [`ticks_per_second`] either way.
    pub start_ticks: u64,
    /// CPU used (user + system), in the same unit.
    pub cpu_ticks: u64,
    /// Resident memory, bytes.
    pub rss_bytes: u64,
}

/// One look at a scope: its members, and the processes that left it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeLook {
    /// Every member (zombies among them on Linux; Windows keeps none).
    pub members: Vec<Member>,
    /// Started by a member alive at this look, yet outside the scope: they broke away (a
    /// Windows job lets a process leave when it asks to; a cgroup's member cannot).
    pub left: Vec<Member>,
}

/// A process of a container on this machine (never debugtop's own container), as its cgroup
/// names it: what a `docker run` inside a run may have started outside the run's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contained {
    /// The process.
    pub member: Member,
    /// Its container's id, 12 hex characters.
    pub container: String,
    /// Whether it is the container's main process (pid 1 in its pid namespace).
    pub main: bool,
}

/// What the kernel said of one of this process's descendants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// A new process (not a thread).
    Born {
        /// Its pid.
        pid: u32,
        /// The process that forked it.
        ppid: u32,
        /// Its start, read at once (0 when it was gone already).
        start_ticks: u64,
    },
    /// A process ran a new program.
    Ran {
        /// Its pid.
        pid: u32,
        /// Its start.
        start_ticks: u64,
        /// Its command line then.
        argv: Vec<String>,
        /// The test runners' variables in its environment.
        test_env: Vec<(String, String)>,
    },
}

/// How a child that was reaped ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reaped {
    /// Exited with a status.
    Exited(i32),
    /// Ended by a signal.
    Signalled(i32),
}

/// The [`TEST_ENV`] variables in an environment block (`KEY=VALUE\0…`).
pub fn test_env_of(raw: &[u8]) -> Vec<(String, String)> {
    env_of(raw, &TEST_ENV)
}

/// The variables `names` in an environment block (`KEY=VALUE\0…`), values cut at 512
/// characters.
pub fn env_of(raw: &[u8], names: &[&str]) -> Vec<(String, String)> {
    raw.split(|b| *b == 0)
        .filter_map(|kv| {
            let text = std::str::from_utf8(kv).ok()?;
            let (k, v) = text.split_once('=')?;
            names
                .contains(&k)
                .then(|| (k.to_owned(), v.chars().take(512).collect()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_test_runners_variables_are_taken_from_an_environment() {
        let raw = b"PATH=/bin\0PYTEST_CURRENT_TEST=t/test_a.py::test_b (call)\0TOKEN=s3cr3t\0JEST_WORKER_ID=2\0\0";
        assert_eq!(
            test_env_of(raw),
            [
                (
                    "PYTEST_CURRENT_TEST".to_owned(),
                    "t/test_a.py::test_b (call)".to_owned()
                ),
                ("JEST_WORKER_ID".to_owned(), "2".to_owned()),
            ]
        );
        assert!(test_env_of(b"NOT_PYTEST_CURRENT_TEST=x\0=y\0\xff\xfe=1").is_empty());
    }
}
