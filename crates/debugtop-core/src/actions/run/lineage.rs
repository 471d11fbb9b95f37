//! Who started whom in one run, as it was while the parents lived. The kernel forgets a
//! process's parent when the parent exits (the orphan goes to init or a subreaper); a run
//! remembers it from the first look at each member, so a survivor is shown under the process
//! that started it, and the test its runner named is found on the way up. Pure: fed one look
//! at a time.

use std::collections::HashMap;

use crate::collect::scope::Heard;
use crate::model::{Ancestor, ProcId, TestName, TestRunner};

/// What a run remembers of one member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its parent when first seen, if that parent was a member then (or the run's command).
    pub parent: Option<ProcId>,
    /// Its command line (unredacted: redacted when reported).
    pub argv: Vec<String>,
    /// The test runners' variables in its environment.
    pub test_env: Vec<(String, String)>,
    /// Whether it has been seen gone.
    pub gone: bool,
    /// Looks at it since the first (a fork is read again until it has run its `exec`).
    pub looks: u8,
}

/// Looks after the first at which a member's command line is read again: a process seen
/// between its fork and its `exec` shows its parent's command line, or none.
pub const READ_AGAIN: u8 = 3;

/// One member as a look saw it for the first time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstSight {
    /// Its identity.
    pub id: ProcId,
    /// Its parent's pid then.
    pub ppid: u32,
    /// Its command line.
    pub argv: Vec<String>,
    /// The test runners' variables in its environment.
    pub test_env: Vec<(String, String)>,
}

/// The run's memory of its members.
#[derive(Debug, Clone, Default)]
pub struct Lineage {
    records: HashMap<ProcId, Record>,
    /// The live identity of each pid, as last seen.
    by_pid: HashMap<u32, ProcId>,
    /// The last identity each pid had, gone or not: what a fork the kernel tells of later
    /// (its parent may have exited since) is attributed by.
    last_of_pid: HashMap<u32, ProcId>,
    /// The run's command.
    root: Option<ProcId>,
    /// The test runners' variables `run` itself was started with: the test `run` runs in (a
    /// nextest or pytest test around it), inherited by everything it starts, names no test
    /// of the run.
    outer: Vec<(String, String)>,
}

impl Lineage {
    /// A lineage rooted at the run's command.
    pub fn new(root: FirstSight) -> Self {
        Self::inside(root, Vec::new())
    }

    /// A lineage rooted at the run's command, `run` itself started with the test runners'
    /// variables `outer`: a member's variable equal to one of them is inherited from around
    /// the run, not set by a runner inside it.
    pub fn inside(root: FirstSight, outer: Vec<(String, String)>) -> Self {
        let mut l = Self {
            root: Some(root.id),
            outer,
            ..Self::default()
        };
        l.see(root);
        l
    }

    /// `env` without what was inherited from around the run.
    fn own(&self, mut env: Vec<(String, String)>) -> Vec<(String, String)> {
        env.retain(|kv| !self.outer.contains(kv));
        env
    }

    /// Whether this identity is known.
    pub fn knows(&self, id: ProcId) -> bool {
        self.records.contains_key(&id)
    }

    /// Remembers a member seen for the first time: its parent is the live member that pid
    /// names, if that one started no later than it (else the parent was never seen).
    pub fn see(&mut self, s: FirstSight) {
        if self.knows(s.id) {
            // Heard at its fork already, under the parent that forked it.
            return;
        }
        let parent = self
            .by_pid
            .get(&s.ppid)
            .copied()
            .filter(|p| p.start_ticks <= s.id.start_ticks && p.pid != s.id.pid)
            .filter(|p| self.records.get(p).is_some_and(|r| !r.gone));
        self.last_of_pid.insert(s.id.pid, s.id);
        if let Some(old) = self.by_pid.insert(s.id.pid, s.id) {
            if old != s.id {
                if let Some(r) = self.records.get_mut(&old) {
                    r.gone = true;
                }
            }
        }
        let test_env = self.own(s.test_env);
        self.records.insert(
            s.id,
            Record {
                parent,
                argv: s.argv,
                test_env,
                gone: false,
                looks: 0,
            },
        );
    }

