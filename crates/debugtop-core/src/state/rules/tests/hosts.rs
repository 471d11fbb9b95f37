//! The host rules (`rules/hosts.rs`): orphaned-server, orphaned-stdio and orphaned-container
//! (and a leaked stdio chain's one plan, which `spinning` shares).

use crate::model::{FindingKind, Observation, ProcState, Role, Severity};
use crate::testing::{ObservationBuilder as Obs, ProcBuilder as P};

use super::{held, kinds, planned, run, stdio_server};

#[test]
fn orphaned_server_nobody_can_write_to_its_host_gone() {
    let f = held(|t| {
        Obs::at(t)
            .proc(stdio_server(600).holders(&[]).host(500, 5000).build())
            .proc(P::new(601, Role::Other).ppid(600).server(Some(600)).build())
            .build()
    });
    assert_eq!(kinds(&f), [FindingKind::OrphanedServer]);
    let e = f[0].evidence.join("\n");
    assert!(
        e.contains("no process holds the writing end of its stdio pipe (pipe:[77])"),
        "{e}"
    );
    assert!(e.contains("its MCP host 500 (host500) is gone"), "{e}");
    assert!(
        e.contains("its command line names /n/@modelcontextprotocol/server-memory"),
        "{e}"
    );
    assert!(e.contains("still running under it: 601"), "{e}");
    let planned: Vec<u32> = f[0]
        .plan
        .as_ref()
        .map(|p| p.targets.iter().map(|t| t.pid).collect())
        .unwrap_or_default();
    assert_eq!(
        planned,
        [601, 600],
        "what it started first, then the server"
    );
}

