//! The other end of a Unix socket, from the kernel's `sock_diag` netlink interface
//! (`UNIX_DIAG_PEER`, as `ss -x` shows it). Node starts its children's "pipes" as socket
//! pairs: a host's end of a stdio MCP server's stdin is the peer of the server's socket, and
//! its inode is what the host's `/proc/<pid>/fd` shows. Everything here is bytes in and out of
//! one netlink socket; any failure means "unknown", never a guess.

use std::collections::HashMap;

use rustix::net::netlink::SocketAddrNetlink;
use rustix::net::{RecvFlags, SendFlags};

use super::sock_diag::{
    open, u16_at, u32_at, NLMSG_DONE, NLMSG_ERROR, NLM_F_REQUEST, SOCK_DIAG_BY_FAMILY,
};

const AF_UNIX: u8 = 1;
const UDIAG_SHOW_PEER: u32 = 4;
const UNIX_DIAG_PEER: u16 = 2;
/// "No cookie": look the socket up by inode alone.
const NO_COOKIE: u32 = u32::MAX;

/// A `sock_diag` request for one socket, by inode, asking for its peer.
fn request(inode: u32, seq: u32) -> [u8; 40] {
    let mut m = [0u8; 40];
    m[0..4].copy_from_slice(&40u32.to_ne_bytes());
    m[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    m[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    m[8..12].copy_from_slice(&seq.to_ne_bytes());
    // unix_diag_req: family, protocol, pad, states, ino, show, cookie[2].
    m[16] = AF_UNIX;
    m[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
    m[24..28].copy_from_slice(&inode.to_ne_bytes());
    m[28..32].copy_from_slice(&UDIAG_SHOW_PEER.to_ne_bytes());
    m[32..36].copy_from_slice(&NO_COOKIE.to_ne_bytes());
    m[36..40].copy_from_slice(&NO_COOKIE.to_ne_bytes());
    m
}

/// The peer inode in one answer: `None` for an error or no such socket; `Some(None)` for a
/// socket whose peer is gone (the kernel clears it when the other end closes).
pub fn parse_answer(b: &[u8]) -> Option<Option<u32>> {
    let len = usize::try_from(u32_at(b, 0)?).ok()?.min(b.len());
    match u16_at(b, 4)? {
        NLMSG_ERROR | NLMSG_DONE => return None,
        SOCK_DIAG_BY_FAMILY => {}
        _ => return None,
    }
    // nlmsghdr (16) + unix_diag_msg (16), then rtattrs aligned to 4.
    let mut at = 32;
    while at + 4 <= len {
        let rta_len = usize::from(u16_at(b, at)?);
        let rta_type = u16_at(b, at + 2)?;
        if rta_len < 4 {
            return None;
        }
        if rta_type == UNIX_DIAG_PEER && rta_len >= 8 {
            return Some(u32_at(b, at + 4).filter(|p| *p != 0));
        }
        at += (rta_len + 3) & !3;
    }
    Some(None)
}

/// The peer inode of each Unix socket inode: `Some(peer)`, or `None` when its other end is
/// gone; sockets the kernel does not know (or that are not Unix sockets) are left out.
pub fn peers(inodes: &[u64]) -> HashMap<u64, Option<u64>> {
    let mut out = HashMap::new();
    let Some(fd) = open() else {
        return out;
    };
    let kernel = SocketAddrNetlink::new(0, 0);
    let mut buf = vec![0u8; 8192];
    for (seq, &inode) in inodes.iter().enumerate() {
        let Ok(ino) = u32::try_from(inode) else {
            continue;
        };
        let seq = u32::try_from(seq).unwrap_or(0);
        if rustix::net::sendto(&fd, &request(ino, seq), SendFlags::empty(), &kernel).is_err() {
            break;
        }
        let Ok((n, _)) = rustix::net::recv(&fd, &mut buf[..], RecvFlags::empty()) else {
            continue;
        };
        if let Some(peer) = buf.get(..n).and_then(parse_answer) {
            out.insert(inode, peer.map(u64::from));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_pair_names_its_peer() {
        use std::os::unix::net::UnixStream;
        let (a, b) = UnixStream::pair().expect("pair");
        let ino = |s: &UnixStream| {
            use std::os::fd::AsRawFd;
            let l = std::fs::read_link(format!("/proc/self/fd/{}", s.as_raw_fd())).expect("link");
            l.to_string_lossy()
                .trim_start_matches("socket:[")
                .trim_end_matches(']')
                .parse::<u64>()
                .expect("inode")
        };
        let (ia, ib) = (ino(&a), ino(&b));
        let p = peers(&[ia, ib]);
        assert_eq!(p.get(&ia), Some(&Some(ib)));
        assert_eq!(p.get(&ib), Some(&Some(ia)));
        // After one end closes, the survivor has no peer: nothing can ever write to it.
        drop(b);
        assert_eq!(peers(&[ia]).get(&ia), Some(&None));
        assert!(
            peers(&[u64::from(u32::MAX) - 7]).is_empty(),
            "no such socket"
        );
    }

    #[test]
    fn bad_answers_are_unknown() {
        assert_eq!(parse_answer(&[]), None);
        assert_eq!(parse_answer(&[0u8; 15]), None);
        let mut err = [0u8; 36];
        err[0..4].copy_from_slice(&36u32.to_ne_bytes());
        err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        assert_eq!(parse_answer(&err), None);
        let mut looping = [0u8; 40];
        looping[0..4].copy_from_slice(&40u32.to_ne_bytes());
        looping[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        assert_eq!(
            parse_answer(&looping),
            None,
            "a zero-length attribute: unknown"
        );
        let mut bare = [0u8; 32];
        bare[0..4].copy_from_slice(&32u32.to_ne_bytes());
        bare[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        assert_eq!(
            parse_answer(&bare),
            Some(None),
            "no peer attribute: no peer"
        );
    }
}
