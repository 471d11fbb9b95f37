//! Every fork and exec under this process, heard from the kernel as it happens (the proc
//! connector, `NETLINK_CONNECTOR`/`CN_IDX_PROC`). A run's looks are 50 ms apart: a parent that
//! starts a child and exits between two of them is never seen, and its orphan looks adopted.
//! The kernel's events name the parent at the fork, however short its life. Listening needs
//! `CAP_NET_ADMIN` (root); elsewhere the run does without, and says so.
//!
//! The events are the whole machine's; a thread keeps only those of this process's
//! descendants (followed from fork to exit), reads each new process's start at its fork and
//! its command line at its exec, and hands them on in order.

use std::collections::HashSet;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::Duration;

use rustix::fd::OwnedFd;
use rustix::net::netlink::SocketAddrNetlink;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

use super::{read_argv, read_member, read_test_env, Heard};

/// A listener to the kernel's process events, for as long as it lives.
#[derive(Debug)]
pub struct Forks {
    rx: Receiver<Heard>,
    stop: Arc<AtomicBool>,
}

/// The connector's group for process events.
const CN_IDX_PROC: u32 = 1;
/// `PROC_CN_MCAST_LISTEN`.
const LISTEN: u32 = 1;
/// `NLMSG_DONE`: how a connector message is framed.
const NLMSG_DONE: u16 = 3;
const PROC_EVENT_FORK: u32 = 0x1;
const PROC_EVENT_EXEC: u32 = 0x2;
const PROC_EVENT_EXIT: u32 = 0x8000_0000;
/// Where the event's data starts: the netlink header (16), the connector's (20), then the
/// event's kind, cpu and timestamp (16).
const EVENT_AT: usize = 36;
const DATA_AT: usize = EVENT_AT + 16;

impl Forks {
    /// Starts listening; an error where the kernel does not let this process (no
    /// `CAP_NET_ADMIN`, no connector).
    pub fn listen() -> io::Result<Self> {
        let fd = rustix::net::socket_with(
            AddressFamily::NETLINK,
            SocketType::DGRAM,
            SocketFlags::CLOEXEC,
            Some(rustix::net::netlink::CONNECTOR),
        )?;
        rustix::net::bind(&fd, &SocketAddrNetlink::new(0, CN_IDX_PROC))?;
        rustix::net::send(&fd, &listen_request(), SendFlags::empty())?;
        rustix::net::sockopt::set_socket_timeout(
            &fd,
            rustix::net::sockopt::Timeout::Recv,
            Some(Duration::from_millis(200)),
        )?;
        let (tx, rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("run-forks".into())
            .spawn(move || follow(&fd, &stopped, |h| tx.send(h).is_ok()))?;
        Ok(Self { rx, stop })
    }

    /// What was heard since the last call, in order.
    pub fn drain(&self) -> Vec<Heard> {
        self.rx.try_iter().collect()
    }
}

impl Drop for Forks {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The one message that subscribes: a netlink header, a connector header for the process
/// events, and the listen operation.
fn listen_request() -> Vec<u8> {
    let op = LISTEN.to_ne_bytes();
    let mut cn = Vec::with_capacity(24);
    for word in [CN_IDX_PROC, 1, 0, 0] {
        cn.extend(word.to_ne_bytes());
    }
    cn.extend(u16::try_from(op.len()).unwrap_or(4).to_ne_bytes());
    cn.extend(0u16.to_ne_bytes());
    cn.extend(op);
    let mut msg = Vec::with_capacity(16 + cn.len());
    msg.extend(u32::try_from(16 + cn.len()).unwrap_or(0).to_ne_bytes());
    msg.extend(NLMSG_DONE.to_ne_bytes());
    msg.extend(0u16.to_ne_bytes());
    msg.extend(0u32.to_ne_bytes());
    msg.extend(std::process::id().to_ne_bytes());
    msg.extend(cn);
    msg
}

/// One event as the kernel framed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Fork {
        parent: u32,
        child_pid: u32,
        child: u32,
    },
    Exec {
        pid: u32,
    },
    Exit {
        pid: u32,
        thread: u32,
    },
}

fn parse(msg: &[u8]) -> Option<Event> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(msg.get(at..at + 4)?.try_into().ok()?))
    };
    match word(EVENT_AT)? {
        PROC_EVENT_FORK => Some(Event::Fork {
            parent: word(DATA_AT + 4)?,
            child_pid: word(DATA_AT + 8)?,
            child: word(DATA_AT + 12)?,
        }),
        PROC_EVENT_EXEC => Some(Event::Exec {
            pid: word(DATA_AT + 4)?,
        }),
        PROC_EVENT_EXIT => Some(Event::Exit {
            thread: word(DATA_AT)?,
            pid: word(DATA_AT + 4)?,
        }),
        _ => None,
    }
}

