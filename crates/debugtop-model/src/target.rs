//! Where debugtop looks: this machine, or one reached through a command the user already has —
//! `ssh`, `docker exec`, `kubectl exec`, or any command. debugtop never opens a port of its own;
//! a target is a command whose stdout carries the stream (a hello line, then one `Update` per
//! line), and whose exit and stderr say why it stopped.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_with::{DeserializeFromStr, SerializeDisplay};
use ts_rs::TS;

use crate::error::Error;

/// The stream's schema tag (the hello line's `stream`).
pub const STREAM_SCHEMA: &str = "debugtop.stream/1";

/// A place to look. Written `local`, `ssh:[user@]host[:port]`, `docker:CONTAINER`,
/// `kubectl:[-n NS] POD [-c C]` or `cmd:COMMAND` (shell-style words, never run by a shell);
/// every kind but `local` and `cmd` takes `--cli PATH` after it, where `debugtop-cli` is not on
/// the far side's `PATH`.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, SerializeDisplay, DeserializeFromStr,
)]
pub enum Target {
    /// This machine, in process.
    Local,
    /// A machine reached by `ssh`.
    Ssh {
        /// `[user@]host`.
        dest: String,
        /// `-p PORT`.
        port: Option<u16>,
        /// `debugtop-cli` on the far side, when not on its `PATH`.
        cli: Option<String>,
    },
    /// A container reached by `docker exec`.
    Docker {
        /// Its name or id.
        container: String,
        /// `debugtop-cli` inside it.
        cli: Option<String>,
    },
    /// A pod reached by `kubectl exec`.
    Kubectl {
        /// `-n NS`.
        namespace: Option<String>,
        /// The pod.
        pod: String,
        /// `-c CONTAINER`.
        container: Option<String>,
        /// `debugtop-cli` inside it.
        cli: Option<String>,
    },
    /// Any command that runs `debugtop-cli` somewhere; debugtop's arguments are appended.
    Cmd {
        /// Program and arguments.
        argv: Vec<String>,
    },
}

impl Target {
    /// Whether this is the local machine.
    pub fn is_local(&self) -> bool {
        matches!(self, Self::Local)
    }

    /// The program that reaches the target (`ssh`, `docker`, …), for messages.
    pub fn engine(&self) -> &str {
        match self {
            Self::Local => "debugtop",
            Self::Ssh { .. } => "ssh",
            Self::Docker { .. } => "docker",
            Self::Kubectl { .. } => "kubectl",
            Self::Cmd { argv } => argv.first().map_or("the command", String::as_str),
        }
    }

    /// `debugtop-cli` as named on the far side.
    pub fn cli(&self) -> &str {
        match self {
            Self::Ssh { cli, .. } | Self::Docker { cli, .. } | Self::Kubectl { cli, .. } => {
                cli.as_deref().unwrap_or("debugtop-cli")
            }
            Self::Local | Self::Cmd { .. } => "debugtop-cli",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cli = |f: &mut fmt::Formatter<'_>, cli: &Option<String>| match cli {
            Some(c) => write!(f, " --cli {}", quote(c)),
            None => Ok(()),
        };
        match self {
            Self::Local => f.write_str("local"),
            Self::Ssh { dest, port, cli: c } => {
                write!(f, "ssh:{dest}")?;
                if let Some(p) = port {
                    write!(f, ":{p}")?;
                }
                cli(f, c)
            }
            Self::Docker { container, cli: c } => {
                write!(f, "docker:{container}")?;
                cli(f, c)
            }
            Self::Kubectl {
                namespace,
                pod,
                container,
                cli: c,
            } => {
                f.write_str("kubectl:")?;
                if let Some(ns) = namespace {
                    write!(f, "-n {ns} ")?;
                }
                f.write_str(pod)?;
                if let Some(co) = container {
                    write!(f, " -c {co}")?;
                }
                cli(f, c)
            }
            Self::Cmd { argv } => {
                let words: Vec<String> = argv.iter().map(|w| quote(w)).collect();
                write!(f, "cmd:{}", words.join(" "))
            }
        }
    }
}

