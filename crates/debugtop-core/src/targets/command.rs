//! The command that reaches a target, and the words for each way it fails. Host, container and
//! pod names were checked when the target was parsed (never an option); the remote command is
//! ours (`debugtop-cli --hello …`), quoted for the far side's shell where ssh needs a string.

use crate::model::{Target, TargetFailure};

/// The environment variable that replaces `ssh` (split into words like a shell, never run by
/// one), as `GIT_SSH_COMMAND` does for git: `DEBUGTOP_SSH_COMMAND="ssh -F ~/.ssh/work.conf"`.
pub const SSH_COMMAND_ENV: &str = "DEBUGTOP_SSH_COMMAND";
/// The same for `docker`: `DEBUGTOP_DOCKER_COMMAND="docker --context prod"`, or `podman`.
pub const DOCKER_COMMAND_ENV: &str = "DEBUGTOP_DOCKER_COMMAND";
/// The same for `kubectl`: `DEBUGTOP_KUBECTL_COMMAND="kubectl --context staging"`.
pub const KUBECTL_COMMAND_ENV: &str = "DEBUGTOP_KUBECTL_COMMAND";

/// A program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The program (looked up on `PATH`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
}

/// ssh without prompts (a prompt nobody sees would hang the stream), with keep-alives so a dead
/// link is noticed in about 15 s.
const SSH_OPTIONS: [&str; 9] = [
    "-T",
    "-o",
    "BatchMode=yes",
    "-o",
    "ConnectTimeout=10",
    "-o",
    "ServerAliveInterval=5",
    "-o",
    "ServerAliveCountMax=3",
];

/// The programs that reach targets, each with any arguments of its own (`ssh -F
/// ~/.ssh/work.conf`, `docker -H unix:///run/user/1000/docker.sock`, `podman`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engines {
    /// For `ssh:` targets.
    pub ssh: Vec<String>,
    /// For `docker:` targets.
    pub docker: Vec<String>,
    /// For `kubectl:` targets.
    pub kubectl: Vec<String>,
}

impl Default for Engines {
    fn default() -> Self {
        Self {
            ssh: vec!["ssh".to_owned()],
            docker: vec!["docker".to_owned()],
            kubectl: vec!["kubectl".to_owned()],
        }
    }
}

/// `var`'s words, when it is set to something that splits into at least one word.
pub(crate) fn words_of(var: &str) -> Option<Vec<String>> {
    std::env::var(var)
        .ok()
        .and_then(|s| shlex::split(&s))
        .filter(|w| !w.is_empty())
}

impl Engines {
    /// The defaults, each replaced by its `DEBUGTOP_*_COMMAND` when set.
    pub fn from_env() -> Self {
        let d = Self::default();
        Self {
            ssh: words_of(SSH_COMMAND_ENV).unwrap_or(d.ssh),
            docker: words_of(DOCKER_COMMAND_ENV).unwrap_or(d.docker),
            kubectl: words_of(KUBECTL_COMMAND_ENV).unwrap_or(d.kubectl),
        }
    }
}

/// `engine`'s program and its own arguments, followed by `more`.
fn engine_words(engine: &[String], more: Vec<String>) -> Option<(String, Vec<String>)> {
    let (program, own) = engine.split_first()?;
    let mut words = own.to_vec();
    words.extend(more);
    Some((program.clone(), words))
}

/// How to run `debugtop-cli <remote…>` on `target`. `None` for `local` (run in process).
pub fn invocation(target: &Target, remote: &[String], engines: &Engines) -> Option<Invocation> {
    let mut far = vec![target.cli().to_owned()];
    far.extend(remote.iter().cloned());
    let (program, args) = match target {
        Target::Local => return None,
        Target::Ssh { dest, port, .. } => {
            let mut words: Vec<String> = SSH_OPTIONS.iter().map(|s| (*s).to_owned()).collect();
            if let Some(p) = port {
                words.extend(["-p".to_owned(), p.to_string()]);
            }
            let line = shlex::try_join(far.iter().map(String::as_str)).unwrap_or_default();
            words.extend(["--".to_owned(), dest.clone(), line]);
            engine_words(&engines.ssh, words)?
        }
        Target::Docker { container, .. } => {
            let mut words = vec!["exec".to_owned(), container.clone()];
            words.extend(far);
            engine_words(&engines.docker, words)?
        }
        Target::Kubectl {
            namespace,
            pod,
            container,
            ..
        } => {
            let mut words = vec!["exec".to_owned()];
            if let Some(ns) = namespace {
                words.extend(["-n".to_owned(), ns.clone()]);
            }
            words.push(pod.clone());
            if let Some(c) = container {
                words.extend(["-c".to_owned(), c.clone()]);
            }
            words.push("--".to_owned());
            words.extend(far);
            engine_words(&engines.kubectl, words)?
        }
        Target::Cmd { argv } => {
            let (program, rest) = argv.split_first()?;
            let mut words = rest.to_vec();
            words.extend(remote.iter().cloned());
            (program.clone(), words)
        }
    };
    Some(Invocation { program, args })
}

/// The far side's words, made safe to show: control characters dropped, cut to `max` chars.
pub fn tidy(text: &str, max: usize) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() && c != '\n' { ' ' } else { c })
        .collect();
    let clean = clean.trim();
    // Redacted first when it must be cut: a cut never leaves part of a secret.
    crate::redact::bounded(clean, max)
}

/// The last non-empty line of stderr (what tools print last is usually the reason).
fn last_line(stderr: &str) -> String {
    tidy(
        stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or(""),
        300,
    )
}