#[test]
fn orphaned_server_where_pipe_holders_cannot_be_checked_rests_on_its_gone_parent() {
    // Windows: nobody's handles can be enumerated; the process that started it (pid 500, its
    // parent pid as Windows keeps it) is gone.
    let f = held(|t| {
        Obs::at(t)
            .proc(stdio_server(600).ppid(500).holders_unchecked().build())
            .build()
    });
    assert_eq!(kinds(&f), [FindingKind::OrphanedServer]);
    let e = f[0].evidence.join("\n");
    assert!(e.contains("cannot be checked here"), "{e}");
    assert!(e.contains("rests on its host being gone"), "{e}");
    assert!(
        e.contains("the process that started it (pid 500) is gone"),
        "{e}"
    );
    // Near misses: its parent lives (and was there before it); or the pid 500 was reused by a
    // younger process, which is no parent — then it is an orphan again.
    let parent = P::new(500, Role::Other).build();
    let f = held(|t| {
        Obs::at(t)
            .proc(parent.clone())
            .proc(stdio_server(600).ppid(500).holders_unchecked().build())
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
    let mut younger = parent;
    younger.start_time += chrono::Duration::hours(1);
    let f = held(|t| {
        Obs::at(t)
            .proc(younger.clone())
            .proc(stdio_server(600).ppid(500).holders_unchecked().build())
            .build()
    });
    assert_eq!(kinds(&f), [FindingKind::OrphanedServer], "{f:#?}");
}

#[test]
fn a_server_leaked_through_npx_is_one_orphaned_server_planned_from_its_wrapper_down() {
    use crate::model::Adopted;
    // npm exec (re-parented to init) → sh -c → the server → its child; the server says MCP by
    // its package only, its wrappers share its dead stdin pipe.
    let chain = |t: i64| {
        Obs::at(t)
            .proc(
                P::new(700, Role::Wrapper)
                    .argv("npm exec --package=/w/tool -- tool")
                    .adopted(Adopted::Init)
                    .server(Some(702))
                    .piped(77)
                    .holders(&[])
                    .build(),
            )
            .proc(
                P::new(701, Role::Wrapper)
                    .argv("sh -c tool")
                    .ppid(700)
                    .server(Some(702))
                    .piped(77)
                    .build(),
            )
            .proc(
                stdio_server(702)
                    .ppid(701)
                    .argv("node /w/tool/index.mjs")
                    .mcp(crate::model::McpEvidence::Package {
                        file: "/w/tool/package.json".into(),
                        says: "dependencies has @modelcontextprotocol/sdk".into(),
                    })
                    .holders(&[])
                    .build(),
            )
            .proc(P::new(703, Role::Other).ppid(702).server(Some(702)).build())
            .build()
    };
    let f = held(chain);
    assert_eq!(kinds(&f), [FindingKind::OrphanedServer], "{f:#?}");
    assert_eq!(planned(&f[0]), [703, 702, 701, 700], "leaves first");
    let e = f[0].evidence.join("\n");
    assert!(
        e.contains("started through npx: pid 700 (npm exec --package=/w/tool -- tool), re-parented to init"),
        "{e}"
    );
    assert!(e.contains("/w/tool/package.json — dependencies has"), "{e}");
}

#[test]
fn an_adopted_process_nobody_can_write_to_is_an_orphaned_stdio_warning_not_critical() {
    use crate::model::Adopted;
    let helper = |holders: &'static [u32], adopted: Option<Adopted>| {
        move |t: i64| {
            let mut p = P::new(800, Role::Other)
                .argv("python3 -c import time")
                .server(Some(800))
                .piped(88)
                .holders(holders);
            p = match adopted.clone() {
                Some(a) => p.adopted(a),
                None => p.ppid(500),
            };
            Obs::at(t)
                .proc(p.build())
                .proc(P::new(801, Role::Other).ppid(800).server(Some(800)).build())
                .build()
        }
    };
    let f = held(helper(
        &[],
        Some(Adopted::Subreaper {
            pid: 40,
            name: "systemd --user".into(),
        }),
    ));
    assert_eq!(kinds(&f), [FindingKind::OrphanedStdio], "{f:#?}");
    assert_eq!(f[0].severity, Severity::Warning);
    assert_eq!(planned(&f[0]), [801, 800]);
    let e = f[0].evidence.join("\n");
    assert!(
        e.contains("no process holds the writing end of its stdin pipe (pipe:[88]), so nothing can write to it"),
        "{e}"
    );
    assert!(
        e.contains("adopted by the subreaper systemd --user (pid 40)"),
        "{e}"
    );
    // Near misses: someone still holds the writing end; its parent is the one that started it.
    assert!(held(helper(&[900], Some(Adopted::Init))).is_empty());
    assert!(held(helper(&[], None)).is_empty());
}

#[test]
fn a_spinning_orphan_on_a_closed_pipe_is_orphaned_and_spinning_with_one_plan() {
    use crate::model::Adopted;
    // claude-code's shape: the orphan itself loops on writes to its closed stdout (state R).
    let obs = |t: i64, cpu: f32| {
        Obs::at(t)
            .proc(
                P::new(800, Role::Other)
                    .argv("python3 -c spin")
                    .adopted(Adopted::Init)
                    .server(Some(800))
                    .piped(88)
                    .holders(&[])
                    .cpu(cpu)
                    .state(ProcState::Running)
                    .build(),
            )
            .proc(P::new(801, Role::Other).ppid(800).server(Some(800)).build())
            .build()
    };
    let f = run([obs(0, 97.0), obs(3, 97.0), obs(6, 97.0)]);
    assert_eq!(
        kinds(&f),
        [FindingKind::OrphanedStdio, FindingKind::Spinning],
        "{f:#?}"
    );
    let (orphan, spin) = (&f[0], &f[1]);
    assert_eq!(orphan.plan, spin.plan, "one plan for both");
    assert_eq!(planned(spin), [801, 800]);
    assert!(
        spin.plan.as_ref().is_some_and(|p| p.grace_ms <= 1_000),
        "SIGKILL follows after a second"
    );
    assert!(
        spin.evidence
            .iter()
            .any(|e| e.contains("part of a leaked stdio chain from pid 800")),
        "{:?}",
        spin.evidence
    );
    // Near miss: the same orphan idle is no spinner (and its plan keeps the normal grace).
    let f = run([obs(0, 0.5), obs(3, 0.5), obs(6, 0.5)]);
    assert_eq!(kinds(&f), [FindingKind::OrphanedStdio]);
}

#[test]
fn near_misses_of_an_orphaned_server() {
    // Its host is alive and writes to it.
    let host = P::new(500, Role::Host).build();
    let f = held(|t| {
        Obs::at(t)
            .proc(host.clone())
            .proc(
                stdio_server(600)
                    .ppid(500)
                    .holders(&[500])
                    .host(500, 5000)
                    .build(),
            )
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
    // A supervisor still holds its pipes (its host is gone, but someone can write to it).
    let f = held(|t| {
        Obs::at(t)
            .proc(stdio_server(600).holders(&[42]).build())
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
    // A daemon under init with stdin /dev/null.
    let f = held(|t| {
        Obs::at(t)
            .proc(stdio_server(600).stdin_null().build())
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
    // A dead pipe but nothing says it is an MCP server.
    let mut plain = P::new(600, Role::Server)
        .ppid(1)
        .piped(77)
        .holders(&[])
        .build();
    plain.server_pid = Some(600);
    let f = held(|t| Obs::at(t).proc(plain.clone()).build());
    assert!(f.is_empty(), "{f:#?}");
}

/// A stdio MCP server as the main process of container `e84ebd27c0a2` (pid `inner` there),
/// its shim (pid 650) its parent; `holders` hold the writing end of its stdin.
fn container_server(inner: u32, holders: &'static [u32]) -> impl Fn(i64) -> Observation {
    move |t| {
        Obs::at(t)
            .proc(
                stdio_server(600)
                    .ppid(650)
                    .holders(holders)
                    .in_container(9, inner, Some("e84ebd27c0a2"))
                    .build(),
            )
            .proc(P::new(601, Role::Other).ppid(600).server(Some(600)).build())
            .build()
    }
}

#[test]
fn a_containers_stdio_server_nobody_can_write_to_is_an_orphaned_container_ended_through_docker() {
    let f = held(container_server(1, &[]));
    assert_eq!(kinds(&f), [FindingKind::OrphanedContainer], "{f:#?}");
    assert_eq!(f[0].severity, Severity::Critical);
    let plan = f[0].plan.as_ref().expect("a plan");
    assert_eq!(
        plan.container,
        Some(crate::model::ContainerStop {
            id: "e84ebd27c0a2".into(),
            main_pid: 600,
            main_start_ticks: 6000,
        })
    );
    assert_eq!(
        planned(&f[0]),
        [601, 600],
        "what runs in it, if it outlives docker kill"
    );
    assert!(f[0]
        .suggested_action
        .starts_with("docker kill e84ebd27c0a2"));
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.contains("main process of container e84ebd27c0a2")));
    // Near misses: a live client (the shim holds the writing end); a server that is not the
    // container's main process is an orphaned server, planned by signals.
    assert!(held(container_server(1, &[650])).is_empty());
    let f = held(container_server(7, &[]));
    assert_eq!(kinds(&f), [FindingKind::OrphanedServer], "{f:#?}");
    assert_eq!(f[0].plan.as_ref().and_then(|p| p.container.clone()), None);
}