fn quote(w: &str) -> String {
    shlex::try_quote(w).map_or_else(|_| w.to_owned(), |q| q.into_owned())
}

fn bad(text: &str, why: &str) -> Error {
    Error::NotATarget {
        text: text.chars().take(120).collect(),
        why: why.to_owned(),
    }
}

/// A host, container or pod name as the engines take it: never an option (`-oProxyCommand=…`
/// would make ssh run a command), never empty, no whitespace or control characters.
fn name<'a>(text: &str, what: &str, s: &'a str) -> Result<&'a str, Error> {
    if s.is_empty() {
        return Err(bad(text, &format!("no {what} given")));
    }
    if s.starts_with('-') {
        return Err(bad(text, &format!("a {what} cannot start with '-'")));
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(
            text,
            &format!("a {what} has no spaces or control characters"),
        ));
    }
    Ok(s)
}

/// Splits off a trailing `--cli PATH`.
fn take_cli(text: &str, words: &mut Vec<String>) -> Result<Option<String>, Error> {
    let Some(i) = words.iter().position(|w| w == "--cli") else {
        return Ok(None);
    };
    if i + 2 != words.len() {
        return Err(bad(text, "--cli PATH comes last, with one path"));
    }
    let path = words.pop().unwrap_or_default();
    words.pop();
    if path.is_empty() || path.starts_with('-') || path.chars().any(char::is_control) {
        return Err(bad(text, "--cli needs a path"));
    }
    Ok(Some(path))
}

fn parse_ssh(text: &str, mut words: Vec<String>) -> Result<Target, Error> {
    let cli = take_cli(text, &mut words)?;
    let [spec] = words.as_slice() else {
        return Err(bad(text, "say ssh:[user@]host[:port]"));
    };
    let port_of = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| bad(text, "the port after ':' is a number (1–65535)"))
    };
    // `[v6]:port`, `host:port`, or a bare host (an IPv6 address has more than one ':').
    let (dest, port) = if let Some(rest) = spec.strip_prefix('[') {
        let (addr, after) = rest
            .split_once(']')
            .ok_or_else(|| bad(text, "an unclosed '['"))?;
        match after.strip_prefix(':') {
            Some(p) => (addr, Some(port_of(p)?)),
            None if after.is_empty() => (addr, None),
            None => return Err(bad(text, "say ssh:[v6-address]:port")),
        }
    } else {
        match spec.split_once(':') {
            Some((d, p)) if !p.contains(':') => (d, Some(port_of(p)?)),
            _ => (spec.as_str(), None),
        }
    };
    Ok(Target::Ssh {
        dest: name(text, "host", dest)?.to_owned(),
        port,
        cli,
    })
}

fn parse_docker(text: &str, mut words: Vec<String>) -> Result<Target, Error> {
    let cli = take_cli(text, &mut words)?;
    let [container] = words.as_slice() else {
        return Err(bad(text, "say docker:CONTAINER"));
    };
    Ok(Target::Docker {
        container: name(text, "container", container)?.to_owned(),
        cli,
    })
}

fn parse_kubectl(text: &str, mut words: Vec<String>) -> Result<Target, Error> {
    let cli = take_cli(text, &mut words)?;
    let (mut namespace, mut container, mut pod) = (None, None, None);
    let mut it = words.into_iter();
    while let Some(w) = it.next() {
        match w.as_str() {
            "-n" | "--namespace" => {
                let ns = it.next().unwrap_or_default();
                namespace = Some(name(text, "namespace", &ns)?.to_owned());
            }
            "-c" | "--container" => {
                let c = it.next().unwrap_or_default();
                container = Some(name(text, "container", &c)?.to_owned());
            }
            _ if pod.is_none() => pod = Some(name(text, "pod", &w)?.to_owned()),
            _ => return Err(bad(text, "say kubectl:[-n NS] POD [-c CONTAINER]")),
        }
    }
    Ok(Target::Kubectl {
        namespace,
        pod: pod.ok_or_else(|| bad(text, "no pod given"))?,
        container,
        cli,
    })
}

