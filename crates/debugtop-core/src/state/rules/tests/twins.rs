//! The duplicate-server rule (`rules/twins.rs`): an older twin left behind under a live host.

use crate::model::{FindingKind, Observation, Role, Severity};
use crate::testing::{ObservationBuilder as Obs, ProcBuilder as P};

use super::{held, kinds, planned, stdio_server};

/// A live host (500) and two stdio servers it started with one command line: 600 started ten
/// minutes ago, silent since `a_quiet`; 601 started at `b_started`, silent since `b_quiet`
/// (offsets from each tick's time, in seconds).
fn twins(a_quiet: i64, b_started: i64, b_quiet: i64) -> impl Fn(i64) -> Observation {
    twins_where(a_quiet, b_started, b_quiet, |o| o)
}

/// [`twins`], each tick's observation changed by `edit`.
fn twins_where(
    a_quiet: i64,
    b_started: i64,
    b_quiet: i64,
    edit: impl Fn(Obs) -> Obs,
) -> impl Fn(i64) -> Observation {
    move |t| {
        let server = |pid: u32, started: i64, quiet: i64| {
            stdio_server(pid)
                .ppid(500)
                .holders(&[500])
                .host(500, 5000)
                .started(crate::testing::at(started))
                .quiet_since(crate::testing::at(t + quiet))
        };
        let o = Obs::at(t)
            .proc(server(600, -600, a_quiet).build())
            .proc(P::new(602, Role::Other).ppid(600).server(Some(600)).build())
            .proc(server(601, b_started, b_quiet).build());
        edit(o).build()
    }
}

fn with_host(o: Obs) -> Obs {
    o.proc(
        P::new(500, Role::Host)
            .started(crate::testing::at(-900))
            .build(),
    )
}

#[test]
fn an_older_twin_silent_while_the_newer_talks_under_a_live_host_is_a_duplicate_server() {
    // Silent since before its twin started (a reconnect after a config edit).
    let f = held(twins_where(-300, -100, -100, with_host));
    assert_eq!(kinds(&f), [FindingKind::DuplicateServer], "{f:#?}");
    assert_eq!(f[0].severity, Severity::Warning);
    assert_eq!(f[0].pids, [600]);
    assert_eq!(
        planned(&f[0]),
        [602, 600],
        "the older one and what it started"
    );
    let e = f[0].evidence.join("\n");
    assert!(e.contains("has read and written nothing for 300 s"), "{e}");
    assert!(
        e.contains("pid 601, started 194 s after it fell silent"),
        "{e}"
    );
    assert!(
        e.contains("host 500 (host500) is alive and still holds its stdin"),
        "{e}"
    );
    // debugtop came later: the older one silent since its first look, the newer one talking.
    let f = held(twins_where(-50, -100, 0, with_host));
    assert_eq!(kinds(&f), [FindingKind::DuplicateServer], "{f:#?}");
    assert!(f[0]
        .evidence
        .join("\n")
        .contains("has talked since it fell silent"));
}

#[test]
fn near_misses_of_a_duplicate_server() {
    let live = |a, b, c| held(twins_where(a, b, c, with_host));
    // Twins that both talk.
    assert!(live(0, -100, 0).is_empty());
    // Neither talked since debugtop first looked: which one the host uses cannot be told.
    assert!(live(-50, -100, -50).is_empty());
    // Silent, but not for long.
    assert!(live(-10, -5, 0).is_empty());
    // The newer one is the silent one: the host still uses the older.
    assert!(live(0, -100, -90).is_empty());
    // Not twins: another command line.
    let f = held(twins_where(-300, -100, -100, |o| {
        with_host(o).proc(
            stdio_server(603)
                .ppid(500)
                .argv("node other.js")
                .holders(&[500])
                .host(500, 5000)
                .started(crate::testing::at(-100))
                .build(),
        )
    }));
    assert_eq!(f.len(), 1, "only the real twin: {f:#?}");
    // Their host is gone: the orphan rules speak, not this one.
    let f = held(twins(-300, -100, -100));
    assert!(!kinds(&f).contains(&FindingKind::DuplicateServer), "{f:#?}");
}
