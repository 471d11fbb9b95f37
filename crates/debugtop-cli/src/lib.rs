//! `debugtop-cli`'s command line, as data: what each flag means for the engine. The binary
//! (`main.rs`) parses, runs the core's actions and prints; this library exists so the mapping
//! from flags to the engine's configuration is one function that tests can hold against the
//! app's mapping from its settings.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use debugtop_core::actions::audit::AuditConfig;
use debugtop_core::actions::export::ExportFormat;
use debugtop_core::actions::kill::KillRequest;
use debugtop_core::actions::run::{Joiner, RunConfig, ScopeChoice, DEFAULT_RUN_GRACE};
use debugtop_core::judging::{Judging, DEFAULT_GRACE, DEFAULT_INTERVAL, DEFAULT_STUCK_AFTER};
use debugtop_core::model::LeakPolicy;
use debugtop_core::model::{FindingKind, ProcId, Target};

/// The longest SIGTERM → SIGKILL grace a kill accepts, in milliseconds.
pub const MAX_GRACE_MS: u64 = 60_000;

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "debugtop-cli",
    version,
    about = "What your debug server really has running, and what it left behind."
)]
pub struct Cli {
    /// Print the hello line first (debugtop's version, stream schema, host, kernel,
    /// capabilities): what a debugtop on another machine reads to know who answers.
    #[arg(long)]
    pub hello: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Take one reconciled snapshot of every debug server on this machine (found without flags).
    Snapshot {
        /// Also ask this server's /health (`http://host:port`); repeatable.
        #[arg(long = "server", value_name = "URL")]
        servers: Vec<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
        /// Write to this file instead of stdout (`-` is stdout). Written atomically, mode 0600;
        /// a symbolic link there is replaced, a device, FIFO or socket refused.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Keep secrets in argv (off by default: snapshots are meant to be shared).
        #[arg(long)]
        no_redact: bool,
        /// Take it on these targets instead (repeatable; `local` is this machine): one fleet
        /// file (`debugtop.fleet/1`, or Markdown) with every target's tree.
        #[arg(long = "target", value_name = "TARGET")]
        targets: Vec<Target>,
    },
    /// Stream one update per tick, as a summary or as NDJSON.
    ///
    /// One line per tick (NDJSON with --json, a summary otherwise). Tick errors go to stderr,
    /// one line each; the stream goes on. With --json the first line is the hello line
    /// (`{"hello": …}`), then one `Update` per line: the stream remote targets read.
    Watch {
        /// What the monitor looks at and how it judges.
        #[command(flatten)]
        monitor: MonitorArgs,
        /// NDJSON: each line is one update (snapshot and the log events of that tick).
        #[arg(long)]
        json: bool,
        /// Stop after this many updates (default: run until interrupted).
        #[arg(long)]
        count: Option<u64>,
        /// Also write the verdicts as Prometheus series to this file every tick, for
        /// node_exporter's textfile collector (written atomically, readable by everyone).
        #[arg(long, value_name = "PATH")]
        textfile: Option<PathBuf>,
    },
    /// Serve the verdicts to Prometheus over HTTP.
    ///
    /// `/metrics` (the text format, OpenMetrics when the scraper asks), `/api/findings` (the
    /// findings as JSON, redacted, with the command that fixes each) and `/healthz`, from one
    /// monitor stepped every interval (a scrape reads its latest look, never waits for one).
    /// Loopback unless --listen names another address; nothing served changes the machine.
    Serve {
        /// Where to listen.
        #[arg(long, default_value = DEFAULT_LISTEN, value_name = "ADDR")]
        listen: std::net::SocketAddr,
        /// What the monitor looks at and how it judges.
        #[command(flatten)]
        monitor: MonitorArgs,
        /// Also write the series to this file every tick (node_exporter's textfile collector).
        #[arg(long, value_name = "PATH")]
        textfile: Option<PathBuf>,
    },
    /// Serve debugtop's tools to an MCP host over stdio.
    ///
    /// One monitor is kept warm between calls. Tools: overview, audit (optionally watching,
    /// with progress), explain (one finding in full), process (one process in full), export
    /// (an incident snapshot) and kill — the last only with --allow-kill, and only for the
    /// exact plan an audit showed (its digest). Every answer is redacted as an export is and
    /// bounded for a model's context. Nothing but the protocol is written to stdout.
    Mcp {
        /// What the monitor looks at and how it judges.
        #[command(flatten)]
        monitor: MonitorArgs,
        /// Let the `kill` tool end what a finding's plan names (refused otherwise).
        #[arg(long)]
        allow_kill: bool,
    },
    /// Run the liveness audit: exit 0 when clean, 1 with findings, 2 when it could not audit.
    Audit {
        /// What the audit looks at.
        #[command(flatten)]
        args: AuditArgs,
        /// JSON instead of a readable report.
        #[arg(long)]
        json: bool,
        /// Also write the verdicts as Prometheus series to this file (node_exporter's textfile
        /// collector; windows_exporter's on Windows): written atomically, readable by everyone,
        /// ending with a newline. The exit code is the audit's.
        #[arg(long, value_name = "PATH", conflicts_with = "targets")]
        textfile: Option<PathBuf>,
        /// Audit these targets (repeatable; `local` is this machine) and exit with the worst
        /// status: ssh:[user@]host[:port], docker:CONTAINER, kubectl:[-n NS] POD [-c C],
        /// cmd:COMMAND (each runs debugtop-cli on the far side; `--cli PATH` after the target
        /// names it there). `DEBUGTOP_SSH_COMMAND` replaces `ssh` (as GIT_SSH_COMMAND does).
        #[arg(long = "target", value_name = "TARGET")]
        targets: Vec<Target>,
    },
    /// End a process, or what a finding names, with a planned and verified kill.
    ///
    /// Plan, SIGTERM, wait, SIGKILL, verify. Exit 0 only if every targeted process is verified
    /// gone, 1 when not (or nothing is left to signal, or it was not confirmed), 2 when no plan
    /// can be made (no such finding, or one killing does not fix).
    Kill {
        /// A pid, or one or more finding ids from `audit` (e.g. `leaked-adapter:1234.5678`),
        /// killed in one plan.
        targets: Vec<String>,
        /// Instead of ids: every current finding of this kind that killing fixes, in one plan
        /// (e.g. `--kind orphaned-worker`).
        #[arg(long, value_name = "KIND", conflicts_with = "targets")]
        kind: Option<FindingKind>,
        /// With --kind: only the findings about this server (for orphaned workers, their gone
        /// owner).
        #[arg(long = "server", value_name = "PID", requires = "kind")]
        server: Option<u32>,
        /// Also every descendant of the pid (a finding always includes what it started).
        #[arg(long)]
        tree: bool,
        /// Milliseconds between SIGTERM and SIGKILL (at most 60000; default: the finding's
        /// suggested grace, else 3000).
        #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_GRACE_MS))]
        grace_ms: Option<u64>,
        /// Print the plan and stop: exit 0 when it signals something, 1 when it refuses
        /// everything, 2 when no plan can be made.
        #[arg(long)]
        dry_run: bool,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
        /// Allow a pid outside every debug server's tree: it (and, with --tree, its
        /// descendants, read from the system now) joins the plan as a process of no role. pid 1,
        /// debugtop itself and its ancestors are refused even so, and so are other users'
        /// processes unless run as root. Without --force such a pid is refused.
        #[arg(long)]
        force: bool,
        /// Kill on this target (a finding id from `audit --target`): the plan is made, checked
        /// and executed there, where the pids live; only what you confirm here is signalled.
        #[arg(long = "target", value_name = "TARGET")]
        on: Option<Target>,
        /// Print the plan and the outcome as one JSON document (`KillAnswer`); needs --yes or
        /// --dry-run.
        #[arg(long)]
        json: bool,
        /// Signal only these identities (`pid.start-ticks`, comma-separated): what a
        /// confirmation elsewhere showed. Anything else the plan holds now is refused.
        #[arg(long, value_delimiter = ',', value_name = "IDS")]
        only: Option<Vec<ProcId>>,
    },
    /// Run a command and report what of it outlived it; then end exactly that.
    ///
    /// CMD runs as it would without debugtop (stdio, terminal, environment, directory; SIGINT,
    /// SIGTERM, SIGHUP and SIGQUIT are passed on), in a cgroup of its own where one can be
    /// made, else with debugtop as its subreaper (on Windows, in a job object): every process
    /// it starts stays in scope, however it leaves its parent, and so do the containers a
    /// `docker run` in it starts. When CMD exits, the run waits the grace for teardown, then
    /// names every process of the run still alive (role, finding, command line, who started
    /// it, which test) and ends them with the planned, verified kill.
    ///
    /// Exit status: CMD's own when it failed; else 0 when nothing leaked, 86 when something
    /// did (0 with --leaks warn), 87 when the run could not check.
    Run(RunArgs),
    /// (internal) Join a run's cgroup, then become the command.
    #[command(name = "__join-cgroup", hide = true)]
    JoinCgroup {
        /// The cgroup's directory.
        dir: PathBuf,
        /// Join and exit (the run's check that a cgroup can be joined).
        #[arg(long)]
        probe: bool,
        /// The command.
        #[arg(last = true)]
        command: Vec<std::ffi::OsString>,
    },
}

