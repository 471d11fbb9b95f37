//! What the two users of the kernel's `sock_diag` netlink interface share (`unix_diag`: a Unix
//! socket's peer; `inet_diag`: the listening TCP sockets): the socket, opened so that an
//! answer that never comes cannot hang a tick, the message constants, and reading the
//! answers' native-endian fields without trusting their lengths.

use rustix::fd::OwnedFd;
use rustix::net::netlink;
use rustix::net::{AddressFamily, SocketType};

/// The request and answer type of every `sock_diag` family.
pub const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// A request (`nlmsghdr` flag).
pub const NLM_F_REQUEST: u16 = 0x1;
/// An error answer.
pub const NLMSG_ERROR: u16 = 2;
/// The end of a dump.
pub const NLMSG_DONE: u16 = 3;

/// A `sock_diag` socket whose reads give up after 200 ms; `None` when it cannot be had.
pub fn open() -> Option<OwnedFd> {
    let fd = rustix::net::socket(
        AddressFamily::NETLINK,
        SocketType::DGRAM,
        Some(netlink::SOCK_DIAG),
    )
    .ok()?;
    rustix::net::sockopt::set_socket_timeout(
        &fd,
        rustix::net::sockopt::Timeout::Recv,
        Some(std::time::Duration::from_millis(200)),
    )
    .ok()?;
    Some(fd)
}

/// The native-endian `u16` at `at`, if `b` holds it.
pub fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// The native-endian `u32` at `at`, if `b` holds it.
pub fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
