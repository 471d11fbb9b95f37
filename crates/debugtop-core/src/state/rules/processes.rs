//! Process states that are findings on their own: spinning, zombie, stopped.

use super::{about, hosts, of_session, Candidate, Ctx};
use crate::model::{FindingKind, ProcState, Role, Severity};

/// Infrastructure (not a debuggee: the user's program may well be busy) using more than the
/// threshold of a core in consecutive samples for the whole grace — and anything of a leaked
/// stdio chain (a wrapper, a nameless orphan, a stdio MCP server nobody can reach: claude-code's
/// orphan looping on writes to a closed pipe), whose plan is then the chain's own. A node or
/// python adapter loading its code uses a core for a second or two (on a loaded machine,
/// longer): two hot samples 500 ms apart raised a healthy js-debug adapter as spinning, with a
/// kill plan.
pub fn spinning(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let infra = |r: Role| {
        matches!(
            r,
            Role::Worker | Role::Adapter | Role::Watchdog | Role::Launcher | Role::Server
        )
    };
    let mut out = Vec::new();
    for p in ctx.procs().filter(|p| p.sample.state.is_alive()) {
        let Some(cpu) = p.sample.cpu_percent.filter(|c| *c >= ctx.config.spin_cpu) else {
            continue;
        };
        // A chain's worker or adapter keeps its own plan (mcp-debugger's, below).
        let chain = (!infra(p.role) || p.mcp.is_some())
            .then(|| hosts::leaked_chain(ctx, p))
            .flatten();
        if !infra(p.role) && chain.is_none() {
            continue;
        }
        let mut f = about(FindingKind::Spinning, Severity::Warning, p, ctx.now());
        f.evidence.push(format!(
            "{} {}{} used {cpu:.0} % of a core over the last sample (state {})",
            p.role,
            p.pid,
            of_session(p),
            p.sample.state.letter()
        ));
        if let Some(chain) = chain {
            f.evidence.push(format!(
                "it is part of a leaked stdio chain from pid {}: nothing can reach it",
                chain.root.pid
            ));
            f.suggested_action = format!(
                "kill the leaked chain from pid {} down: a process spinning on a closed pipe \
                 ignores SIGTERM as often as not, SIGKILL follows after 1 s",
                chain.root.pid
            );
            f.plan = Some(hosts::chain_plan(ctx, &chain));
        } else if p.role == Role::Server {
            f.suggested_action =
                "look at what the server is doing (it is not killed automatically)".into();
        } else {
            f.suggested_action = format!(
                "kill {} {}: spinning workers ignore SIGTERM, SIGKILL follows after 1 s",
                p.role, p.pid
            );
            f.plan = Some(ctx.plan(p, &[p.pid], true));
        }
        out.push(Candidate {
            two_samples: true,
            hold_grace: true,
            ..Candidate::new(f)
        });
    }
    out
}

/// An exited process its parent has not reaped. A zombie whose parent is init is being reaped
/// by it (init here reaps late): transient, not a finding.
pub fn zombie(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for p in ctx
        .procs()
        .filter(|p| p.sample.state == ProcState::Zombie && p.ppid != 1)
    {
        let mut f = about(FindingKind::Zombie, Severity::Warning, p, ctx.now());
        let pstate = ctx
            .world
            .proc(p.ppid)
            .map(|q| format!(", which is {}", state_words(q.sample.state)))
            .unwrap_or_default();
        f.evidence.push(format!(
            "{} {}{} has exited but was not reaped by its parent {}{pstate}",
            p.role,
            p.pid,
            of_session(p),
            p.ppid
        ));
        f.evidence
            .push("a zombie still answers kill(pid, 0): it only looks alive".into());
        f.suggested_action = format!(
            "its parent {} must reap it: resume it (SIGCONT) if stopped, or end it",
            p.ppid
        );
        out.push(Candidate::new(f));
    }
    out
}

/// Stopped by a signal or a tracer; critical for a server (it answers nothing).
pub fn stopped(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for p in ctx
        .procs()
        .filter(|p| matches!(p.sample.state, ProcState::Stopped | ProcState::TracingStop))
    {
        // A stopped mcp-debugger server answers nothing; another stopped MCP server only
        // keeps its own host waiting.
        let sev = if ctx.world.server(p.pid).is_some() {
            Severity::Critical
        } else {
            Severity::Warning
        };
        let mut f = about(FindingKind::Stopped, sev, p, ctx.now());
        let how = if p.sample.state == ProcState::TracingStop {
            "stopped by a tracer"
        } else {
            "stopped by a signal (SIGSTOP/SIGTSTP)"
        };
        f.evidence
            .push(format!("{} {}{} is {how}", p.role, p.pid, of_session(p)));
        f.suggested_action = format!("resume it with SIGCONT (kill -CONT {}), or kill it", p.pid);
        out.push(Candidate::new(f));
    }
    out
}

fn state_words(s: ProcState) -> &'static str {
    match s {
        ProcState::Stopped => "stopped",
        ProcState::TracingStop => "stopped by a tracer",
        ProcState::Zombie => "a zombie itself",
        ProcState::Running => "running",
        ProcState::Sleeping | ProcState::Idle => "sleeping",
        _ => "alive",
    }
}