/// Whether leaks fail a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Leaks {
    /// A leak fails the run (status 86).
    Fail,
    /// Leaks are reported; the status is CMD's.
    Warn,
}

/// How a run keeps its command's processes in scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScopeArg {
    /// A cgroup where one can be made, else a subreaper (on Windows, a job object).
    Auto,
    /// A cgroup, or fail.
    Cgroup,
    /// A subreaper.
    Subreaper,
}

/// What `run` is told.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Seconds to wait after CMD exits before what is left counts (waiting stops as soon
    /// as nothing is left): a teardown is allowed to finish.
    #[arg(long, default_value_t = DEFAULT_RUN_GRACE.as_secs_f64(), value_name = "SECS")]
    pub grace: f64,
    /// Leave what is left running for a look (it is still reported).
    #[arg(long)]
    pub keep: bool,
    /// An expected survivor: a role (`server`, `worker`, …) or a pattern matched against
    /// the command line (`sccache`, `*gradle*Daemon*`); reported as allowed, never ended.
    /// Repeatable.
    #[arg(long = "allow", value_name = "ROLE|PATTERN")]
    pub allow: Vec<String>,
    /// Whether leaks fail the run.
    #[arg(long, value_enum, default_value_t = Leaks::Fail)]
    pub leaks: Leaks,
    /// Also write the report as JSON (`debugtop.run/1`) to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the report as JUnit XML to this file.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write an incident snapshot of the run's processes (`debugtop.snapshot/1`,
    /// which the app opens) to this file.
    #[arg(long, value_name = "FILE")]
    pub snapshot: Option<PathBuf>,
    /// How to keep CMD's processes in scope.
    #[arg(long, value_enum, default_value_t = ScopeArg::Auto)]
    pub scope: ScopeArg,
    /// Also ask this server's /health when judging what is left (`http://host:port`).
    #[arg(long = "server", value_name = "URL")]
    pub servers: Vec<String>,
    /// Milliseconds between SIGTERM and SIGKILL when ending what is left.
    #[arg(long, default_value_t = 3000, value_parser = clap::value_parser!(u64).range(0..=MAX_GRACE_MS))]
    pub kill_grace_ms: u64,
    /// Keep secrets in the reported command lines.
    #[arg(long)]
    pub no_redact: bool,
    /// Also hear every fork and exec of CMD's processes from the kernel (Linux, as root), so
    /// a parent that exits within one 50 ms look of starting a process (the middle of a
    /// double fork) is still named. Costs a fork-heavy command about 12 % (BENCHMARKS.md).
    #[arg(long)]
    pub follow_forks: bool,
    /// The command and its arguments.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<std::ffi::OsString>,
}

