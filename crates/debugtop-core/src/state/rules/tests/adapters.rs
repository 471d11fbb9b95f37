//! The leaked-adapter rule (`rules/adapters.rs`), and its memoised finding.

use crate::model::{FindingKind, Language, ProcState, Role};
use crate::testing::{ObservationBuilder as Obs, ProcBuilder as P};

use super::{created, held, kinds, memo_follows, worker};

#[test]
fn leaked_adapter_under_init_and_near_miss_under_a_live_worker() {
    let adapter = |ppid: u32| {
        P::new(300, Role::Adapter)
            .ppid(ppid)
            .main_pid(100)
            .session("s-1")
            .language(Language::Javascript)
            .build()
    };
    let f = held(|t| created(Obs::at(t), 1, -30, "s-1").proc(adapter(1)).build());
    assert_eq!(kinds(&f), [FindingKind::LeakedAdapter]);
    assert!(
        f[0].evidence[0].contains("its parent is pid 1 (reparented to init), not a live worker")
    );
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.contains("MCP_DEBUGGER_MAIN_PID=100 (a live server)")));
    let f = held(|t| {
        created(Obs::at(t), 1, -30, "s-1")
            .proc(worker(200, "s-1").build())
            .proc(adapter(200))
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
}

#[test]
fn a_memoised_leaked_adapter_follows_every_input() {
    let session = |p: P| p.session("s-1");
    let base = |t: i64| {
        Obs::at(t)
            .proc(
                session(P::new(300, Role::Adapter))
                    .main_pid(100)
                    .language(Language::Python)
                    .build(),
            )
            .proc(
                session(P::new(301, Role::Debuggee))
                    .ppid(300)
                    .group(300, 300)
                    .build(),
            )
    };
    memo_follows(
        FindingKind::LeakedAdapter,
        300,
        base,
        &[
            ("its parent is re-read (now a zombie)", &|o| {
                o.proc(P::new(1, Role::Other).state(ProcState::Zombie).build())
            }),
            ("another process joins its group", &|o| {
                o.proc(
                    session(P::new(302, Role::Debuggee))
                        .ppid(301)
                        .group(300, 300)
                        .build(),
                )
            }),
            ("a watchdog of its session appears", &|o| {
                o.proc(session(P::new(303, Role::Watchdog)).inspector(300).build())
            }),
            ("its debuggee's command line changes", &|o| {
                o.replacing(
                    session(P::new(301, Role::Debuggee))
                        .ppid(300)
                        .group(300, 300)
                        .argv("python other.py")
                        .build(),
                )
            }),
            ("the server its marker names is gone", &|o| {
                o.without_server()
            }),
            ("the adapter itself is re-read", &|o| {
                o.replacing(
                    session(P::new(300, Role::Adapter))
                        .main_pid(100)
                        .language(Language::Python)
                        .was_under(200)
                        .build(),
                )
            }),
        ],
    );
}
