//! What a user asks to kill, and how a command line says it: a pid, a finding id, several
//! findings, or every finding of a kind — parsed, never guessed.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::error::{Error, Result};
use crate::model::{FindingId, FindingKind};

/// What to kill.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[ts(export)]
pub enum KillRequest {
    /// A process (and, with `tree`, its descendants).
    Pid {
        /// The pid.
        pid: u32,
        /// Include descendants.
        tree: bool,
    },
    /// What a finding names (always with what it started).
    Finding {
        /// The finding id.
        id: FindingId,
    },
    /// What several findings name, in one plan (a group's bulk kill, or several ids given).
    Findings {
        /// The finding ids; each must be current and fixed by killing.
        ids: Vec<FindingId>,
    },
    /// Every current finding of one kind that killing fixes (of one server, when given).
    Kind {
        /// The kind.
        kind: FindingKind,
        /// Only findings about this server (the gone owner, for orphaned workers).
        server: Option<u32>,
    },
}

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
        assert_eq!(id.kind, FindingKind::LeakedAdapter);
        for bad in ["", "-1", "leaked:1.2", "kill-all", "4242 4243"] {
            let e = parse_target(bad).unwrap_err().to_string();
            assert!(e.contains("a pid or a finding id"), "{bad}: {e}");
        }
    }
}
