//! The duplicate-server rule (`rules/duplicate_servers.rs`): an older twin left behind under a live host.

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

/// A host that runs every server twice on purpose (two subsystems, each with its own copy):
/// time and memory, each copy started 2 s after the first, the younger copy of each the one it
/// talks to, the older silent for 5 min. `memory_gap` is how long after the first memory copy
/// the second one started.
fn paired_host(memory_gap: i64) -> impl Fn(i64) -> Observation {
    move |t| {
        let server = |pid: u32, argv: &str, started: i64, quiet: i64| {
            stdio_server(pid)
                .ppid(500)
                .argv(argv)
                .holders(&[500])
                .host(500, 5000)
                .started(crate::testing::at(started))
                .quiet_since(crate::testing::at(t + quiet))
                .build()
        };
        with_host(Obs::at(t))
            .proc(server(600, "uvx mcp-server-time", -600, -300))
            .proc(server(601, "uvx mcp-server-time", -598, 0))
            .proc(server(610, "npx server-memory", -600, -300))
            .proc(server(611, "npx server-memory", -600 + memory_gap, 0))
            .build()
    }
}

#[test]
fn a_host_that_keeps_every_server_twice_on_purpose_raises_nothing() {
    let f = held(paired_host(2));
    assert!(
        !kinds(&f).contains(&FindingKind::DuplicateServer),
        "copies started together, every server of the host in pairs: {f:#?}"
    );
}

/// The pids of each `duplicate-server` finding.
fn duplicate_pids(f: &[crate::model::Finding]) -> Vec<Vec<u32>> {
    f.iter()
        .filter(|x| x.kind == FindingKind::DuplicateServer)
        .map(|x| x.pids.clone())
        .collect()
}

#[test]
fn near_misses_of_a_host_with_copies_on_purpose_stay_duplicates() {
    // One set's second copy came long after the first: a reconnect, not a subsystem's copy.
    let f = held(paired_host(300));
    let dups = duplicate_pids(&f);
    assert_eq!(dups, [vec![600], vec![610]], "{f:#?}");
    // The host's servers are not all in pairs: its twin is a reconnect's leftover.
    let f = held(move |t| {
        let mut o = paired_host(2)(t);
        o.table.procs.retain(|p| p.pid != 611);
        o
    });
    let dups = duplicate_pids(&f);
    assert_eq!(dups, [vec![600]], "{f:#?}");
    // A host with one server only, kept twice and started together: a quick reconnect looks
    // the same, so it stays a duplicate.
    let f = held(move |t| {
        let mut o = paired_host(2)(t);
        o.table.procs.retain(|p| p.pid != 610 && p.pid != 611);
        o
    });
    let dups = duplicate_pids(&f);
    assert_eq!(dups, [vec![600]], "{f:#?}");
}

/// A duplicate is dated from its silence: "since" is when the older twin fell silent, and it is
/// confirmed once the quiet time and the grace have passed.
#[test]
fn a_duplicate_is_dated_from_its_silence() {
    let f = held(twins_where(-300, -100, -100, with_host));
    let dup = f
        .iter()
        .find(|x| x.kind == FindingKind::DuplicateServer)
        .expect("the duplicate");
    assert!(
        dup.since < dup.confirmed_at.expect("confirmed"),
        "{:?} then {:?}",
        dup.since,
        dup.confirmed_at
    );
    let e = dup.evidence.join("\n");
    assert!(
        e.contains(&format!("(since {})", dup.since.format("%H:%M:%S"))),
        "the evidence and the date agree: {e} / {}",
        dup.since
    );
}
