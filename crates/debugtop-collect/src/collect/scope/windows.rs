//! The run's scope on Windows: a job object of the run's own. The command is started
//! suspended, put in the job, then resumed, so every process it starts, at any depth, is born
//! in the job (detached ones, and those in jobs of their own, such as node's, among them).
//! The job lets a process leave when it asks to (`CREATE_BREAKAWAY_FROM_JOB`), as it could
//! without debugtop; such a process is found by its parent, a member alive at that look, and
//! said. What each member is, read through its process handle and its PEB.

use std::collections::HashMap;
use std::io;

use debugtop_model::ProcState;

use super::{test_env_of, Member, Reaped, ScopeLook};
use crate::win32::{self as sys, Access, Entry, Job};

/// The creation flag that starts a program suspended (`CREATE_SUSPENDED`): it runs nothing
/// until [`RunJob::enter`] has put it in the job.
pub const START_SUSPENDED: u32 = 0x0000_0004;

/// Longest command line read, in UTF-16 units (Windows' own limit).
const MAX_COMMAND_LINE: usize = 32_767;
/// Most of an environment block read, in UTF-16 units.
const MAX_ENVIRONMENT: usize = 128 * 1024;

/// The job made for one run.
#[derive(Debug)]
pub struct RunJob {
    job: Job,
}

impl RunJob {
    /// A new job for a run.
    pub fn create() -> Result<Self, String> {
        Job::create()
            .map(|job| Self { job })
            .map_err(|e| format!("cannot make a job object: {e}"))
    }

    /// Puts `pid` (started with [`START_SUSPENDED`]) in the job, then lets it run.
    pub fn enter(&self, pid: u32) -> io::Result<()> {
        let h = sys::open(pid, Access::Assign)?;
        self.job.assign(&h)?;
        sys::resume_threads(pid).map(|_| ())
    }

    /// The job's members now, and who left it. The process list is taken before the job's
    /// own list, so a process it names is either in the job's later list or truly outside
    /// (a process never leaves a job but by asking at its creation, or by ending).
    pub fn look(&self) -> io::Result<ScopeLook> {
        let all = sys::snapshot()?;
        let pids = self.job.pids()?;
        let by_pid: HashMap<u32, &Entry> = all.iter().map(|e| (e.pid, e)).collect();
        let members: Vec<Member> = pids
            .iter()
            .filter_map(|p| by_pid.get(p))
            .filter(|e| !is_console_of(e, &pids))
            .filter_map(|e| read(e))
            .collect();
        let starts: HashMap<u32, u64> = members.iter().map(|m| (m.pid, m.start_ticks)).collect();
        let left = all
            .iter()
            .filter(|e| !pids.contains(&e.pid) && starts.contains_key(&e.ppid))
            .filter(|e| !e.exe.eq_ignore_ascii_case("conhost.exe"))
            .filter_map(read)
            // Its parent's pid is a member's only if it was made after that member.
            .filter(|m| starts.get(&m.ppid).is_some_and(|s| m.start_ticks >= *s))
            .collect();
        Ok(ScopeLook { members, left })
    }
}

/// A `conhost.exe` whose owner is in the job: the console Windows gives a console program,
/// not something the command started.
fn is_console_of(e: &Entry, pids: &[u32]) -> bool {
    e.exe.eq_ignore_ascii_case("conhost.exe") && pids.contains(&e.ppid)
}

fn read(e: &Entry) -> Option<Member> {
    let h = sys::open(e.pid, Access::Query).ok()?;
    let (created, cpu) = h.times()?;
    Some(Member {
        pid: e.pid,
        ppid: e.ppid,
        state: ProcState::Running,
        start_ticks: created,
        cpu_ticks: cpu,
        rss_bytes: h.working_set().unwrap_or(0),
    })
}

/// `pid` as a member, when it runs and can be opened.
pub fn read_member(pid: u32) -> Option<Member> {
    let all = sys::snapshot().ok()?;
    all.iter().find(|e| e.pid == pid).and_then(read)
}

/// `pid`'s command line, split as Windows programs split it (empty when it cannot be read).
pub fn read_argv(pid: u32) -> Vec<String> {
    sys::open(pid, Access::Peb)
        .ok()
        .and_then(|h| h.command_line(MAX_COMMAND_LINE))
        .map(|line| sys::split_command_line(&line))
        .unwrap_or_default()
}

/// The [`super::TEST_ENV`] variables in `pid`'s environment.
pub fn read_test_env(pid: u32) -> Vec<(String, String)> {
    sys::open(pid, Access::Peb)
        .ok()
        .and_then(|h| h.environment(MAX_ENVIRONMENT))
        .map(|units| test_env_of(String::from_utf16_lossy(&units).as_bytes()))
        .unwrap_or_default()
}

/// The variables `names` in `pid`'s environment: not read on Windows, where only the test
/// runners' are (see [`read_test_env`]).
pub fn read_env(_pid: u32, _names: &[&str]) -> Vec<(String, String)> {
    Vec::new()
}

/// Containers are a Linux engine's: none on Windows.
pub fn contained() -> Vec<super::Contained> {
    Vec::new()
}

/// Start times and CPU are counted in 100 ns units.
pub fn ticks_per_second() -> u64 {
    10_000_000
}

/// Windows keeps no zombies: nothing to reap.
pub fn reap_children() -> Vec<(u32, Reaped)> {
    Vec::new()
}
