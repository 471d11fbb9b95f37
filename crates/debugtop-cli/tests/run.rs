//! `debugtop-cli run -- CMD` on real processes: every way a process leaves its parent, in the
//! cgroup and in the subreaper mode; zombies and self-ended children that are no leak; the
//! command's status, signals passed on (and a terminal's Ctrl-C, through a real pty, not passed
//! twice); `--keep`, `--allow`, `--leaks warn`; the JUnit file read by a real XML parser; a real
//! pytest naming its test; the real `@debugmcp/mcp-debugger@0.24.2` leaving its worker and
//! adapter chain (and not, when its session is closed); a real SDK stdio server outliving its
//! SIGKILLed host; a container a `docker run` in the command started, on a real dockerd, tied
//! to its client and ended through the engine (and one the test started meanwhile, left).
//! Every process the test checks is one its own `run` started; what the run ends, it ends by
//! its own plan, which the report shows held only the run's processes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use debugtop_e2e::dockerd::Dockerd;
use debugtop_e2e::procs::{signal_if_same, start_ticks, state_of};
use debugtop_e2e::{fixture, wait_for};
use nix::sys::signal::Signal;
use serde_json::Value;

fn cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_debugtop-cli"))
}

/// One `run`'s answer: its status, its JSON report, what it printed.
struct Ran {
    status: i32,
    report: Value,
    stderr: String,
    stdout: String,
    dir: tempfile::TempDir,
}

impl Ran {
    fn survivors(&self) -> &[Value] {
        self.report["survivors"]
            .as_array()
            .map_or(&[], Vec::as_slice)
    }

