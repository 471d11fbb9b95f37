//! The lines a worker writes as a session starts (0.24.2's `ConnectionManager`, and js-debug's
//! path through the worker's command queue), as [`Stage`]s: the steps a stuck session is stuck
//! between. The line shapes are in `docs/server-behaviour.md`; recorded logs in `testdata/`.

use crate::model::{Stage, StartRequest};

use StartRequest::{Attach, ConfigurationDone, Initialize, Launch};

/// `[ConnectionManager] …` lines with a fixed text: how the line starts, the request, and
/// whether it says the request was answered (0.24.2 logs "sent." after the answer came).
const CONNECTION: [(&str, StartRequest, bool); 8] = [
    ("Sending DAP \"initialize\" request", Initialize, false),
    (
        "DAP \"initialize\" request sent and response received.",
        Initialize,
        true,
    ),
    ("Sending \"launch\" request", Launch, false),
    ("DAP \"launch\" request sent.", Launch, true),
    ("Sending \"attach\" request", Attach, false),
    ("DAP \"attach\" request sent.", Attach, true),
    (
        "Sending \"configurationDone\" to adapter.",
        ConfigurationDone,
        false,
    ),
    ("\"configurationDone\" sent.", ConfigurationDone, true),
];

/// The stage a worker's log line says, if any.
pub fn stage(m: &str) -> Option<Stage> {
    if let Some(rest) = m.strip_prefix("[ConnectionManager] ") {
        return connection(rest);
    }
    worker(m.strip_prefix("[Worker] ")?)
}

fn connection(rest: &str) -> Option<Stage> {
    if rest.starts_with("DAP client connected to adapter successfully.") {
        return Some(Stage::Connected);
    }
    if let Some((_, request, answered)) = CONNECTION.iter().find(|(l, _, _)| rest.starts_with(l)) {
        return Some(said(*request, *answered));
    }
    if let Some(rest) = rest.strip_prefix("Attempting DAP client connect (attempt ") {
        let (counts, address) = rest.split_once(") to ")?;
        let (attempt, of) = counts.split_once('/')?;
        return Some(Stage::ConnectAttempt {
            attempt: attempt.trim().parse().ok()?,
            of: of.trim().parse().ok()?,
            address: crate::redact::bounded(address.trim(), 80),
        });
    }
    let rest = rest.strip_prefix("Failed to connect DAP client after ")?;
    Some(Stage::ConnectFailed {
        attempts: rest.split(' ').next()?.parse().ok()?,
    })
}

/// js-debug's start goes through the worker's command queue: `Sending '<cmd>' to adapter`,
/// then `Completed command dap/<cmd> session=…` once the adapter answered; every adapter's
/// first stop is `DAP event: stopped reason=<reason>`.
fn worker(rest: &str) -> Option<Stage> {
    if let Some(rest) = rest.strip_prefix("Sending '") {
        let (cmd, tail) = rest.split_once('\'')?;
        return (tail == " to adapter")
            .then(|| named(cmd))
            .flatten()
            .map(|r| said(r, false));
    }
    if let Some(rest) = rest.strip_prefix("Completed command dap/") {
        return named(rest.split(' ').next()?).map(|r| said(r, true));
    }
    let reason = rest.strip_prefix("DAP event: stopped reason=")?;
    Some(Stage::Stopped {
        reason: crate::redact::bounded(reason.split(' ').next()?, 40),
    })
}

fn said(request: StartRequest, answered: bool) -> Stage {
    if answered {
        Stage::Answered { request }
    } else {
        Stage::Sent { request }
    }
}

fn named(command: &str) -> Option<StartRequest> {
    match command {
        "initialize" => Some(Initialize),
        "launch" => Some(Launch),
        "attach" => Some(Attach),
        "configurationDone" => Some(ConfigurationDone),
        _ => None,
    }
}
