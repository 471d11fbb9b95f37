//! Listening TCP sockets from the kernel's `sock_diag` netlink interface (`inet_diag`, as
//! `ss -lt` asks). Reading `/proc/<pid>/net/tcp` walks the kernel's whole established-socket
//! hash, however few sockets are in it (4.4 ms a table on a 24 GiB machine with two); a dump of
//! the listening state walks the listening sockets only. It answers for the network namespace
//! debugtop runs in. Everything here is bytes in and out of one netlink socket; any failure
//! means "ask the tables instead", never a guess.

use rustix::fd::OwnedFd;
use rustix::net::netlink::SocketAddrNetlink;
use rustix::net::{RecvFlags, SendFlags};

use super::sock_diag::{
    open, u16_at, u32_at, NLMSG_DONE, NLMSG_ERROR, NLM_F_REQUEST, SOCK_DIAG_BY_FAMILY,
};

const NLM_F_DUMP: u16 = 0x300;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
const IPPROTO_TCP: u8 = 6;
const TCP_LISTEN: u8 = 10;
/// `nlmsghdr` (16 bytes) and `inet_diag_req_v2` (56).
const REQUEST_LEN: usize = 72;
/// `nlmsghdr` (16) and `inet_diag_msg` (72), whose socket inode is its last field.
const ANSWER_LEN: usize = 88;
/// A dump of a few thousand listeners fits in far fewer datagrams; a kernel that keeps
/// sending is not followed further.
const MAX_DATAGRAMS: usize = 1024;

/// A dump request for the TCP sockets of `family` in the listening state.
fn request(family: u8, seq: u32) -> [u8; REQUEST_LEN] {
    let mut m = [0u8; REQUEST_LEN];
    m[0..4].copy_from_slice(&(REQUEST_LEN as u32).to_ne_bytes());
    m[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    m[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    m[8..12].copy_from_slice(&seq.to_ne_bytes());
    // inet_diag_req_v2: family, protocol, ext, pad, states, then a zeroed socket id.
    m[16] = family;
    m[17] = IPPROTO_TCP;
    m[20..24].copy_from_slice(&(1u32 << TCP_LISTEN).to_ne_bytes());
    m
}

/// What one datagram of the dump holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Datagram {
    /// Listeners, as (port, socket inode); more datagrams follow.
    Listeners(Vec<(u16, u64)>),
    /// The dump is complete; these listeners came with its end.
    Done(Vec<(u16, u64)>),
}

/// The listeners in one datagram of the dump: `None` for an error or anything malformed.
pub fn parse_datagram(b: &[u8]) -> Option<Datagram> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 16 <= b.len() {
        let len = usize::try_from(u32_at(b, at)?).ok()?;
        if len < 16 || at + len > b.len() {
            return None;
        }
        match u16_at(b, at + 4)? {
            NLMSG_DONE => return Some(Datagram::Done(out)),
            SOCK_DIAG_BY_FAMILY if len >= ANSWER_LEN => {
                let m = &b[at..at + len];
                // inet_diag_msg: family, state, timer, retrans, then the socket id (source
                // port first, in network order) … and the inode last.
                if m[17] == TCP_LISTEN {
                    let port = u16::from_be_bytes([m[20], m[21]]);
                    out.push((port, u64::from(u32_at(m, 84)?)));
                }
            }
            NLMSG_ERROR | SOCK_DIAG_BY_FAMILY => return None,
            _ => {}
        }
        at += (len + 3) & !3;
    }
    Some(Datagram::Listeners(out))
}

/// One family's listeners, dumped over `fd`.
fn dump(fd: &OwnedFd, family: u8, buf: &mut [u8]) -> Option<Vec<(u16, u64)>> {
    let kernel = SocketAddrNetlink::new(0, 0);
    rustix::net::sendto(fd, &request(family, 1), SendFlags::empty(), &kernel).ok()?;
    let mut all = Vec::new();
    for _ in 0..MAX_DATAGRAMS {
        let (n, _) = rustix::net::recv(fd, &mut *buf, RecvFlags::empty()).ok()?;
        match parse_datagram(buf.get(..n)?)? {
            Datagram::Listeners(l) => all.extend(l),
            Datagram::Done(l) => {
                all.extend(l);
                return Some(all);
            }
        }
    }
    None
}