    /// What the kernel said at a fork or an exec, in order: a process born to a member is
    /// remembered under it even if neither lives until the next look (a fork runs its parent's
    /// program until it `exec`s); an exec gives a member its command line. A fork by a process
    /// the run does not know (debugtop's own helpers) is not the run's.
    pub fn hear(&mut self, h: Heard) {
        match h {
            Heard::Born {
                pid,
                ppid,
                start_ticks,
            } => self.born(ProcId::new(pid, start_ticks), ppid),
            Heard::Ran {
                pid,
                start_ticks,
                argv,
                test_env,
            } => {
                let test_env = self.own(test_env);
                if let Some(r) = self.records.get_mut(&ProcId::new(pid, start_ticks)) {
                    if !argv.is_empty() {
                        r.argv = argv;
                    }
                    if !test_env.is_empty() {
                        r.test_env = test_env;
                    }
                }
            }
        }
    }

    /// A process born to `ppid`. Its start is 0 when it was gone before it could be read (the
    /// middle of a double fork lives microseconds): it is then remembered as starting with its
    /// parent, a lower bound, so that what it started is still shown under it.
    fn born(&mut self, id: ProcId, ppid: u32) {
        let Some(parent) = self.last_of_pid.get(&ppid).copied().filter(|p| {
            p.pid != id.pid && (id.start_ticks == 0 || p.start_ticks <= id.start_ticks)
        }) else {
            return;
        };
        let id = match id.start_ticks {
            0 => ProcId::new(id.pid, parent.start_ticks),
            _ => id,
        };
        if let Some(r) = self.records.get_mut(&id) {
            r.parent = r.parent.or(Some(parent));
            return;
        }
        let Some(from) = self.records.get(&parent) else {
            return;
        };
        let record = Record {
            parent: Some(parent),
            argv: from.argv.clone(),
            test_env: from.test_env.clone(),
            gone: false,
            looks: 0,
        };
        self.last_of_pid.insert(id.pid, id);
        if let Some(old) = self.by_pid.insert(id.pid, id) {
            if let Some(r) = self.records.get_mut(&old).filter(|_| old != id) {
                r.gone = true;
            }
        }
        self.records.insert(id, record);
    }

    /// Records that `parent` started `id` where the kernel says otherwise: a container's main
    /// process, which the engine started for the run's `docker run`. Kept only when `id` has
    /// no parent of the run yet and `parent` started before it.
    pub fn started_by(&mut self, id: ProcId, parent: ProcId) {
        if parent.start_ticks > id.start_ticks || !self.records.contains_key(&parent) {
            return;
        }
        if let Some(r) = self.records.get_mut(&id).filter(|r| r.parent.is_none()) {
            r.parent = Some(parent);
        }
    }

    /// Whether its command line is still worth reading again.
    pub fn young(&self, id: ProcId) -> bool {
        self.records.get(&id).is_some_and(|r| r.looks < READ_AGAIN)
    }

    /// What a look after the first read of it: its command line and environment now (kept
    /// only when they could be read).
    pub fn read_again(&mut self, id: ProcId, argv: Vec<String>, test_env: Vec<(String, String)>) {
        let test_env = self.own(test_env);
        if let Some(r) = self.records.get_mut(&id) {
            r.looks = r.looks.saturating_add(1);
            if !argv.is_empty() {
                r.argv = argv;
            }
            if !test_env.is_empty() {
                r.test_env = test_env;
            }
        }
    }

    /// Marks every known member not in `alive` as gone, and those in it as alive (a command
    /// may be seen before it has joined its cgroup).
    pub fn keep_only(&mut self, alive: &std::collections::HashSet<ProcId>) {
        for (id, r) in &mut self.records {
            r.gone = !alive.contains(id);
        }
        self.by_pid.retain(|_, id| alive.contains(id));
        for id in alive.iter().filter(|id| self.records.contains_key(id)) {
            self.by_pid.insert(id.pid, *id);
        }
    }

    /// Its record.
    pub fn record(&self, id: ProcId) -> Option<&Record> {
        self.records.get(&id)
    }

    /// Its ancestors, nearest first, and whether the chain reaches the run's command.
    pub fn ancestry(&self, id: ProcId) -> (Vec<Ancestor>, bool) {
        let mut out = Vec::new();
        let mut cur = self.records.get(&id).and_then(|r| r.parent);
        while let Some(p) = cur {
            let Some(r) = self.records.get(&p) else { break };
            out.push(Ancestor {
                id: p,
                argv: r.argv.clone(),
                gone: r.gone,
            });
            if Some(p) == self.root || out.len() > 64 {
                return (out, true);
            }
            cur = r.parent;
        }
        (out, Some(id) == self.root)
    }

    /// The test that started it: the nearest of itself and its ancestors whose environment
    /// or command line names one.
    pub fn test_of(&self, id: ProcId) -> Option<TestName> {
        let mut cur = Some(id);
        let mut steps = 0;
        while let (Some(p), true) = (cur, steps < 64) {
            let r = self.records.get(&p)?;
            if let Some(t) = test_named(&r.test_env, &r.argv) {
                return Some(t);
            }
            cur = r.parent;
            steps += 1;
        }
        None
    }
}