/// Reads events until `stop`, following this process's descendants, each one handed to
/// `send` (false: nobody listens any more).
fn follow(fd: &OwnedFd, stop: &AtomicBool, mut send: impl FnMut(Heard) -> bool) {
    let mut ours: HashSet<u32> = [std::process::id()].into_iter().collect();
    let mut buf = vec![0u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        let n = match rustix::net::recv(fd, &mut buf[..], RecvFlags::empty()) {
            Ok((n, _)) => n,
            Err(e) if e == rustix::io::Errno::AGAIN || e == rustix::io::Errno::INTR => continue,
            // Too many events at once: some were lost; the looks still see what lives.
            Err(e) if e == rustix::io::Errno::NOBUFS => continue,
            Err(_) => return,
        };
        let Some(event) = buf.get(..n).and_then(parse) else {
            continue;
        };
        if let Some(h) = hear(&mut ours, event) {
            if !send(h) {
                return;
            }
        }
    }
}

/// One event against the descendants followed so far.
fn hear(ours: &mut HashSet<u32>, event: Event) -> Option<Heard> {
    match event {
        Event::Fork {
            parent,
            child_pid,
            child,
        } if child_pid == child && ours.contains(&parent) => {
            ours.insert(child);
            Some(Heard::Born {
                pid: child,
                ppid: parent,
                start_ticks: read_member(child).map_or(0, |m| m.start_ticks),
            })
        }
        Event::Exec { pid } if ours.contains(&pid) => Some(Heard::Ran {
            pid,
            start_ticks: read_member(pid).map_or(0, |m| m.start_ticks),
            argv: read_argv(pid),
            test_env: read_test_env(pid),
        }),
        Event::Exit { pid, thread } if pid == thread && pid != std::process::id() => {
            ours.remove(&pid);
            None
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(what: u32, data: [u32; 4]) -> Vec<u8> {
        let mut m = vec![0u8; EVENT_AT];
        m.extend(what.to_ne_bytes());
        m.extend([0u8; 12]);
        for w in data {
            m.extend(w.to_ne_bytes());
        }
        m
    }

    #[test]
    fn only_this_processs_descendants_are_followed_from_fork_to_exit() {
        let me = std::process::id();
        let mut ours: HashSet<u32> = [me].into_iter().collect();
        let fork = |parent, child| parse(&event(PROC_EVENT_FORK, [parent, parent, child, child]));
        // Someone else's fork, and a thread of ours: nothing heard.
        assert_eq!(hear(&mut ours, fork(1, 4_000_001).unwrap()), None);
        let thread = parse(&event(PROC_EVENT_FORK, [me, me, 4_000_002, me])).unwrap();
        assert_eq!(hear(&mut ours, thread), None);
        // Our child, then its child: both born, under the one that forked each.
        let born = hear(&mut ours, fork(me, 4_000_003).unwrap());
        assert!(matches!(born, Some(Heard::Born { pid: 4_000_003, ppid, .. }) if ppid == me));
        let born = hear(&mut ours, fork(4_000_003, 4_000_004).unwrap());
        assert!(matches!(
            born,
            Some(Heard::Born {
                ppid: 4_000_003,
                ..
            })
        ));
        // Once it exits, its pid is nobody's: a reuse of it is not followed.
        let exit = parse(&event(PROC_EVENT_EXIT, [4_000_003, 4_000_003, 0, 0])).unwrap();
        assert_eq!(hear(&mut ours, exit), None);
        assert_eq!(hear(&mut ours, fork(4_000_003, 4_000_005).unwrap()), None);
        assert_eq!(parse(&[0u8; 10]), None);
        assert_eq!(parse(&event(0x40, [0; 4])), None);
    }

    #[test]
    fn a_short_lived_parent_is_heard_where_the_kernel_lets_this_process_listen() {
        let Ok(forks) = Forks::listen() else {
            // Not root: the run does without (its docs say so).
            return;
        };
        let out = std::process::Command::new("sh")
            .args(["-c", "(true &); exit 0"])
            .status()
            .expect("sh");
        assert!(out.success());
        std::thread::sleep(Duration::from_millis(300));
        let heard = forks.drain();
        let born: Vec<(u32, u32)> = heard
            .iter()
            .filter_map(|h| match h {
                Heard::Born { pid, ppid, .. } => Some((*pid, *ppid)),
                Heard::Ran { .. } => None,
            })
            .collect();
        // sh, its subshell, and the subshell's child: a chain of three.
        let sh = born.iter().find(|(_, p)| *p == std::process::id()).copied();
        let (sh, _) = sh.unwrap_or_else(|| panic!("sh was not heard: {heard:?}"));
        let sub = born.iter().find(|(_, p)| *p == sh).map(|b| b.0);
        let sub = sub.unwrap_or_else(|| panic!("the subshell was not heard: {heard:?}"));
        assert!(born.iter().any(|(_, p)| *p == sub), "{heard:?}");
    }
}
