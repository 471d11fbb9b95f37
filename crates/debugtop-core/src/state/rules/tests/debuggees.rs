//! The leaked-debuggee rule (`rules/debuggees.rs`): what survives of an adapter's chain.

use crate::model::{FindingKind, LogEventKind as K, LogOrigin, Role};
use crate::testing::{ObservationBuilder as Obs, ProcBuilder as P};

use super::{created, held, kinds, worker};

#[test]
fn a_lone_debuggee_whose_adapter_died_is_leaked_with_its_group() {
    let lone = |t: i64| {
        created(Obs::at(t), 1, -30, "s-1")
            .log(
                5,
                -5,
                LogOrigin::Server,
                K::SessionStopped {
                    session_id: "s-1".into(),
                },
            )
            .proc(
                P::new(301, Role::Debuggee)
                    .ppid(1)
                    .group(300, 300)
                    .main_pid(100)
                    .bootloader()
                    .session("s-1")
                    .build(),
            )
            .proc(
                P::new(302, Role::Watchdog)
                    .ppid(1)
                    .inspector(301)
                    .session("s-1")
                    .build(),
            )
            .build()
    };
    let f = held(lone);
    assert_eq!(
        kinds(&f),
        [FindingKind::LeakedDebuggee],
        "the watchdog is in the debuggee's plan, not a finding of its own"
    );
    let e = f[0].evidence.join("\n");
    for says in [
        "runs on without its adapter: its parent is pid 1",
        "the leader of its process group 300 is gone",
        "MCP_DEBUGGER_MAIN_PID=100 (a live server)",
        "js-debug's bootloader",
        "its session ended: marked as STOPPED/TERMINATED",
    ] {
        assert!(e.contains(says), "{says:?} missing from {e}");
    }
    let planned: Vec<u32> = f[0]
        .plan
        .as_ref()
        .map(|p| p.targets.iter().map(|t| t.pid).collect())
        .unwrap_or_default();
    assert!(
        planned.contains(&301) && planned.contains(&302),
        "{planned:?}"
    );
}

#[test]
fn near_misses_of_a_leaked_debuggee() {
    // Under a live adapter: the adapter answers for it.
    let f = held(|t| {
        created(Obs::at(t), 1, -30, "s-1")
            .proc(worker(200, "s-1").build())
            .proc(P::new(300, Role::Adapter).ppid(200).session("s-1").build())
            .proc(
                P::new(301, Role::Debuggee)
                    .ppid(300)
                    .group(300, 300)
                    .main_pid(100)
                    .bootloader()
                    .session("s-1")
                    .build(),
            )
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
    // A node process with js-debug's bootloader but nothing tying it to mcp-debugger (VS
    // Code's auto-attach in a terminal): not ours.
    let f = held(|t| {
        Obs::at(t)
            .proc(
                P::new(400, Role::Debuggee)
                    .ppid(1)
                    .bootloader()
                    .server(None)
                    .build(),
            )
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
}
