//! A program that leaves the job it runs in, as a Windows program may (the tests run it under
//! `run`, under Wine): it starts one child asking to break away from its job
//! (`CREATE_BREAKAWAY_FROM_JOB`) and one child as usual, prints `away <pid>` and `stayed
//! <pid>`, stays a moment so that its children are seen with their parent alive, and exits.
//!
//! `breakaway` starts them; `breakaway wait` is each child.

#[cfg(windows)]
fn main() {
    use std::os::windows::process::CommandExt;

    /// `CREATE_BREAKAWAY_FROM_JOB`.
    const BREAKAWAY: u32 = 0x0100_0000;

    if std::env::args().nth(1).as_deref() == Some("wait") {
        std::thread::sleep(std::time::Duration::from_secs(120));
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        println!("error no path to this program");
        std::process::exit(2);
    };
    let start = |flags: u32| {
        std::process::Command::new(&exe)
            .arg("wait")
            .creation_flags(flags)
            .spawn()
            .map(|c| c.id())
    };
    match (start(BREAKAWAY), start(0)) {
        (Ok(away), Ok(stayed)) => {
            println!("away {away}");
            println!("stayed {stayed}");
        }
        (a, s) => {
            println!("error cannot start the children: {a:?} {s:?}");
            std::process::exit(2);
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
}

#[cfg(not(windows))]
fn main() {
    println!("error this program leaves a Windows job: build it for x86_64-pc-windows-gnu");
    std::process::exit(2);
}