impl RunArgs {
    /// The run's configuration from the flags (`joiner`: the program that joins a cgroup and
    /// becomes the command, this very binary's hidden verb).
    pub fn config(&self, joiner: Option<Joiner>) -> RunConfig {
        let grace = |secs: f64, max: f64| {
            std::time::Duration::try_from_secs_f64(secs.clamp(0.0, max)).unwrap_or_default()
        };
        RunConfig {
            command: self.command.clone(),
            grace: grace(self.grace, 3600.0),
            scope: match self.scope {
                ScopeArg::Auto => ScopeChoice::Auto,
                ScopeArg::Cgroup => ScopeChoice::Cgroup,
                ScopeArg::Subreaper => ScopeChoice::Subreaper,
            },
            joiner,
            follow_forks: self.follow_forks,
            keep: self.keep,
            allow: self
                .allow
                .iter()
                .map(|a| {
                    a.parse()
                        .unwrap_or_else(|e: std::convert::Infallible| match e {})
                })
                .collect(),
            leaks: match self.leaks {
                Leaks::Fail => LeakPolicy::Fail,
                Leaks::Warn => LeakPolicy::Warn,
            },
            judging: Judging::from_user(
                DEFAULT_INTERVAL.as_millis() as u64,
                DEFAULT_GRACE.as_secs_f64(),
                DEFAULT_STUCK_AFTER.as_secs_f64(),
                self.servers.clone(),
            ),
            kill_grace: std::time::Duration::from_millis(self.kill_grace_ms),
            redact: !self.no_redact,
            snapshot: self.snapshot.is_some(),
        }
    }
}