    /// The survivor whose command line holds `marker`.
    fn survivor(&self, marker: &str) -> &Value {
        self.survivors()
            .iter()
            .find(|s| argv_of(s).contains(marker))
            .unwrap_or_else(|| {
                panic!(
                    "no survivor with {marker:?}: {}\n{}",
                    self.report, self.stderr
                )
            })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn argv_of(s: &Value) -> String {
    s["argv"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// `(pid, start ticks)` of a survivor as the report gives it.
fn id_of(s: &Value) -> (u32, u64) {
    let id = s["id"].as_str().expect("an identity");
    let (pid, ticks) = id.split_once('.').expect("pid.ticks");
    (pid.parse().unwrap(), ticks.parse().unwrap())
}

/// Whether the identity is gone (or a zombie).
fn gone(id: (u32, u64)) -> bool {
    start_ticks(id.0) != Some(id.1) || state_of(id.0).is_some_and(|s| s == 'Z' || s == 'X')
}

/// Runs `debugtop-cli run --json … FLAGS -- CMD` and reads its report.
fn run(flags: &[&str], cmd: &[&str]) -> Ran {
    run_with(flags, cmd, |_| {})
}

fn run_with(flags: &[&str], cmd: &[&str], setup: impl FnOnce(&mut Command)) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let mut c = cli();
    c.arg("run")
        .arg("--json")
        .arg(&json)
        .args(flags)
        .arg("--")
        .args(cmd);
    c.stdin(Stdio::null());
    setup(&mut c);
    let out: Output = c.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("no report ({e}); stderr:\n{stderr}"));
    Ran {
        status: out.status.code().unwrap_or(-1),
        report: serde_json::from_str(&text).unwrap(),
        stderr,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        dir,
    }
}

/// The run removed its cgroup, survivors left running or not (they are handed back to the
/// cgroup the run was made in).
fn no_cgroup_left(r: &Ran) {
    if let Some(cg) = r.report["scope"]["path"].as_str() {
        assert!(!Path::new(cg).exists(), "{cg} left behind: {}", r.stderr);
    }
}

/// Every survivor the run reported was ended by it and is gone now. (That nothing else was
/// signalled is the plan's refusal of non-survivors, `end::only_these`; the report carries no
/// outcome for what it refused, so this checks the survivors' side only.)
fn ended_exactly_the_survivors(r: &Ran) {
    for s in r.survivors() {
        let ended = &s["ended"]["outcome"];
        assert!(
            ended == "exited" || ended == "killed",
            "{} not ended: {s}\n{}",
            argv_of(s),
            r.stderr
        );
        assert!(gone(id_of(s)), "{} still runs", argv_of(s));
    }
}

fn shell(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

/// One way out of the command's tree, checked in one scope: the process is a survivor, a
/// leak, ended, and the run exits with the leak status.
fn escapes(scope: &str, script: &str, marker: &str) {
    let cmd = shell(script);
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let r = run(&["--scope", scope, "--grace", "0.5"], &cmd);
    assert_eq!(r.report["scope"]["kind"], scope, "{}", r.report);
    assert_eq!(r.status, 86, "{}", r.stderr);
    assert_eq!(r.report["verdict"], "leaked");
    let s = r.survivor(marker);
    assert!(s.get("allowed").is_none());
    assert!(r.stderr.contains("LEAK"), "{}", r.stderr);
    ended_exactly_the_survivors(&r);
    no_cgroup_left(&r);
}

macro_rules! escape {
    ($name:ident, $script:expr, $marker:expr) => {
        mod $name {
            #[test]
            fn in_a_cgroup() {
                super::escapes("cgroup", $script, $marker);
            }
            #[test]
            fn under_a_subreaper() {
                super::escapes("subreaper", $script, $marker);
            }
        }
    };
}

escape!(parent_exits_first, "sleep 3101 &", "3101");
escape!(double_fork, "(sleep 3102 &); sleep 0.1", "3102");
escape!(setsid, "setsid sleep 3103 & sleep 0.1", "3103");
escape!(
    daemon_3,
    "python3 -c 'import ctypes, time; ctypes.CDLL(None).daemon(0, 0); time.sleep(3104)'",
    "3104"
);
escape!(nohup, "nohup sleep 3105 >/dev/null 2>&1 &", "3105");
escape!(
    new_process_group,
    "python3 -c 'import os, time; os.setpgid(0, 0); time.sleep(3106)' & sleep 0.1",
    "3106"
);

#[test]
fn a_double_fork_is_shown_under_the_parents_that_started_it_under_a_subreaper() {
    // The middle process lives long enough to be seen, then exits: the survivor is an orphan
    // now, and still shown under it and the command.
    let r = run(
        &["--scope", "subreaper", "--grace", "0.5"],
        &["sh", "-c", "sh -c 'sleep 3111 & sleep 0.3'; sleep 0.2"],
    );
    let s = r.survivor("3111");
    assert_eq!(s["ancestry_complete"], true, "{s}");
    let chain: Vec<String> = s["ancestry"]
        .as_array()
        .unwrap()
        .iter()
        .map(argv_of)
        .collect();
    assert_eq!(chain.len(), 2, "{chain:?}");
    assert!(chain[0].contains("sleep 3111 & sleep 0.3"), "{chain:?}");
    assert!(s["ancestry"][0]["gone"] == true, "{s}");
    ended_exactly_the_survivors(&r);
}

/// A double fork whose middle process exits at once, long before the run's first look: as
/// root the kernel's fork events still name it, and the orphan is shown under it and the
/// command, in either scope.
fn a_parent_that_lived_under_a_look(scope: &str) {
    let r = run(
        &["--scope", scope, "--grace", "0.5", "--follow-forks"],
        &["sh", "-c", "(sleep 3113 &); sleep 0.3"],
    );
    assert_eq!(r.report["scope"]["heard_forks"], true, "{}", r.report);
    assert!(
        r.stderr.contains("forks heard from the kernel"),
        "{}",
        r.stderr
    );
    let s = r.survivor("3113");
    assert_eq!(s["ancestry_complete"], true, "{s}");
    let chain: Vec<String> = s["ancestry"]
        .as_array()
        .unwrap()
        .iter()
        .map(argv_of)
        .collect();
    assert_eq!(chain.len(), 2, "the subshell, then the command: {chain:?}");
    assert!(
        chain.iter().all(|a| a.contains("sleep 3113 &")),
        "{chain:?}"
    );
    assert_eq!(s["ancestry"][0]["gone"], true, "{s}");
    ended_exactly_the_survivors(&r);
}

#[test]
fn a_parent_that_lived_under_a_look_is_heard_from_the_kernel_in_a_cgroup() {
    a_parent_that_lived_under_a_look("cgroup");
}

#[test]
fn a_parent_that_lived_under_a_look_is_heard_from_the_kernel_under_a_subreaper() {
    a_parent_that_lived_under_a_look("subreaper");
}

#[test]
fn without_follow_forks_the_kernel_is_not_asked_and_the_chain_says_what_was_missed() {
    let r = run(
        &["--scope", "subreaper", "--grace", "0.5"],
        &["sh", "-c", "(sleep 3114 &); sleep 0.3"],
    );
    assert!(
        r.report["scope"].get("heard_forks").is_none(),
        "{}",
        r.report
    );
    let s = r.survivor("3114");
    assert_eq!(s["ancestry_complete"], false, "{s}");
    assert!(
        r.stderr.contains("re-parented before the run saw it"),
        "{}",
        r.stderr
    );
    ended_exactly_the_survivors(&r);
}

#[test]
fn a_zombie_is_no_leak_and_its_living_parent_is() {
    // A parent that never reaps its exited child: the parent is the leak, the zombie is not.
    let holder = "import os, time\nif os.fork() == 0:\n    os._exit(0)\ntime.sleep(3201)";
    let r = run(
        &["--grace", "0.5"],
        &["sh", "-c", &format!("python3 -c '{holder}' & sleep 0.3")],
    );
    assert_eq!(r.status, 86, "{}", r.stderr);
    assert_eq!(r.survivors().len(), 1, "only the parent: {}", r.report);
    r.survivor("3201");
    ended_exactly_the_survivors(&r);
    // Near miss: the command leaves a zombie of its own and exits: nothing leaked.
    let r = run(
        &["--grace", "0.5"],
        &[
            "python3",
            "-c",
            "import os, time\nif os.fork() == 0:\n    os._exit(0)\ntime.sleep(0.3)",
        ],
    );
    assert_eq!((r.status, r.survivors().len()), (0, 0), "{}", r.stderr);
}

#[test]
fn a_child_the_command_ended_itself_is_no_leak() {
    let r = run(&[], &["sh", "-c", "sleep 3301 & kill $!; wait"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.report["verdict"], "clean");
    assert!(r.survivors().is_empty());
    assert!(
        r.stderr.contains("nothing of it outlived it"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_commands_status_is_the_runs_when_it_failed() {
    let r = run(&[], &["sh", "-c", "exit 3"]);
    assert_eq!(
        (r.status, &r.report["verdict"]),
        (3, &Value::from("command-failed"))
    );
    // A failed command that also leaked: its own status, the leak still reported and ended.
    let r = run(&["--grace", "0.3"], &["sh", "-c", "sleep 3302 & exit 5"]);
    assert_eq!(r.status, 5, "{}", r.stderr);
    r.survivor("3302");
    ended_exactly_the_survivors(&r);
    // Ended by a signal: as a shell says it.
    let r = run(&[], &["sh", "-c", "kill -TERM $$"]);
    assert_eq!(r.status, 143);
    assert_eq!(
        r.report["end"],
        serde_json::json!({"how": "signalled", "signal": 15})
    );
    // A command that cannot be started: 127, as a shell says it.
    let r = run(
        &["--scope", "subreaper"],
        &["/nonexistent/debugtop-test-command"],
    );
    assert_eq!(r.status, 127, "{}", r.stderr);
}

/// A command that writes each signal it gets to a file, says it is ready, and exits 0 on the
/// first.
const CATCHER: &str = r#"
import signal, sys, time, pathlib
out = pathlib.Path(sys.argv[1])
def got(n, _):
    out.write_text(out.read_text() + f"{n}\n")
    sys.exit(0)
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
    signal.signal(s, got)
out.write_text("ready\n")
time.sleep(60)
"#;

#[test]
fn each_signal_sent_to_run_reaches_the_command() {
    for (sig, name) in [
        (Signal::SIGINT, "SIGINT"),
        (Signal::SIGTERM, "SIGTERM"),
        (Signal::SIGHUP, "SIGHUP"),
        (Signal::SIGQUIT, "SIGQUIT"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let seen = dir.path().join("seen");
        let json = dir.path().join("r.json");
        let mut child = cli()
            .arg("run")
            .arg("--json")
            .arg(&json)
            .args(["--", "python3", "-c", CATCHER])
            .arg(&seen)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let ticks = start_ticks(child.id()).unwrap();
        wait_for(Duration::from_secs(20), || {
            std::fs::read_to_string(&seen)
                .ok()
                .filter(|t| t.starts_with("ready"))
        })
        .expect("the command started");
        assert!(signal_if_same(child.id(), ticks, sig));
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{name}");
        let text = std::fs::read_to_string(&seen).unwrap();
        assert_eq!(text, format!("ready\n{}\n", sig as i32), "{name}");
        let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(report["forwarded"], serde_json::json!([name]), "{name}");
    }
}

#[test]
fn a_ctrl_c_at_a_terminal_reaches_the_command_once_and_the_run_still_reports() {
    // A real pty: Ctrl-C there is the kernel's SIGINT to the foreground group, which the
    // command is in; run must not pass it on a second time. On it the command starts a child
    // and exits 130: the leak is reported all the same.
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    let json = dir.path().join("r.json");
    let command = r#"
import signal, subprocess, sys, time, pathlib
out = pathlib.Path(sys.argv[1])
def got(n, _):
    out.write_text(out.read_text() + "int\n")
    subprocess.Popen(["sleep", "3402"])
    time.sleep(0.5)
    sys.exit(130)
signal.signal(signal.SIGINT, got)
out.write_text("ready\n")
print("ready", flush=True)
time.sleep(60)
"#;
    let driver = r#"
import os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
buf = b""
while b"ready" not in buf:
    buf += os.read(fd, 1024)
time.sleep(0.2)
os.write(fd, b"\x03")
try:
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
except OSError:
    pass
_, status = os.waitpid(pid, 0)
sys.stdout.write(buf.decode(errors="replace"))
print("STATUS", os.waitstatus_to_exitcode(status))
"#;
    let out = Command::new("python3")
        .args([
            "-c",
            driver,
            env!("CARGO_BIN_EXE_debugtop-cli"),
            "run",
            "--grace",
            "1",
            "--json",
        ])
        .arg(&json)
        .args(["--", "python3", "-c", command])
        .arg(&seen)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("STATUS 130"), "{text}");
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap(),
        "ready\nint\n",
        "one SIGINT: {text}"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let leak = report["survivors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| argv_of(s).contains("3402"))
        .unwrap_or_else(|| panic!("the leak reported: {report}"));
    assert!(gone(id_of(leak)));
    assert!(text.contains("LEAK"), "the summary on the terminal: {text}");
}

#[test]
fn keep_leaves_the_survivors_running_and_says_how_to_look() {
    // Its output elsewhere: a kept survivor would hold the test's pipes open.
    let r = run(
        &["--keep", "--grace", "0.3"],
        &["sh", "-c", "sleep 3601 >/dev/null 2>&1 &"],
    );
    assert_eq!(r.status, 86);
    let s = r.survivor("3601");
    assert!(s.get("ended").is_none(), "{s}");
    let id = id_of(s);
    assert!(!gone(id), "kept");
    assert!(r.stderr.contains("--keep"), "{}", r.stderr);
    // The test's own: its run started it.
    assert!(signal_if_same(id.0, id.1, Signal::SIGKILL));
    wait_for(Duration::from_secs(10), || gone(id).then_some(()));
    no_cgroup_left(&r);
}

#[test]
fn allow_names_an_expected_survivor_which_is_neither_a_leak_nor_ended() {
    let r = run(
        &["--allow", "sleep 3701", "--grace", "0.3"],
        &["sh", "-c", "sleep 3701 >/dev/null 2>&1 & sleep 3702 &"],
    );
    assert_eq!(r.status, 86, "3702 leaked: {}", r.stderr);
    let allowed = r.survivor("3701");
    assert_eq!(
        allowed["allowed"],
        serde_json::json!({"by": "pattern", "pattern": "sleep 3701"})
    );
    assert!(allowed.get("ended").is_none());
    let leak = r.survivor("3702");
    assert!(gone(id_of(leak)));
    let id = id_of(allowed);
    no_cgroup_left(&r);
    assert!(signal_if_same(id.0, id.1, Signal::SIGKILL));
    // Only allowed survivors: a clean run.
    let r = run(
        &["--allow", "*sleep 3703", "--grace", "0.3"],
        &["sh", "-c", "sleep 3703 >/dev/null 2>&1 &"],
    );
    assert_eq!(
        (r.status, &r.report["verdict"]),
        (0, &Value::from("clean")),
        "{}",
        r.stderr
    );
    no_cgroup_left(&r);
    let id = id_of(r.survivor("3703"));
    assert!(signal_if_same(id.0, id.1, Signal::SIGKILL));
}

#[test]
fn leaks_warn_reports_and_ends_but_passes() {
    let r = run(
        &["--leaks", "warn", "--grace", "0.3"],
        &["sh", "-c", "sleep 3801 &"],
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.report["verdict"], "leaked");
    r.survivor("3801");
    ended_exactly_the_survivors(&r);
}

/// The JUnit file as a real XML parser reads it: (tests, failures, each case's name).
fn junit(path: &Path) -> Value {
    let py = r#"
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = root.findall(".//testcase")
print(json.dumps({"tests": int(root.get("tests")), "failures": int(root.get("failures")),
  "cases": [c.get("name") for c in cases],
  "failed": [c.get("name") for c in cases if c.find("failure") is not None],
  "classnames": [c.get("classname") for c in cases]}))
"#;
    let out = Command::new("python3")
        .args(["-c", py])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn junit_and_github_annotations_say_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("junit.xml");
    let xml_arg = xml.to_string_lossy().into_owned();
    let r = run_with(
        &["--junit", &xml_arg, "--grace", "0.3"],
        &["sh", "-c", "sleep 3901 & echo out-of-the-command"],
        |c| {
            c.env("GITHUB_ACTIONS", "true");
        },
    );
    assert_eq!(r.status, 86);
    let j = junit(&xml);
    assert_eq!(
        (j["tests"].as_u64(), j["failures"].as_u64()),
        (Some(1), Some(1)),
        "{j}"
    );
    let pid = id_of(r.survivor("3901")).0;
    assert_eq!(
        j["failed"][0],
        format!("process {pid} outlived the command"),
        "{j}"
    );
    assert!(
        r.stdout.starts_with("out-of-the-command\n"),
        "the command's output first: {}",
        r.stdout
    );
    let errors: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("::error "))
        .collect();
    assert_eq!(errors.len(), 1, "{}", r.stdout);
    assert!(
        errors[0].contains(&format!("leaked process {pid}")),
        "{}",
        errors[0]
    );
    // Near miss: a clean run is one passing case, and no annotation outside GitHub Actions.
    let clean = run(&["--junit", &xml_arg], &["true"]);
    assert_eq!(clean.status, 0);
    let j = junit(&xml);
    assert_eq!(
        (j["tests"].as_u64(), j["failures"].as_u64()),
        (Some(1), Some(0)),
        "{j}"
    );
    assert!(!clean.stdout.contains("::"), "{}", clean.stdout);
}

#[test]
fn a_real_pytest_test_that_leaks_a_child_is_named() {
    let python = debugtop_e2e::mcp::python_with_debugpy();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("test_leaky.py"),
        "import subprocess\n\n\ndef test_clean():\n    subprocess.run(['true'])\n\n\n\
         def test_leaks_a_child():\n    subprocess.Popen(['sleep', '3501'])\n",
    )
    .unwrap();
    let root = dir.path().to_string_lossy().into_owned();
    let r = run(
        &["--grace", "0.5"],
        &[
            &python,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            &root,
            &root,
        ],
    );
    assert_eq!(r.status, 86, "{}", r.stderr);
    let s = r.survivor("3501");
    assert_eq!(s["test"]["runner"], "pytest", "{s}");
    assert_eq!(
        s["test"]["name"], "test_leaky.py::test_leaks_a_child",
        "{s}"
    );
    assert!(
        r.stderr
            .contains("test: test_leaky.py::test_leaks_a_child (pytest)"),
        "{}",
        r.stderr
    );
    ended_exactly_the_survivors(&r);
}

/// A real runner's test leaks a detached `sleep MARKER`: the survivor is named as the runner
/// lets it be named, and ended.
fn a_runners_leak_is_named(cmd: &[&str], marker: &str, runner: &str, name: &str) {
    let r = run(&["--grace", "0.5"], cmd);
    assert_eq!(r.status, 86, "{}\n{}", r.stderr, r.stdout);
    let s = r.survivor(marker);
    assert_eq!(s["test"]["runner"], runner, "{s}\n{}", r.stderr);
    assert!(
        s["test"]["name"]
            .as_str()
            .is_some_and(|n| n.ends_with(name)),
        "{s}"
    );
    ended_exactly_the_survivors(&r);
}

fn node_bin(tool: &str) -> String {
    fixture(&format!("../node_modules/.bin/{tool}"))
}

/// node's runner starts one child per file (`NODE_TEST_CONTEXT`, the file on its command line):
/// the leak inherits the variable, and its node parent, seen while the test goes on, names
/// the file (a file whose process exits within a look of the leak needs `--follow-forks`).
#[test]
fn a_real_node_test_that_leaks_a_child_is_named_by_its_file() {
    let file = fixture("run/node-test/leak.test.mjs");
    a_runners_leak_is_named(&["node", "--test", &file], "3311", "node-test", &file);
}

/// jest leaves only `JEST_WORKER_ID` in what a test starts (checked: nothing names the file or
/// the test), so the worker is what is said.
#[test]
fn a_real_jest_test_that_leaks_a_child_is_named_by_its_worker() {
    let config = fixture("run/jest/jest.config.json");
    let jest = node_bin("jest");
    a_runners_leak_is_named(
        &[&jest, "--config", &config, "--ci"],
        "3312",
        "jest",
        "worker 1",
    );
}

/// vitest leaves `VITEST_POOL_ID`/`VITEST_WORKER_ID` (and `VITEST=true`), nothing naming the
/// file: the worker is what is said.
#[test]
fn a_real_vitest_test_that_leaks_a_child_is_named_by_its_worker() {
    let root = fixture("run/vitest");
    let vitest = node_bin("vitest");
    a_runners_leak_is_named(
        &[&vitest, "run", "--root", &root],
        "3313",
        "vitest",
        "worker 1",
    );
}

fn mcp_debugger_session(how: &str) -> Ran {
    let cli = debugtop_e2e::mcp::package_dir().join("dist/cli.mjs");
    let cli = cli.to_string_lossy().into_owned();
    let script = fixture("js-app/loop.js");
    let session = fixture("stdio/session.mjs");
    run(&[], &["node", &session, &cli, &script, how, "javascript"])
}

#[test]
fn mcp_debugger_killed_with_a_live_session_leaves_its_worker_and_adapter_chain() {
    let r = mcp_debugger_session("crash");
    assert_eq!(r.status, 86, "{}", r.stderr);
    let worker = r.survivor("proxy-bootstrap.js");
    assert_eq!(worker["role"], "worker", "{worker}");
    assert!(
        worker["finding"]
            .as_str()
            .is_some_and(|f| f.starts_with("orphaned-worker:")),
        "{worker}"
    );
    assert_eq!(r.survivor("vsDebugServer")["role"], "adapter");
    assert_eq!(r.survivor("loop.js")["role"], "debuggee");
    // Each one under the process that started it, the gone server among them.
    let adapter = r.survivor("vsDebugServer");
    assert!(
        argv_of(&adapter["ancestry"][0]).contains("proxy-bootstrap.js"),
        "{adapter}"
    );
    assert!(r.stderr.contains("worker"), "{}", r.stderr);
    ended_exactly_the_survivors(&r);
}

#[test]
fn mcp_debugger_with_its_session_closed_leaves_nothing() {
    let r = mcp_debugger_session("close");
    assert_eq!(
        (r.status, r.survivors().len()),
        (0, 0),
        "{}\n{}",
        r.stderr,
        r.report
    );
}

#[test]
fn a_stdio_server_that_ignores_eof_outlives_its_sigkilled_host_and_is_ended() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("host.json");
    std::fs::write(
        &config,
        serde_json::json!({"servers": [{"cmd": ["node", fixture("stdio/eof-ignorer.mjs")]}]})
            .to_string(),
    )
    .unwrap();
    let ready = dir.path().join("ready");
    let script = format!(
        "node {host} {config} > {ready} & host=$!; \
         for i in $(seq 200); do grep -q ready {ready} && break; sleep 0.1; done; kill -9 $host",
        host = fixture("stdio/host.mjs"),
        config = config.display(),
        ready = ready.display(),
    );
    let r = run(&["--grace", "1"], &["sh", "-c", &script]);
    assert_eq!(r.status, 86, "{}", r.stderr);
    let server = r.survivor("eof-ignorer.mjs");
    assert_eq!(server["role"], "server", "{server}");
    assert!(
        server["finding"]
            .as_str()
            .is_some_and(|f| f.starts_with("orphaned-server:")),
        "{server}"
    );
    ended_exactly_the_survivors(&r);
}

/// A survivor with a secret on its command line.
const SECRET: &str = "python3 -c 'import time; time.sleep(3952)' --password hunter2";

#[test]
fn the_snapshot_of_a_run_opens_as_an_incident_with_its_survivors() {
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("incident.json");
    let snap_arg = snap.to_string_lossy().into_owned();
    let r = run(
        &["--snapshot", &snap_arg, "--grace", "0.3"],
        &["sh", "-c", &format!("sleep 3951 & {SECRET} &")],
    );
    assert_eq!(r.status, 86);
    let s = debugtop_core::actions::export::import_file(&snap).expect("the app opens it");
    let pid = id_of(r.survivor("3951")).0;
    assert!(
        s.processes.iter().any(|p| p.pid == pid),
        "{:?}",
        s.processes
    );
    assert!(s.tree.iter().any(|n| n.pid == Some(pid)));
    let text = std::fs::read_to_string(&snap).unwrap();
    assert!(
        argv_of(r.survivor("3952")).contains("--password"),
        "{}",
        r.report
    );
    assert!(!text.contains("hunter2"), "redacted");
    let report = std::fs::read_to_string(r.path("report.json")).unwrap();
    assert!(!report.contains("hunter2"), "the report too");
    // Near miss: the secret was there to redact.
    let r = run(
        &["--no-redact", "--grace", "0.3"],
        &["sh", "-c", &format!("{SECRET} &")],
    );
    assert!(
        argv_of(r.survivor("3952")).contains("hunter2"),
        "{}",
        r.report
    );
}

/// The container `docker run` inside `scope`'s run started, by its short id, after one run
/// whose command starts it detached (as a test named by pytest's variable), runs a tidy
/// `--rm` container to its end, and exits; meanwhile the test itself starts a container of
/// the same image, which is not the run's.
fn a_containers_run(dockerd: &mut Dockerd, scope: &str) {
    let tag = format!("{}-{scope}", std::process::id());
    let (ours, tidy, theirs) = (
        format!("dt-run-{tag}"),
        format!("dt-tidy-{tag}"),
        format!("dt-near-{tag}"),
    );
    for n in [&ours, &tidy, &theirs] {
        dockerd.owns(n);
    }
    let docker = dockerd.command().join(" ");
    let image = debugtop_e2e::dockerd::IMAGE;
    let common = "--network host -v /usr:/usr:ro";
    let script = format!(
        "PYTEST_CURRENT_TEST='t/test_c.py::test_container (call)' {docker} run -d --name {ours} \
         {common} {image} sleep 3201 >/dev/null && {docker} run --rm --name {tidy} {common} \
         {image} true && sleep 1"
    );
    let near = {
        let start = dockerd.client(&[
            "run",
            "-d",
            "--name",
            &theirs,
            "--network",
            "host",
            "-v",
            "/usr:/usr:ro",
            image,
            "sleep",
            "3202",
        ]);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            let mut start = start;
            start.output()
        })
    };
    let r = run(
        &["--scope", scope, "--grace", "1"],
        &shell(&script)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(near.join().unwrap().unwrap().status.success());
    let id_of_name = |n: &str| {
        let out = dockerd.docker(&["inspect", "--format", "{{.Id}} {{.State.Running}}", n]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (id, running) = text.trim().split_once(' ').unwrap_or_default();
        (id.chars().take(12).collect::<String>(), running == "true")
    };
    let ((our_id, ours_running), (their_id, theirs_running)) =
        (id_of_name(&ours), id_of_name(&theirs));
    assert_eq!(r.report["scope"]["kind"], scope, "{}", r.report);
    assert_eq!(
        (r.status, &r.report["verdict"]),
        (86, &Value::from("leaked")),
        "{}",
        r.stderr
    );
    let survivors = r.survivors();
    assert_eq!(
        survivors.len(),
        1,
        "only the container's sleep: {}\n{}",
        r.report,
        r.stderr
    );
    let s = &survivors[0];
    assert!(argv_of(s).contains("sleep 3201"), "{s}");
    assert_eq!(s["container"], Value::from(our_id.clone()), "{s}");
    assert_eq!(s["ancestry_complete"], true, "{s}");
    let client = s["ancestry"][0]["argv"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    assert!(
        client.contains("run -d --name") && client.contains(&ours),
        "started by the run's client: {s}"
    );
    assert_eq!(s["test"]["name"], "t/test_c.py::test_container", "{s}");
    assert_eq!(
        s["ended"]["outcome"], "container-killed",
        "{s}\n{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!("in container {our_id}")),
        "{}",
        r.stderr
    );
    assert!(!ours_running, "the run's container was ended");
    // The near miss: the same image, started during the run but not by it, still runs.
    assert!(theirs_running && their_id != our_id, "{their_id}");
    assert!(!r.report.to_string().contains("3202"), "{}", r.report);
    no_cgroup_left(&r);
}

#[test]
fn a_container_a_docker_run_in_the_command_started_is_its_leak_ended_through_the_engine() {
    let mut dockerd = Dockerd::start();
    for scope in ["cgroup", "subreaper"] {
        a_containers_run(&mut dockerd, scope);
    }
}
