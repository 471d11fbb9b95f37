//! Secrets planted in the command lines a step reads — each form the reviews found, each as the
//! separate arguments a process really has — never reach anything a step publishes or an
//! export writes: tree labels, findings' and unconfirmed findings' evidence and plans, groups,
//! the timeline, a gone host's label, the Markdown, at every tick. Text made from a command
//! line is hidden argument by argument before its words are joined; free-text redaction of the
//! joined line could not tell which words were one argument.

use super::{State, StateConfig};
use crate::model::{McpEvidence, Role, Snapshot};
use crate::testing::{at, ObservationBuilder, ProcBuilder};

/// Each form as a process's arguments; every secret starts `ZqS`.
const FORMS: [&[&str]; 12] = [
    &["--password", "alpha ZqS1"],
    &["--token", "x ZqS2"],
    &["--password=alpha ZqS3"],
    &["-ualice:ZqS4"],
    &["--requirepass", "ZqS5"],
    &["--accessKey", "ZqS6"],
    &["--privateKey", "ZqS7"],
    &["-H", "X-Auth-Token:ZqS8"],
    &[r#"{\"token\":\"ZqS9\"}"#],
    &["password:ZqSa"],
    &["{'password': 'ZqSb'}"],
    &["--password", "-ZqSc"],
];

fn with_forms(program: &[&'static str]) -> Vec<&'static str> {
    let mut argv = program.to_vec();
    for f in FORMS {
        argv.extend_from_slice(f);
    }
    argv
}

/// A host with a stdio server (and its child) and an orphaned worker, every one of them with
/// every form on its command line; the host dies after the first tick.
fn world(t: i64, host_alive: bool) -> crate::model::Observation {
    let host = with_forms(&["node", "/home/dev/agent/host.mjs"]);
    let server = ProcBuilder::new(600, Role::Server)
        .argv_words(&with_forms(&["node", "/home/dev/mcp/eof-ignorer.mjs"]))
        .mcp(McpEvidence::HostChild)
        .piped(77)
        .host(500, 5000)
        .host_argv(&host)
        .started(at(-300));
    let server = if host_alive {
        server.ppid(500).holders(&[500])
    } else {
        server.ppid(1).holders(&[]).was_under(500)
    };
    let mut o = ObservationBuilder::at(t)
        .proc(server.build())
        .proc(
            ProcBuilder::new(601, Role::Other)
                .ppid(600)
                .server(Some(600))
                .argv_words(&with_forms(&["sleep", "3600"]))
                .host(500, 5000)
                .host_argv(&host)
                .build(),
        )
        .proc(
            ProcBuilder::new(1100, Role::Worker)
                .ppid(1)
                .owner(4242)
                .server(Some(4242))
                .session("s-1")
                .argv_words(&with_forms(&["node", "/n/dist/proxy/proxy-bootstrap.js"]))
                .build(),
        );
    if host_alive {
        o = o.proc(
            ProcBuilder::new(500, Role::Host)
                .ppid(40)
                .server(None)
                .argv_words(&host)
                .started(at(-400))
                .build(),
        );
    }
    o.build()
}

fn leaks(s: &Snapshot) -> Vec<String> {
    let json = serde_json::to_string(s).unwrap_or_default();
    let md = crate::report::markdown::render(s);
    let mut found: Vec<String> = [json, md]
        .iter()
        .flat_map(|t| {
            t.match_indices("ZqS")
                .map(|(i, _)| t[i..].chars().take(6).collect())
        })
        .collect();
    found.dedup();
    found
}

#[test]
fn no_secret_form_on_a_command_line_reaches_anything_published_at_any_tick() {
    let mut state = State::new(StateConfig {
        publish_unconfirmed: true,
        ..StateConfig::default()
    });
    let mut saw_findings = false;
    for (t, alive) in [(-10, true), (0, false), (6, false), (12, false)] {
        let u = state.step(world(t, alive));
        let s = &u.snapshot;
        saw_findings |= !s.findings.is_empty();
        assert!(leaks(s).is_empty(), "tick {t}: {:?}", leaks(s));
        let exported = crate::actions::export::prepare(&state.raw_snapshot(), true, None);
        assert!(
            leaks(&exported).is_empty(),
            "export at {t}: {:?}",
            leaks(&exported)
        );
    }
    assert!(
        saw_findings,
        "the world raised findings whose evidence could carry the forms"
    );
    // Near miss: the raw snapshot the step kept still has them (redaction is at the door).
    let raw = state.raw_snapshot();
    assert!(serde_json::to_string(&*raw)
        .unwrap_or_default()
        .contains("ZqS1"));
}

/// A worker of 4242's with `argv`, using `cpu` % of a core.
fn worker(pid: u32, argv: &[&str], cpu: f32) -> crate::model::Proc {
    ProcBuilder::new(pid, Role::Worker)
        .ppid(1)
        .owner(4242)
        .server(Some(4242))
        .session(&format!("s-{pid}"))
        .argv_words(argv)
        .cpu(cpu)
        .build()
}

#[test]
fn what_has_nothing_to_redact_leaves_as_the_steps_own_allocation_and_a_secret_never_does() {
    use std::sync::Arc;
    let plain = ["node", "/n/dist/proxy/proxy-bootstrap.js"];
    let secret = with_forms(&plain);
    let mut state = State::new(StateConfig::default());
    let find = |s: &Snapshot, pid: u32| {
        s.processes
            .iter()
            .find(|p| p.pid == pid)
            .cloned()
            .unwrap_or_else(|| panic!("{pid} is shown"))
    };
    // The figures move at the last tick: the plain process still leaves as it came.
    for (t, cpu) in [(0, 1.0), (1, 1.0), (2, 30.0)] {
        let obs = ObservationBuilder::at(t)
            .proc(worker(1100, &plain, cpu))
            .proc(worker(1200, &secret, cpu))
            .build();
        let shown = state.step(obs).snapshot;
        let raw = state.raw_snapshot();
        assert!(
            Arc::ptr_eq(&find(&raw, 1100), &find(&shown, 1100)),
            "tick {t}: nothing to redact, no copy"
        );
        assert_eq!(find(&shown, 1100).sample.cpu_percent, Some(cpu));
        let (raw_row, shown_row) = (row(&raw.tree, 1100), row(&shown.tree, 1100));
        assert!(Arc::ptr_eq(&raw_row, &shown_row), "tick {t}: its row too");
        // Near miss: the process with secrets leaves as a redacted copy, with the new figures.
        assert!(!Arc::ptr_eq(&find(&raw, 1200), &find(&shown, 1200)));
        assert_eq!(find(&shown, 1200).sample.cpu_percent, Some(cpu));
        assert!(leaks(&shown).is_empty(), "tick {t}: {:?}", leaks(&shown));
    }
}

/// The tree row of `pid`.
fn row(
    tree: &[std::sync::Arc<crate::model::TreeNode>],
    pid: u32,
) -> std::sync::Arc<crate::model::TreeNode> {
    fn walk(
        nodes: &[std::sync::Arc<crate::model::TreeNode>],
        pid: u32,
    ) -> Option<std::sync::Arc<crate::model::TreeNode>> {
        nodes.iter().find_map(|n| {
            if n.pid == Some(pid) {
                Some(std::sync::Arc::clone(n))
            } else {
                walk(&n.children, pid)
            }
        })
    }
    walk(tree, pid).unwrap_or_else(|| panic!("{pid} has a row"))
}