impl FromStr for Target {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self, Error> {
        let t = text.trim();
        if t == "local" {
            return Ok(Self::Local);
        }
        let (kind, rest) = t.split_once([':', ' ']).ok_or_else(|| {
            bad(
                text,
                "say local, ssh:HOST, docker:CONTAINER, kubectl:POD or cmd:COMMAND",
            )
        })?;
        let words = shlex::split(rest).ok_or_else(|| bad(text, "unbalanced quotes"))?;
        match kind {
            "ssh" => parse_ssh(text, words),
            "docker" => parse_docker(text, words),
            "kubectl" => parse_kubectl(text, words),
            "cmd" if words.is_empty() => Err(bad(text, "cmd: needs a command")),
            "cmd" => Ok(Self::Cmd { argv: words }),
            _ => Err(bad(
                text,
                "the kind is one of local, ssh, docker, kubectl, cmd",
            )),
        }
    }
}

string_in_schemas!(Target, "Target", {
    "type": "string",
    "description": "local, ssh:[user@]host[:port], docker:CONTAINER, kubectl:[-n NS] POD [-c C] or cmd:COMMAND"
});

/// What a far side can do (the hello line lists them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum Capability {
    /// Streams updates.
    Watch,
    /// Runs the audit.
    Audit,
    /// Plans and executes kills.
    Kill,
    /// Writes snapshots.
    Snapshot,
    /// Sees every user's processes (runs as root).
    AllUsers,
}

/// The first line of every stream and of every remote command's output: who is speaking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Hello {
    /// `debugtop.stream/1`.
    pub stream: String,
    /// The far side's debugtop version.
    pub debugtop: String,
    /// The snapshot schema it writes.
    pub snapshot_schema: String,
    /// Its host name.
    pub host: String,
    /// Its kernel (`uname -r`).
    pub kernel: String,
    /// What it can do.
    pub capabilities: Vec<Capability>,
}

/// How a hello line travels: `{"hello": {...}}`, so it is never mistaken for an update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HelloLine {
    /// The hello.
    pub hello: Hello,
}

/// Where a target's stream stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum TargetState {
    /// Starting the command, waiting for the hello line.
    Connecting,
    /// Updates arrive.
    Live,
    /// The last known tree is shown, but it is not current: the stream stalled or was lost.
    Stale,
    /// Never got a usable stream (or it was refused); retried with backoff.
    Failed,
}

/// One target's status, as the status bar and the CLI show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct TargetStatus {
    /// The target.
    pub target: Target,
    /// Where it stands.
    pub state: TargetState,
    /// Why it is not live (`None` when live).
    pub failure: Option<TargetFailure>,
    /// In words: what happened and what to do.
    pub detail: String,
    /// Who answered, once a hello arrived.
    pub hello: Option<Hello>,
    /// When the newest update arrived (the tree's age when stale).
    pub last_update_at: Option<DateTime<Utc>>,
    /// When the state last changed.
    pub since: DateTime<Utc>,
    /// Connection attempts so far.
    pub attempts: u32,
    /// When the next attempt is due, while failed or stale.
    pub retry_at: Option<DateTime<Utc>>,
}

impl TargetStatus {
    /// Whether the status bar would show `other` exactly as it shows `self`. A live target's
    /// newest-update time is not shown (only a stale or failed one's age is, and that age
    /// grows), so two statuses of a live target that differ only in it look the same; a
    /// target that is not live never looks the same twice. The app sends the statuses to the
    /// window only when they look different: a tick of the local sampler moves only that time.
    pub fn looks_like(&self, other: &Self) -> bool {
        self.state == TargetState::Live
            && other.state == TargetState::Live
            && *self
                == Self {
                    last_update_at: self.last_update_at,
                    ..other.clone()
                }
    }
}

/// Whether every status of `a` looks like its place in `b` ([`TargetStatus::looks_like`]).
pub fn statuses_look_alike(a: &[TargetStatus], b: &[TargetStatus]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.looks_like(y))
}