/// Every listening TCP socket (IPv4 and IPv6) of debugtop's network namespace, as (port,
/// socket inode); `None` when the kernel could not be asked (then read the tables).
pub fn listeners() -> Option<Vec<(u16, u64)>> {
    let fd = open()?;
    let mut buf = vec![0u8; 32 * 1024];
    let mut all = dump(&fd, AF_INET, &mut buf)?;
    all.extend(dump(&fd, AF_INET6, &mut buf)?);
    Some(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn inode(fd: &impl AsRawFd) -> u64 {
        let l = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("link");
        l.to_string_lossy()
            .trim_start_matches("socket:[")
            .trim_end_matches(']')
            .parse()
            .expect("inode")
    }

    #[test]
    fn a_listening_socket_is_found_and_a_connected_one_is_not() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let client = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let (served, _) = listener.accept().expect("accept");
        let found = listeners().expect("sock_diag answers");
        assert!(
            found.contains(&(port, inode(&listener))),
            "{port} not among {found:?}"
        );
        for connected in [inode(&client), inode(&served)] {
            assert!(
                !found.iter().any(|(_, i)| *i == connected),
                "a connected socket is no listener"
            );
        }
        let v6 = std::net::TcpListener::bind("[::1]:0");
        if let Ok(v6) = v6 {
            let p6 = v6.local_addr().expect("addr").port();
            let found = listeners().expect("sock_diag answers");
            assert!(found.contains(&(p6, inode(&v6))), "IPv6 too: {found:?}");
        }
    }

    /// A datagram of `len` bytes whose header says `kind`.
    fn message(kind: u16, len: usize) -> Vec<u8> {
        let mut m = vec![0u8; len];
        m[0..4].copy_from_slice(&u32::try_from(len).expect("small").to_ne_bytes());
        m[4..6].copy_from_slice(&kind.to_ne_bytes());
        m
    }

    #[test]
    fn bad_datagrams_are_unknown_and_a_listener_is_read_where_the_kernel_puts_it() {
        assert_eq!(parse_datagram(&[]), Some(Datagram::Listeners(Vec::new())));
        assert_eq!(parse_datagram(&message(NLMSG_ERROR, 36)), None);
        assert_eq!(
            parse_datagram(&message(SOCK_DIAG_BY_FAMILY, 40)),
            None,
            "too short"
        );
        let mut lying = message(SOCK_DIAG_BY_FAMILY, ANSWER_LEN);
        lying[0..4].copy_from_slice(&4096u32.to_ne_bytes());
        assert_eq!(parse_datagram(&lying), None, "longer than what came");
        let mut zero = message(SOCK_DIAG_BY_FAMILY, ANSWER_LEN);
        zero[0..4].copy_from_slice(&0u32.to_ne_bytes());
        assert_eq!(parse_datagram(&zero), None, "a zero length never loops");
        let mut listening = message(SOCK_DIAG_BY_FAMILY, ANSWER_LEN);
        listening[17] = TCP_LISTEN;
        listening[20..22].copy_from_slice(&3001u16.to_be_bytes());
        listening[84..88].copy_from_slice(&4242u32.to_ne_bytes());
        let mut established = listening.clone();
        established[17] = 1;
        let mut two = [listening, established].concat();
        assert_eq!(
            parse_datagram(&two),
            Some(Datagram::Listeners(vec![(3001, 4242)])),
            "only the listening state"
        );
        two.extend(message(NLMSG_DONE, 20));
        assert_eq!(
            parse_datagram(&two),
            Some(Datagram::Done(vec![(3001, 4242)]))
        );
    }
}