/// The test one process's environment and command line name, by what each runner leaves:
/// pytest's `PYTEST_CURRENT_TEST` (`file.py::test (call)`, the phase dropped); nextest's
/// `NEXTEST_TEST_NAME` (else a per-test process's `--exact NAME`, with nextest's variables
/// there); node's test runner's per-file child (`NODE_TEST_CONTEXT`, the file its command line
/// names); jest's and vitest's workers (which say only the worker).
pub fn test_named(env: &[(String, String)], argv: &[String]) -> Option<TestName> {
    let var = |k: &str| {
        env.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    let named = |runner, name: &str| {
        Some(TestName {
            runner,
            name: name.chars().take(300).collect(),
        })
    };
    if let Some(v) = var("PYTEST_CURRENT_TEST") {
        let name = v.rsplit_once(" (").map_or(v, |(n, _)| n);
        return named(TestRunner::Pytest, name);
    }
    if let Some(v) = var("NEXTEST_TEST_NAME") {
        let binary = var("NEXTEST_BINARY_ID");
        return match binary {
            Some(b) => named(TestRunner::Nextest, &format!("{b} {v}")),
            None => named(TestRunner::Nextest, v),
        };
    }
    if let Some(b) = var("NEXTEST_BINARY_ID") {
        if let Some(i) = argv.iter().position(|a| a == "--exact") {
            if let Some(name) = argv.get(i + 1) {
                return named(TestRunner::Nextest, &format!("{b} {name}"));
            }
        }
    }
    if var("NODE_TEST_CONTEXT").is_some() {
        // Only node's own per-file child names the file; what a test starts inherits the
        // variable, and its arguments are its own (`sleep 300` names no test).
        let file = is_node(argv)
            .then(|| argv.iter().skip(1).rev().find(|a| !a.starts_with('-')))
            .flatten();
        if let Some(f) = file {
            return named(TestRunner::NodeTest, f);
        }
    }
    if let Some(w) = var("VITEST_POOL_ID").or(var("VITEST_WORKER_ID")) {
        return named(TestRunner::Vitest, &format!("worker {w}"));
    }
    var("JEST_WORKER_ID").and_then(|w| named(TestRunner::Jest, &format!("worker {w}")))
}

/// Whether a command line runs node (`node`, `/usr/bin/node`, `node22`, `node.exe`).
fn is_node(argv: &[String]) -> bool {
    argv.first().is_some_and(|a| {
        let base = a.rsplit(['/', '\\']).next().unwrap_or(a);
        base.strip_prefix("node").is_some_and(|rest| {
            rest.trim_end_matches(".exe")
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(k: &str, v: &str) -> Vec<(String, String)> {
        vec![(k.to_owned(), v.to_owned())]
    }

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    fn sight(pid: u32, ticks: u64, ppid: u32, argv: &str) -> FirstSight {
        FirstSight {
            id: ProcId::new(pid, ticks),
            ppid,
            argv: argv.split(' ').map(str::to_owned).collect(),
            test_env: Vec::new(),
        }
    }

    #[test]
    fn a_double_forked_survivor_stays_under_the_parents_that_started_it() {
        let mut l = Lineage::new(sight(100, 10, 1, "sh run.sh"));
        l.see(sight(101, 11, 100, "sh -c fork"));
        l.see(sight(102, 12, 101, "sleep 60"));
        // The middle one exits; the sleep is re-parented to init, which changes nothing here.
        let alive = [ProcId::new(102, 12)].into_iter().collect();
        l.keep_only(&alive);
        let (chain, complete) = l.ancestry(ProcId::new(102, 12));
        assert!(complete);
        let pids: Vec<u32> = chain.iter().map(|a| a.id.pid).collect();
        assert_eq!(pids, [101, 100]);
        assert!(chain.iter().all(|a| a.gone));
    }

    #[test]
    fn a_parent_never_seen_leaves_the_chain_incomplete_and_a_reused_pid_is_no_parent() {
        let mut l = Lineage::new(sight(100, 10, 1, "sh"));
        // Its parent lived less than a look: it was seen already adopted.
        l.see(sight(105, 15, 1, "daemon"));
        assert_eq!(l.ancestry(ProcId::new(105, 15)), (Vec::new(), false));
        // A pid of a member that is gone, reused by a newer process: not the parent of an
        // older one, nor of one seen after the member left.
        l.see(sight(101, 11, 100, "a"));
        l.keep_only(&[ProcId::new(100, 10)].into_iter().collect());
        l.see(sight(106, 16, 101, "b"));
        assert_eq!(l.record(ProcId::new(106, 16)).unwrap().parent, None);
    }

    #[test]
    fn regression_a_fork_heard_after_a_look_missed_its_parent_still_names_it() {
        let mut l = Lineage::new(sight(100, 10, 1, "sh -c (sleep 60 &)"));
        // The first look came before the command joined its cgroup: not alive at it.
        l.keep_only(&std::collections::HashSet::new());
        let born = |pid, ppid, start_ticks| Heard::Born {
            pid,
            ppid,
            start_ticks,
        };
        // The subshell forks, forks the sleep and exits before any look.
        l.hear(born(101, 100, 11));
        l.hear(born(102, 101, 12));
        l.hear(Heard::Ran {
            pid: 102,
            start_ticks: 12,
            argv: vec!["sleep".into(), "60".into()],
            test_env: Vec::new(),
        });
        l.keep_only(&[ProcId::new(102, 12)].into_iter().collect());
        // The first look finds the sleep adopted by init: known already, under the subshell.
        l.see(sight(102, 12, 1, "sleep 60"));
        let (chain, complete) = l.ancestry(ProcId::new(102, 12));
        assert!(complete, "{chain:?}");
        assert_eq!(
            chain.iter().map(|a| a.id.pid).collect::<Vec<_>>(),
            [101, 100]
        );
        // The subshell never ran a program of its own: it shows its parent's.
        assert_eq!(chain[0].argv, ["sh", "-c", "(sleep", "60", "&)"]);
        assert_eq!(
            l.record(ProcId::new(102, 12)).unwrap().argv,
            ["sleep", "60"]
        );
        // The kernel told of a fork too late to read the child (it was gone): it stands in
        // with its parent's start, and its own child is still shown under it.
        l.hear(born(110, 100, 0));
        l.hear(born(111, 110, 14));
        let (chain, complete) = l.ancestry(ProcId::new(111, 14));
        assert!(complete, "{chain:?}");
        assert_eq!(
            chain.iter().map(|a| a.id.pid).collect::<Vec<_>>(),
            [110, 100]
        );
        // Near misses: a fork by a process the run does not know (debugtop's own helpers),
        // and a child that claims to be older than its parent.
        l.hear(born(200, 999, 20));
        assert!(!l.knows(ProcId::new(200, 20)));
        l.hear(born(201, 100, 5));
        assert!(!l.knows(ProcId::new(201, 5)));
    }

    #[test]
    fn regression_a_runner_variable_inherited_from_around_the_run_names_no_test() {
        // `run` in a nextest test: every member inherits its NEXTEST_TEST_NAME, and a jest
        // worker inside was named as that nextest test.
        let around = vec![("NEXTEST_TEST_NAME".to_owned(), "run::outer".to_owned())];
        let mut l = Lineage::inside(sight(100, 10, 1, "jest"), around.clone());
        let mut worker = sight(101, 11, 100, "node jest-worker");
        worker.test_env = around.clone();
        worker.test_env.push(("JEST_WORKER_ID".into(), "1".into()));
        l.see(worker);
        let mut leak = sight(102, 12, 101, "sleep 60");
        leak.test_env = worker_env(&around);
        l.see(leak);
        let t = l
            .test_of(ProcId::new(102, 12))
            .expect("named by the inner runner");
        assert_eq!((t.runner, t.name.as_str()), (TestRunner::Jest, "worker 1"));
        // Near miss: a nextest test started inside the run names its own test (another value).
        let mut inner = sight(103, 13, 100, "/t/cli --exact x");
        inner.test_env = vec![("NEXTEST_TEST_NAME".into(), "cli::x".into())];
        l.see(inner);
        let t = l.test_of(ProcId::new(103, 13)).expect("named");
        assert_eq!((t.runner, t.name.as_str()), (TestRunner::Nextest, "cli::x"));
    }

    fn worker_env(around: &[(String, String)]) -> Vec<(String, String)> {
        let mut env = around.to_vec();
        env.push(("JEST_WORKER_ID".into(), "1".into()));
        env
    }

    #[test]
    fn a_containers_main_process_is_shown_under_the_client_that_asked_for_it() {
        let mut l = Lineage::new(sight(100, 10, 1, "sh"));
        l.see(sight(101, 11, 100, "docker run -d img"));
        // Its parent is the engine's shim, never one of the run's.
        l.see(sight(500, 20, 77, "sleep 60"));
        l.keep_only(&[ProcId::new(500, 20)].into_iter().collect());
        l.started_by(ProcId::new(500, 20), ProcId::new(101, 11));
        let (chain, complete) = l.ancestry(ProcId::new(500, 20));
        assert!(complete);
        assert_eq!(
            chain.iter().map(|a| a.id.pid).collect::<Vec<_>>(),
            [101, 100]
        );
        // Near misses: a client that started after it, or one the run never saw, is no parent.
        l.see(sight(501, 21, 77, "sleep 61"));
        l.see(sight(102, 30, 100, "docker run -d img"));
        l.started_by(ProcId::new(501, 21), ProcId::new(102, 30));
        l.started_by(ProcId::new(501, 21), ProcId::new(103, 5));
        assert_eq!(l.record(ProcId::new(501, 21)).unwrap().parent, None);
    }

    #[test]
    fn the_test_is_the_nearest_one_named_up_the_chain() {
        let mut l = Lineage::new(sight(100, 10, 1, "pytest"));
        let mut t = sight(101, 11, 100, "python -c child");
        t.test_env = vec![(
            "PYTEST_CURRENT_TEST".into(),
            "tests/test_leak.py::test_leaks_a_child (call)".into(),
        )];
        l.see(t);
        l.see(sight(102, 12, 101, "sleep 60"));
        let test = l.test_of(ProcId::new(102, 12)).expect("named");
        assert_eq!(test.runner, TestRunner::Pytest);
        assert_eq!(test.name, "tests/test_leak.py::test_leaks_a_child");
        // Near miss: nothing named anywhere up its chain.
        assert_eq!(l.test_of(ProcId::new(100, 10)), None);
    }

    #[test]
    fn each_runner_is_read_from_what_it_leaves() {
        let env = env_of;
        let argv = words;
        let t = test_named(
            &[
                ("NEXTEST_BINARY_ID".into(), "app::cli".into()),
                ("NEXTEST_TEST_NAME".into(), "leaks".into()),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(
            (t.runner, t.name.as_str()),
            (TestRunner::Nextest, "app::cli leaks")
        );
        let t = test_named(
            &env("NEXTEST_BINARY_ID", "app"),
            &argv("/t/cli-123 --exact leaks --nocapture"),
        )
        .unwrap();
        assert_eq!(t.name, "app leaks");
        let t = test_named(
            &env("NODE_TEST_CONTEXT", "child-v8"),
            &argv("node --test-reporter=tap test/a.test.js"),
        )
        .unwrap();
        assert_eq!(
            (t.runner, t.name.as_str()),
            (TestRunner::NodeTest, "test/a.test.js")
        );
        assert_eq!(
            test_named(&env("JEST_WORKER_ID", "3"), &[]).unwrap().name,
            "worker 3"
        );
        assert_eq!(
            test_named(&env("VITEST_POOL_ID", "1"), &[]).unwrap().runner,
            TestRunner::Vitest
        );
        // Near misses: nextest's id alone, without a per-test name; nothing at all.
        assert_eq!(
            test_named(&env("NEXTEST_BINARY_ID", "app"), &argv("/t/cli-123 --list")),
            None
        );
        assert_eq!(test_named(&[], &argv("sleep 60")), None);
    }

    #[test]
    fn regression_what_a_node_test_starts_inherits_its_variable_but_names_no_test() {
        // A test's `sleep 3301` was named "3301" by the variable it inherited.
        let (env, argv) = (env_of, words);
        let context = env("NODE_TEST_CONTEXT", "child-v8");
        assert_eq!(test_named(&context, &argv("sleep 3301")), None);
        assert_eq!(test_named(&context, &argv("/usr/bin/python3 x.py")), None);
        for node in ["node", "/usr/bin/node", "node22", "C:\\node\\node.exe"] {
            let t = test_named(&context, &argv(&format!("{node} /t/leak.test.mjs")));
            assert_eq!(
                t.map(|t| t.name),
                Some("/t/leak.test.mjs".to_owned()),
                "{node}"
            );
        }
        // Up the chain, the node child names it for the sleep.
        let mut l = Lineage::new(sight(100, 10, 1, "node --test"));
        let mut child = sight(101, 11, 100, "node /t/leak.test.mjs");
        child.test_env = context.clone();
        l.see(child);
        let mut sleep = sight(102, 12, 101, "sleep 3301");
        sleep.test_env = context;
        l.see(sleep);
        let t = l
            .test_of(ProcId::new(102, 12))
            .expect("named by its node parent");
        assert_eq!(
            (t.runner, t.name.as_str()),
            (TestRunner::NodeTest, "/t/leak.test.mjs")
        );
    }
}