/// Words in stderr that say the far side refused the login.
const AUTH_WORDS: &[&str] = &[
    "permission denied",
    "host key verification failed",
    "too many authentication failures",
    "authentication failed",
    "unauthorized",
    "forbidden",
];

/// Words in stderr that say the far side could not be reached.
const UNREACHABLE_WORDS: &[&str] = &[
    "could not resolve",
    "connection refused",
    "timed out",
    "no route to host",
    "network is unreachable",
    "connection closed",
    "no such container",
    "is not running",
    "cannot connect to the docker daemon",
    "notfound",
    "not found",
    "unable to connect",
    "broken pipe",
    "connection reset",
];

/// Why a target's command ended without a usable stream, from its exit status and stderr.
pub fn classify(target: &Target, code: Option<i32>, stderr: &str) -> (TargetFailure, String) {
    let low = stderr.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| low.contains(w));
    let cli = target.cli().to_lowercase();
    let failure = if code == Some(127)
        || (low.contains(&cli) && has(&["not found", "no such file", "executable file not found"]))
    {
        TargetFailure::NotInstalled
    } else if has(AUTH_WORDS) {
        TargetFailure::Auth
    } else if has(UNREACHABLE_WORDS) || (matches!(target, Target::Ssh { .. }) && code == Some(255))
    {
        TargetFailure::Unreachable
    } else {
        TargetFailure::Lost
    };
    let words = explain(failure, target, code, last_line(stderr));
    (failure, words)
}

/// What to tell the user about a failure, with the last thing the command said.
fn explain(failure: TargetFailure, target: &Target, code: Option<i32>, said: String) -> String {
    let engine = target.engine();
    match failure {
        TargetFailure::NotInstalled => format!(
            "{} is not installed there (or not on the far side's PATH): install debugtop-cli \
             there (copy the release binary `make dist` builds), or name it with --cli PATH \
             after the target [{said}]",
            target.cli()
        ),
        TargetFailure::Auth => {
            let how = match target {
                Target::Ssh { .. } => {
                    "ssh runs without prompts (BatchMode): log in with a key or an agent, and accept the host key once with a plain ssh"
                }
                _ => "check your credentials for it",
            };
            format!("{engine} could not log in: {said} ({how})")
        }
        TargetFailure::Unreachable => format!("cannot reach it through {engine}: {said}"),
        _ => {
            let status = code.map_or("was killed by a signal".to_owned(), |c| {
                format!("exited with status {c}")
            });
            let said = if said.is_empty() {
                "it printed nothing on stderr".to_owned()
            } else {
                said
            };
            format!("{engine} {status}: {said}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Target {
        s.parse().unwrap_or(Target::Local)
    }

    fn words(i: &Invocation) -> String {
        format!("{} {}", i.program, i.args.join(" | "))
    }

    #[test]
    fn each_engine_runs_the_cli_with_our_arguments_only() {
        let remote: Vec<String> = ["--hello", "watch", "--json"].map(String::from).into();
        let e = Engines::default();
        let inv = |s: &str| invocation(&t(s), &remote, &e).map(|i| words(&i));
        assert_eq!(invocation(&Target::Local, &remote, &e), None);
        let ssh = inv("ssh:dev@box:2222 --cli '/opt/d t/debugtop-cli'").unwrap_or_default();
        assert!(ssh.starts_with("ssh -T | -o | BatchMode=yes"), "{ssh}");
        assert!(
            ssh.ends_with(
                "-p | 2222 | -- | dev@box | '/opt/d t/debugtop-cli' --hello watch --json"
            ),
            "{ssh}"
        );
        assert_eq!(
            inv("docker:web-1").unwrap_or_default(),
            "docker exec | web-1 | debugtop-cli | --hello | watch | --json"
        );
        assert_eq!(
            inv("kubectl:-n dev api-0 -c app").unwrap_or_default(),
            "kubectl exec | -n | dev | api-0 | -c | app | -- | debugtop-cli | --hello | watch | --json"
        );
        assert_eq!(
            inv("cmd:env X=1 /x/debugtop-cli").unwrap_or_default(),
            "env X=1 | /x/debugtop-cli | --hello | watch | --json"
        );
    }

    #[test]
    fn failures_are_worded_by_kind() {
        let ssh = t("ssh:box");
        let (k, d) = classify(
            &ssh,
            Some(127),
            "bash: line 1: debugtop-cli: command not found\n",
        );
        assert_eq!(k, TargetFailure::NotInstalled);
        assert!(d.contains("install debugtop-cli there"), "{d}");
        let (k, d) = classify(
            &ssh,
            Some(255),
            "root@127.0.0.1: Permission denied (publickey).\r\n",
        );
        assert_eq!(k, TargetFailure::Auth);
        assert!(
            d.contains("BatchMode") && d.contains("Permission denied"),
            "{d}"
        );
        let (k, _) = classify(
            &ssh,
            Some(255),
            "ssh: connect to host 127.0.0.1 port 1: Connection refused",
        );
        assert_eq!(k, TargetFailure::Unreachable);
        let (k, d) = classify(
            &t("docker:web"),
            Some(126),
            "OCI runtime exec failed: exec failed: unable to start container process: exec: \"debugtop-cli\": executable file not found in $PATH",
        );
        assert_eq!(k, TargetFailure::NotInstalled, "{d}");
        let (k, _) = classify(
            &t("docker:web"),
            Some(1),
            "Error response from daemon: No such container: web",
        );
        assert_eq!(k, TargetFailure::Unreachable);
        let (k, d) = classify(&t("cmd:x"), Some(3), "\x1b[31mboom\x1b[0m\n");
        assert_eq!(k, TargetFailure::Lost);
        assert!(d.contains("status 3") && !d.contains('\x1b'), "{d}");
    }
}