/// Where `serve` listens unless told: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9847";

/// How a look judges: the same flags, the same meaning, for `watch`, `serve` and `audit` (and
/// what a remote target's `watch` or `audit` is run with).
#[derive(Debug, Clone, clap::Args)]
pub struct JudgingArgs {
    /// Also ask this server's /health (`http://host:port`); repeatable.
    #[arg(long = "server", value_name = "URL")]
    pub servers: Vec<String>,
    /// Seconds a condition must hold before it is a finding (a session ended this long ago
    /// and its worker still runs; a process spinning this long).
    #[arg(long, default_value_t = DEFAULT_GRACE.as_secs_f64(), value_name = "SECS")]
    pub grace: f64,
    /// Seconds after which a session still starting, or a DAP request still unanswered, or a
    /// running session's debuggee stopped by a signal, is a stuck session.
    #[arg(long, default_value_t = DEFAULT_STUCK_AFTER.as_secs_f64(), value_name = "SECS")]
    pub stuck_after: f64,
}

impl Default for JudgingArgs {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            grace: DEFAULT_GRACE.as_secs_f64(),
            stuck_after: DEFAULT_STUCK_AFTER.as_secs_f64(),
        }
    }
}

impl JudgingArgs {
    /// The judging these flags ask for, with `interval_ms` between looks.
    pub fn judging(&self, interval_ms: u64) -> Judging {
        Judging::from_user(
            interval_ms,
            self.grace,
            self.stuck_after,
            self.servers.clone(),
        )
    }
}

/// What a monitor (`watch`, `serve`) looks at and how it judges.
#[derive(Debug, Clone, clap::Args)]
pub struct MonitorArgs {
    /// Tick interval in milliseconds (100 to 60,000).
    #[arg(long, default_value_t = DEFAULT_INTERVAL.as_millis() as u64)]
    pub interval: u64,
    /// How it judges.
    #[command(flatten)]
    pub judging: JudgingArgs,
}

impl Default for MonitorArgs {
    fn default() -> Self {
        Self {
            interval: DEFAULT_INTERVAL.as_millis() as u64,
            judging: JudgingArgs::default(),
        }
    }
}

/// The monitor's configuration from the flags.
pub fn monitor_config(args: &MonitorArgs) -> debugtop_core::sampler::Config {
    debugtop_core::sampler::Config::judging(&args.judging.judging(args.interval))
}

/// What an audit looks at.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AuditArgs {
    /// How it judges.
    #[command(flatten)]
    pub judging: JudgingArgs,
    /// Keep looking this many seconds before answering (on this machine): what shows only over
    /// time is judged too — a duplicate-server needs one twin silent for 30 s, then the grace
    /// (whenever the silence began: `--watch-for 40` reaches it with the default grace)
    #[arg(long, default_value_t = 0.0, value_name = "SECS")]
    pub watch_for: f64,
}

/// Output format of `snapshot`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// The `debugtop.snapshot/1` document.
    Json,
    /// A Markdown incident report, ready for a GitHub issue.
    Md,
}

impl From<Format> for ExportFormat {
    fn from(f: Format) -> Self {
        match f {
            Format::Json => Self::Json,
            Format::Md => Self::Md,
        }
    }
}

