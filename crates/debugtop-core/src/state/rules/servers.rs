//! Servers whose `/health` does not answer.

use super::{about, Candidate, Ctx};
use crate::model::{FindingKind, HealthError, ProcState, Severity};

/// A live HTTP server whose `/health` failed this step.
pub fn server_unresponsive(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for (pid, h) in &ctx.world.health {
        let Err(e) = h else { continue };
        let Some(p) = ctx.world.proc(*pid) else {
            continue;
        };
        let mut f = about(
            FindingKind::ServerUnresponsive,
            Severity::Critical,
            p,
            ctx.now(),
        );
        f.server_pid = Some(*pid);
        f.session_id = None;
        f.evidence.push(format!("/health of server {pid}: {e}"));
        if matches!(p.sample.state, ProcState::Stopped | ProcState::TracingStop) {
            f.evidence.push(format!(
                "server {pid} is stopped (state {})",
                p.sample.state.letter()
            ));
        }
        f.suggested_action = match e {
            HealthError::TimedOut { .. } if p.sample.state == ProcState::Stopped => {
                format!("resume it (kill -CONT {pid})")
            }
            _ => "restart the server".into(),
        };
        out.push(Candidate::new(f));
    }
    out
}