/// Why a target failed, as a kind (the detail has the words).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    ts_rs::TS,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum TargetFailure {
    /// `ssh`, `docker` or `kubectl` is not installed here.
    NoEngine,
    /// `debugtop-cli` is not on the far side.
    NotInstalled,
    /// Login refused (key, host key, permissions).
    Auth,
    /// Host, container or pod not reachable.
    Unreachable,
    /// The far side speaks another stream version.
    Incompatible,
    /// The far side printed something that is not debugtop's stream.
    Garbage,
    /// Nothing arrived in time.
    Stalled,
    /// The connection ended.
    Lost,
    /// Not started: nobody has confirmed, in the app's own dialog, running its command.
    Unconfirmed,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(state: TargetState, at: i64) -> TargetStatus {
        let time = |s| DateTime::from_timestamp(s, 0).unwrap_or_default();
        TargetStatus {
            target: Target::Local,
            state,
            failure: None,
            detail: "this machine".into(),
            hello: None,
            last_update_at: Some(time(at)),
            since: time(0),
            attempts: 1,
            retry_at: None,
        }
    }

    #[test]
    fn a_live_target_whose_update_time_alone_moved_looks_the_same() {
        let (a, b) = (status(TargetState::Live, 1), status(TargetState::Live, 2));
        assert!(a.looks_like(&b));
        assert!(statuses_look_alike(
            std::slice::from_ref(&a),
            std::slice::from_ref(&b)
        ));
        // Near misses: anything else moved, a target that is not live, a target more or less.
        let other = TargetStatus {
            attempts: 2,
            ..b.clone()
        };
        assert!(!a.looks_like(&other));
        let stale = (status(TargetState::Stale, 1), status(TargetState::Stale, 1));
        assert!(!stale.0.looks_like(&stale.1), "a stale target's age grows");
        assert!(!a.looks_like(&status(TargetState::Failed, 2)));
        assert!(!statuses_look_alike(
            std::slice::from_ref(&a),
            &[b.clone(), b]
        ));
    }

    fn round(s: &str) -> String {
        s.parse::<Target>()
            .map(|t| t.to_string())
            .unwrap_or_else(|e| format!("error: {e}"))
    }

    #[test]
    fn targets_parse_and_print_one_way() {
        assert_eq!(round("local"), "local");
        assert_eq!(round("ssh:dev@box"), "ssh:dev@box");
        assert_eq!(round("ssh dev@box:2222"), "ssh:dev@box:2222");
        assert_eq!(
            round("ssh:box --cli '/opt/my tools/debugtop-cli'"),
            "ssh:box --cli '/opt/my tools/debugtop-cli'"
        );
        assert_eq!(round("docker:web-1"), "docker:web-1");
        assert_eq!(
            round("kubectl:-n dev api-0 -c app"),
            "kubectl:-n dev api-0 -c app"
        );
        assert_eq!(round("kubectl api-0"), "kubectl:api-0");
        assert_eq!(
            round("cmd:sh -c 'exec debugtop-cli \"$@\"' x"),
            "cmd:sh -c 'exec debugtop-cli \"$@\"' x"
        );
        let t: Target = "ssh:box:22".parse().unwrap_or(Target::Local);
        assert_eq!(
            t,
            Target::Ssh {
                dest: "box".into(),
                port: Some(22),
                cli: None
            }
        );
    }

    #[test]
    fn a_target_that_would_be_an_option_is_refused() {
        for s in [
            "ssh:-oProxyCommand=touch /tmp/x",
            "ssh:-oProxyCommand=id",
            "docker:--privileged",
            "kubectl:-n -x pod",
            "kubectl:--kubeconfig=/x pod",
            "ssh:box --cli -x",
            "ssh:box:99999",
            "ssh:",
            "cmd:",
            "ftp:box",
            "ssh:'a b'",
            "cmd:'unbalanced",
        ] {
            let e = s.parse::<Target>();
            assert!(e.is_err(), "{s} parsed as {e:?}");
            let text = e.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(text.contains("not a target"), "{s}: {text}");
        }
    }
}
