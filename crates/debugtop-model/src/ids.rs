//! Identities, spelt one way everywhere: a process is its pid *and* its start time (a pid alone
//! is reused); pids and session ids are validated before they are trusted. A process identity
//! prints and parses through `Display`/`FromStr` and travels as that string in JSON (a
//! finding's id, made of a kind, lives beside the kinds in `finding`).

use std::fmt;
use std::str::FromStr;

use serde_with::{DeserializeFromStr, SerializeDisplay};

use crate::error::Error;

/// A process identity: pid + start time in clock ticks since boot (`/proc/<pid>/stat` field 22).
/// Written `pid.ticks` (`4242.881733`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, SerializeDisplay, DeserializeFromStr,
)]
pub struct ProcId {
    /// The pid.
    pub pid: u32,
    /// Start ticks.
    pub start_ticks: u64,
}

impl ProcId {
    /// The identity of `pid` started at `start_ticks`.
    pub fn new(pid: u32, start_ticks: u64) -> Self {
        Self { pid, start_ticks }
    }
}

impl fmt::Display for ProcId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.pid, self.start_ticks)
    }
}

pub(crate) fn not_an_id(what: &'static str, s: &str) -> Error {
    Error::NotAnId {
        what,
        text: s.chars().take(80).collect(),
    }
}

impl FromStr for ProcId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || not_an_id("a process identity (pid.start-ticks, e.g. 4242.881733)", s);
        let (pid, ticks) = s.split_once('.').ok_or_else(bad)?;
        Ok(Self {
            pid: parse_pid(pid).ok_or_else(bad)?,
            start_ticks: digits(ticks).ok_or_else(bad)?,
        })
    }
}

string_in_schemas!(ProcId, "ProcId", {
    "type": "string",
    "pattern": "^[0-9]+\\.[0-9]+$",
    "description": "A process identity: pid.start-ticks"
});

/// A pid as a positive decimal integer that fits the kernel's range; anything else — empty,
/// signed, non-numeric, zero, overflowing — is `None`.
pub fn parse_pid(s: &str) -> Option<u32> {
    match digits(s.trim())? {
        0 => None,
        // PID_MAX_LIMIT is 2^22; anything above cannot be a pid.
        p if p > 4_194_304 => None,
        p => u32::try_from(p).ok(),
    }
}

fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A session id (debug or HTTP) as carried on command lines, paths and log lines: 1–128
/// characters of `[A-Za-z0-9_-]`. Anything else is not trusted as an id.
pub fn session_id(s: &str) -> Option<String> {
    let ok = !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    ok.then(|| s.to_owned())
}

/// The first 8 characters of an id, for text.
pub fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_ids_round_trip_and_reject_garbage() {
        let id = ProcId::new(4242, 881_733);
        assert_eq!(id.to_string(), "4242.881733");
        assert_eq!("4242.881733".parse::<ProcId>().ok(), Some(id));
        for bad in [
            "",
            "4242",
            "4242.",
            ".1",
            "0.1",
            "-1.2",
            "1.x",
            "99999999.1",
            "1.2.3",
        ] {
            assert!(bad.parse::<ProcId>().is_err(), "{bad}");
        }
        assert_eq!(
            serde_json::to_string(&id).unwrap_or_default(),
            "\"4242.881733\""
        );
    }

    #[test]
    fn pids_and_session_ids_are_validated() {
        assert_eq!(parse_pid("42"), Some(42));
        for bad in ["", "0", "-3", "abc", "99999999999", "4194305"] {
            assert_eq!(parse_pid(bad), None, "{bad}");
        }
        assert!(session_id("b85b4926-1c2d_x").is_some());
        for bad in ["", "../x", "<script>", &"a".repeat(129)] {
            assert!(session_id(bad).is_none(), "{bad}");
        }
    }
}
