//! A child subreaper, the tests' stand-in for tini (`tests/tests/subreaper.rs`): it marks itself
//! with `prctl(PR_SET_CHILD_SUBREAPER)`, starts its arguments (a host) as a job of their own on
//! its stdout, prints `host <pid>`, then reaps whatever exits under it — its own child and every
//! orphan the kernel hands it — until it is killed. Run with `argv[0]` `tini` it is a subreaper
//! known by name; under its own name, one that is not.
#![allow(clippy::expect_used)]

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::errno::Errno;

fn main() {
    // Any non-zero value sets the attribute (rustix passes the pid given as that value).
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
        .expect("prctl(PR_SET_CHILD_SUBREAPER)");
    let mut args = std::env::args_os().skip(1);
    let program = args.next().expect("usage: subreaper PROGRAM [ARG…]");
    // Reaped by the wait(2) loop below, with every orphan handed over.
    #[allow(clippy::zombie_processes)]
    let host = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("cannot start the host");
    let mut out = std::io::stdout().lock();
    writeln!(out, "host {}", host.id())
        .and_then(|()| out.flush())
        .expect("stdout");
    drop(out);
    loop {
        if let Err(Errno::ECHILD) = nix::sys::wait::wait() {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
