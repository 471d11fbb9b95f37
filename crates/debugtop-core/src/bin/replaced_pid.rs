//! The Windows kill's identity check, driven for real (the tests run it under Wine): a plan
//! whose target pid now belongs to a process created at another time — a replaced pid — is
//! refused and the process is left alone; the same plan with the process's own creation time
//! terminates it. Prints one line per step: `<step> <outcome>`.
//!
//! `replaced_pid` runs the steps; `replaced_pid wait` is the child it plans against.

#[cfg(windows)]
fn main() {
    use debugtop_core::actions::kill::execute;
    use debugtop_core::model::{KillMethod, KillPlan, KillTarget, Role, Via};
    use debugtop_core::win32::{open, Access};

    if std::env::args().nth(1).as_deref() == Some("wait") {
        std::thread::sleep(std::time::Duration::from_secs(120));
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        println!("error no path to this program");
        return;
    };
    let Ok(mut child) = std::process::Command::new(exe).arg("wait").spawn() else {
        println!("error cannot start the child");
        return;
    };
    let pid = child.id();
    let Some((created, _)) = open(pid, Access::Query).ok().and_then(|h| h.times()) else {
        println!("error cannot read the child's creation time");
        return;
    };
    let plan = |start_ticks: u64| KillPlan {
        targets: vec![KillTarget {
            pid,
            start_ticks,
            role: Role::Other,
            pgid: 0,
            sid: 0,
            argv: vec!["replaced_pid".into(), "wait".into()],
            via: Via::Target,
        }],
        refused: Vec::new(),
        grace_ms: 0,
        method: KillMethod::Terminate,
        container: None,
    };
    // The pid, as if another process had been created under it since the plan.
    let replaced = execute(&plan(created + 10_000_000), |_| {});
    println!("replaced {}", replaced.outcomes[0].outcome);
    let alive = matches!(child.try_wait(), Ok(None));
    println!("alive-after-refusal {alive}");
    let same = execute(&plan(created), |_| {});
    println!("same {}", same.outcomes[0].outcome);
    let gone = matches!(child.try_wait(), Ok(Some(_)));
    println!("gone-after-terminate {gone}");
}

#[cfg(not(windows))]
fn main() {
    println!("error this program drives the Windows kill: build it for x86_64-pc-windows-gnu");
    std::process::exit(2);
}
