//! What a user asks to kill, and how a command line says it: a pid, a finding id, several
//! findings, or every finding of a kind — parsed, never guessed.

use crate::error::{Error, Result};
use crate::model::FindingId;
pub use crate::model::KillRequest;

/// A target given on a command line: a pid, or a finding id — parsed, never guessed.
pub fn parse_target(s: &str) -> Result<KillRequest> {
    if let Ok(pid) = s.parse::<u32>() {
        return Ok(KillRequest::Pid { pid, tree: false });
    }
    s.parse::<FindingId>()
        .map(|id| KillRequest::Finding { id })
        .map_err(|_| {
            Error::from(debugtop_model::Error::NotAnId {
                what: "a pid or a finding id (e.g. 4242, or leaked-adapter:4242.881733)",
                text: s.chars().take(80).collect(),
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_a_pid_or_a_finding_id_never_a_guess() {
        assert_eq!(
            parse_target("4242").unwrap(),
            KillRequest::Pid {
                pid: 4242,
                tree: false
            }
        );
        let KillRequest::Finding { id } = parse_target("leaked-adapter:4242.881733").unwrap()
        else {
            panic!("a finding id");
        };
        assert_eq!(id.kind, crate::model::FindingKind::LeakedAdapter);
        for bad in ["", "-1", "leaked:1.2", "kill-all", "4242 4243"] {
            let e = parse_target(bad).unwrap_err().to_string();
            assert!(e.contains("a pid or a finding id"), "{bad}: {e}");
        }
    }
}