/// The audit's configuration from the flags.
pub fn audit_config(args: &AuditArgs) -> AuditConfig {
    AuditConfig::new(args.judging.judging(DEFAULT_INTERVAL.as_millis() as u64))
        .watch_for(args.watch_for)
}

/// What `kill`'s arguments ask for: a pid (with `--tree`), one or several finding ids, or
/// `--kind KIND [--server PID]`.
pub fn kill_request(
    targets: &[String],
    kind: Option<FindingKind>,
    server: Option<u32>,
    tree: bool,
) -> Result<KillRequest, debugtop_core::Error> {
    use debugtop_core::actions::kill::parse_target;
    if let Some(kind) = kind {
        return Ok(KillRequest::Kind { kind, server });
    }
    match targets {
        [] => Err(debugtop_core::Error::NothingToKill(
            "name a pid, one or more finding ids, or --kind KIND".to_owned(),
        )),
        [one] => Ok(match parse_target(one)? {
            KillRequest::Pid { pid, .. } => KillRequest::Pid { pid, tree },
            other => other,
        }),
        many => many
            .iter()
            .map(|t| match parse_target(t)? {
                KillRequest::Finding { id } => Ok(id),
                _ => Err(debugtop_core::Error::NothingToKill(format!(
                    "{t}: several targets must all be finding ids (kill one pid at a time)"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|ids| KillRequest::Findings { ids }),
    }
}

#[cfg(test)]
mod serve_tests {
    use super::*;

    #[test]
    fn serve_listens_on_loopback_unless_an_address_is_named() {
        let Command::Serve { listen, .. } = Cli::parse_from(["debugtop-cli", "serve"]).command
        else {
            panic!("serve");
        };
        assert!(listen.ip().is_loopback(), "{listen}");
        assert_eq!(listen.port(), 9847);
        let Command::Serve { listen, .. } =
            Cli::parse_from(["debugtop-cli", "serve", "--listen", "0.0.0.0:9100"]).command
        else {
            panic!("serve");
        };
        assert!(listen.ip().is_unspecified(), "only when named");
    }

    #[test]
    fn a_monitors_flags_reach_its_configuration() {
        let Command::Watch { monitor, .. } = Cli::parse_from([
            "debugtop-cli",
            "watch",
            "--grace",
            "2.5",
            "--stuck-after",
            "20",
            "--interval",
            "500",
            "--server",
            "http://127.0.0.1:3001",
        ])
        .command
        else {
            panic!("watch");
        };
        let c = monitor_config(&monitor);
        assert_eq!(c.interval, std::time::Duration::from_millis(500));
        assert_eq!(
            c.state.verdicts.grace,
            std::time::Duration::from_millis(2500)
        );
        assert_eq!(c.sources.extra_servers, ["http://127.0.0.1:3001"]);
        let default = monitor_config(&MonitorArgs::default());
        assert_ne!(
            format!("{:?}", c.state.verdicts.stuck),
            format!("{:?}", default.state.verdicts.stuck)
        );
    }

    /// What a far side is run with reads back, on the far side, as the very judging this side
    /// has: every setting crosses (a remote `watch` once got only its interval).
    #[test]
    fn a_far_sides_flags_read_back_as_the_judging_that_wrote_them() {
        let here = Judging::from_user(
            250,
            2.5,
            20.0,
            vec!["http://127.0.0.1:3001".into(), "http://10.0.0.2:80".into()],
        );
        let watch = ["debugtop-cli", "--hello", "watch", "--json"]
            .map(String::from)
            .into_iter()
            .chain(here.watch_flags());
        let Command::Watch { monitor, .. } = Cli::parse_from(watch).command else {
            panic!("watch");
        };
        assert_eq!(monitor.judging.judging(monitor.interval), here);
        let audit = ["debugtop-cli", "--hello", "audit", "--json"]
            .map(String::from)
            .into_iter()
            .chain(here.audit_flags());
        let Command::Audit { args, .. } = Cli::parse_from(audit).command else {
            panic!("audit");
        };
        let there = audit_config(&args).judging;
        assert_eq!(
            (there.grace, there.stuck_after, there.extra_servers),
            (here.grace, here.stuck_after, here.extra_servers)
        );
    }
}
