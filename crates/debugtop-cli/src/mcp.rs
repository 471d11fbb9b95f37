//! `mcp`: debugtop as one of an agent's MCP tools, over stdio. One monitor (the sampler
//! `watch` and `serve` run) is kept warm for the life of the connection, so every question is
//! answered from a running engine; nothing but the protocol is written to stdout. Every answer
//! is built from the update the sampler publishes, redacted once as it is for the app's views,
//! and sized by the core's `report::agent`; the one tool that changes the machine, `kill`, is there only with `--allow-kill`, and ends exactly the plan
//! the agent was shown (by its digest), rechecked against the table as the CLI's kill is.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use debugtop_core::actions::{export, kill};
use debugtop_core::model::{ExportFormat, FindingId, FindingKind, KillRequest, Snapshot};
use debugtop_core::report::agent::{self, Page};
use debugtop_core::safe_fs::{write_atomic, Visibility};
use debugtop_core::sampler::{self, Published};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ProgressNotificationParam, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

mod stdio;

/// How long a tool waits for the monitor's first look.
const FIRST_LOOK: Duration = Duration::from_secs(30);
/// The longest watch an audit may ask for.
const MAX_WATCH_SECS: u32 = 120;
/// Characters of the Markdown summary an export returns.
const SUMMARY_CHARS: usize = 4000;

/// Serves MCP on stdin/stdout until the client goes away.
pub async fn serve(config: sampler::Config, allow_kill: bool) -> anyhow::Result<ExitCode> {
    let home = config.state.home.clone();
    // Every answer is built from the published update, which the sampler redacts once as it
    // publishes (as for the app's views): on, whatever the flags.
    let mut config = config;
    config.state.redact = true;
    let running = sampler::spawn(config).context("cannot start the sampler")?;
    let server = Debugtop {
        updates: running.updates.clone(),
        allow_kill,
        home,
    };
    eprintln!(
        "debugtop-cli: serving MCP on stdio ({})",
        if allow_kill {
            "kill allowed"
        } else {
            "read-only: kill refused without --allow-kill"
        }
    );
    let service = server
        .serve(stdio::transport())
        .await
        .context("the MCP client did not initialize")?;
    service.waiting().await.context("the MCP session failed")?;
    running.task.abort();
    Ok(ExitCode::SUCCESS)
}

/// The server: the monitor's looks, and what it may do.
#[derive(Clone)]
struct Debugtop {
    updates: watch::Receiver<Option<Published>>,
    allow_kill: bool,
    home: Option<String>,
}

/// A page of a list.
#[derive(Debug, Default, Deserialize, JsonSchema)]
struct PageArgs {
    /// Items to return (default 10, at most 100).
    limit: Option<usize>,
    /// The first item (the `next_offset` a cut list gave).
    offset: Option<usize>,
}

/// What an audit is asked.
#[derive(Debug, Default, Deserialize, JsonSchema)]
struct AuditArgs {
    /// Keep watching this many seconds (at most 120) before answering: what shows only over
    /// time is judged too. Progress is notified every second while it watches.
    watch_seconds: Option<u32>,
    /// Findings to return (default 10, at most 100).
    limit: Option<usize>,
    /// The first finding (the `next_offset` a cut list gave).
    offset: Option<usize>,
}

/// One finding.
#[derive(Debug, Deserialize, JsonSchema)]
struct FindingArgs {
    /// The finding's id, as the audit gave it (`leaked-worker:4242.881733`).
    finding_id: String,
    /// Timeline lines to return (default 10, at most 100).
    limit: Option<usize>,
}

/// One process.
#[derive(Debug, Deserialize, JsonSchema)]
struct ProcessArgs {
    /// Its pid.
    pid: u32,
    /// Children to return (default 10, at most 100).
    limit: Option<usize>,
}

/// Where to write an incident.
#[derive(Debug, Default, Deserialize, JsonSchema)]
struct ExportArgs {
    /// An existing folder, absolute (default: a new private folder under the system's
    /// temporary directory). The file names are debugtop's own; an existing file is never
    /// replaced.
    dir: Option<String>,
}

/// What to end.
#[derive(Debug, Deserialize, JsonSchema)]
struct KillArgs {
    /// The finding whose plan to execute (or give `kind`).
    finding_id: Option<String>,
    /// Every finding of this kind that killing fixes, in one plan (instead of `finding_id`).
    kind: Option<String>,
    /// With `kind`: only findings about this server.
    server_pid: Option<u32>,
    /// The plan's digest as the audit (or the explanation) showed it: what is ended is
    /// exactly that plan, or nothing.
    plan_digest: String,
}

/// What an export wrote.
#[derive(Debug, Serialize, JsonSchema)]
struct Exported {
    /// The `debugtop.snapshot/1` document.
    json_path: String,
    /// The Markdown incident report.
    markdown_path: String,
    /// The Markdown report's beginning, to paste into a bug report.
    summary_markdown: String,
    /// Characters of the report left out of the summary.
    summary_left_out: usize,
}

/// What a kill did.
#[derive(Debug, Serialize, JsonSchema)]
struct Killed {
    /// The plan's digest.
    plan_digest: String,
    /// Each target and what ending it did.
    outcomes: Vec<String>,
    /// Every target verified gone.
    all_gone: bool,
}

#[tool_router]
impl Debugtop {
    /// What an agent asks first.
    #[tool(
        description = "What runs now: debug servers (and their transport), HTTP and debug sessions with their states, processes counted by role, findings counted by kind. Lists are cut (limit, offset) with a count of what was left out.",
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        ),
        output_schema = schema_for_output::<agent::Overview>()
    )]
    async fn overview(
        &self,
        Parameters(args): Parameters<PageArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let p = self.latest().await?;
        let s = &p.update.snapshot;
        let o = agent::overview(s, Page::new(args.offset, args.limit));
        let text = format!(
            "{}: {} server(s), {} HTTP and {} debug session(s), {} process(es); {}",
            o.host,
            o.servers_left_out.total,
            o.http_sessions_left_out.total,
            o.debug_sessions_left_out.total,
            o.processes_by_role.values().sum::<usize>(),
            if o.clean {
                "no finding".to_owned()
            } else {
                format!("findings: {:?}", o.findings_by_kind)
            }
        );
        answer(text, &o)
    }

    /// The liveness audit.
    #[tool(
        description = "The liveness audit: every finding (leaked workers, adapters and debuggees, orphans, zombies counted as exited, stuck and spinning processes, orphaned stdio servers) with its id, severity, evidence, since/confirmed times and what its kill plan would end (with the plan's digest, which `kill` takes). Optionally watches for N seconds first, notifying progress. Thousands of findings of one cause come back as groups.",
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        ),
        output_schema = schema_for_output::<agent::Audit>()
    )]
    async fn audit(
        &self,
        Parameters(args): Parameters<AuditArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let secs = args.watch_seconds.unwrap_or(0).min(MAX_WATCH_SECS);
        self.watch(secs, &context).await?;
        let published = self.latest().await?;
        let digests = group_digests(&published);
        let s = &published.update.snapshot;
        let mut a = agent::audit(s, Page::new(args.offset, args.limit));
        for g in &mut a.groups {
            g.plan_digest = digests
                .iter()
                .find(|(k, _)| *k == g.key)
                .map(|(_, d)| d.clone());
        }
        answer(agent::audit_text(&a), &a)
    }

    /// One finding in full.
    #[tool(
        description = "One finding in full: every evidence sentence, its kill plan with every target (and what it refuses), and the timeline lines about it.",
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        ),
        output_schema = schema_for_output::<agent::Explained>()
    )]
    async fn explain(
        &self,
        Parameters(args): Parameters<FindingArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let id = parse_id(&args.finding_id)?;
        let p = self.latest().await?;
        let s = &p.update.snapshot;
        let Some(e) = agent::explain(s, &id.to_string(), Page::new(None, args.limit)) else {
            return Ok(refused(format!(
                "no current finding {id}: it is fixed, or gone; run the audit again"
            )));
        };
        let text = format!(
            "{} {} ({}): {}",
            e.finding.severity,
            e.finding.id,
            e.finding.kind,
            e.finding.evidence.first().map_or("", String::as_str)
        );
        answer(text, &e)
    }

    /// One process in full.
    #[tool(
        description = "One process in full: its role, redacted command line, working directory, listening ports, state, memory and CPU, its parents and children, and the findings that name it. Only a process of the monitored trees is answered.",
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        ),
        output_schema = schema_for_output::<agent::ProcessDetail>()
    )]
    async fn process(
        &self,
        Parameters(args): Parameters<ProcessArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let p = self.latest().await?;
        let s = &p.update.snapshot;
        let pid = args.pid;
        let (cwd, ports) =
            tokio::task::spawn_blocking(move || debugtop_core::collect::detail::cwd_and_ports(pid))
                .await
                .unwrap_or_default();
        let cwd = cwd.map(|c| debugtop_core::redact::redact_text(&c, self.home.as_deref()));
        let page = Page::new(None, args.limit);
        let Some(p) = agent::process(s, pid, cwd, ports, page) else {
            return Ok(refused(format!(
                "pid {pid} is not a process of the monitored trees now"
            )));
        };
        let text = format!("{} {}: {}", p.role, p.pid, p.argv.join(" "));
        answer(text, &p)
    }

    /// An incident snapshot.
    #[tool(
        description = "Writes an incident snapshot (the debugtop.snapshot/1 JSON and a Markdown report, redacted) and returns their paths and the Markdown summary to paste into a bug report.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        ),
        output_schema = schema_for_output::<Exported>()
    )]
    async fn export(
        &self,
        Parameters(args): Parameters<ExportArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let dir = match args.dir.as_deref().map(checked_dir).transpose() {
            Ok(d) => d,
            Err(why) => return Ok(refused(why)),
        };
        let published = self.latest().await?;
        let home = self.home.clone();
        let written = tokio::task::spawn_blocking(move || {
            let s = export::prepare(&published.raw, true, home.as_deref());
            write_incident(&s, dir)
        })
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        match written {
            Ok(e) => answer(format!("wrote {} and {}", e.json_path, e.markdown_path), &e),
            Err(why) => Ok(refused(why)),
        }
    }

    /// The one tool that changes the machine.
    #[tool(
        description = "Ends what one finding's plan (or one kind's) names: exactly the plan the audit showed, given by its digest, rechecked against the process table (pid and start of every target) before anything is signalled; SIGTERM, a grace, SIGKILL, each end verified. Refused unless debugtop-cli mcp was started with --allow-kill.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        ),
        output_schema = schema_for_output::<Killed>()
    )]
    async fn kill(
        &self,
        Parameters(args): Parameters<KillArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        if !self.allow_kill {
            return Ok(refused(
                "kill is disabled: this server was started without --allow-kill, so it only \
                 looks; nothing was signalled"
                    .to_owned(),
            ));
        }
        let request = kill_request(&args)?;
        let published = self.latest().await?;
        let findings = &published.update.snapshot.findings;
        let plan = match kill::plan_for(
            &request,
            findings,
            &published.live,
            kill::KillOptions::default(),
        ) {
            Ok(p) => p,
            Err(e) => return Ok(refused(format!("nothing was signalled: {e}"))),
        };
        let now = agent::digest(&plan);
        if now != args.plan_digest {
            return Ok(refused(format!(
                "nothing was signalled: the plan is no longer the one shown (its digest is {now} \
                 now, not {}); run the audit again",
                args.plan_digest
            )));
        }
        if plan.targets.is_empty() {
            return Ok(refused(
                "nothing was signalled: the plan has no target".to_owned(),
            ));
        }
        let report = crate::execute_now(plan, false, false)
            .await
            .map_err(|e| ErrorData::internal_error(format!("{e:#}"), None))?;
        let k = Killed {
            plan_digest: now,
            all_gone: report.all_gone(),
            outcomes: report
                .outcomes
                .iter()
                .map(|o| format!("{} {}: {}", o.role, o.pid, o.outcome))
                .collect(),
        };
        answer(k.outcomes.join("; "), &k)
    }
}

#[tool_handler]
impl ServerHandler for Debugtop {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("debugtop", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "debugtop shows what debug servers (mcp-debugger) and MCP hosts have running and \
                 what they left behind, from the process table, the servers' /health and logs. \
                 Ask `overview` first, then `audit`; `explain` a finding or look at one `process`; \
                 `export` an incident for a bug report. `kill` takes a finding id and the plan \
                 digest the audit showed, and works only when the server was started with \
                 --allow-kill. Zombies are exited processes, never alive.",
            )
    }
}

impl Debugtop {
    /// The monitor's latest look, waiting for the first one.
    async fn latest(&self) -> Result<Published, ErrorData> {
        let mut rx = self.updates.clone();
        let got = tokio::time::timeout(FIRST_LOOK, rx.wait_for(Option::is_some)).await;
        match got {
            Ok(Ok(p)) => p
                .clone()
                .ok_or_else(|| ErrorData::internal_error("no look yet", None)),
            Ok(Err(_)) => Err(ErrorData::internal_error("the monitor stopped", None)),
            Err(_) => Err(ErrorData::internal_error(
                "the monitor has not looked yet (30 s)",
                None,
            )),
        }
    }

    /// Waits `secs` seconds of looks, notifying progress each second when the client asked.
    async fn watch(
        &self,
        secs: u32,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let token = context.meta.get_progress_token();
        for done in 0..secs {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
                () = context.ct.cancelled() => {
                    return Err(ErrorData::internal_error("cancelled", None));
                }
            }
            if let Some(t) = &token {
                let mut p = ProgressNotificationParam::new(t.clone(), f64::from(done + 1));
                p.total = Some(f64::from(secs));
                p.message = Some(format!("watched {} of {secs} s", done + 1));
                let _ = context.peer.notify_progress(p).await;
            }
        }
        Ok(())
    }
}

/// The digest of each killable group's bulk plan, by group key.
fn group_digests(p: &Published) -> Vec<(String, String)> {
    let s = &p.update.snapshot;
    s.groups
        .iter()
        .filter(|g| g.killable)
        .filter_map(|g| {
            let request = KillRequest::Kind {
                kind: g.kind,
                server: g.server_pid,
            };
            let plan = kill::plan_for(&request, &s.findings, &p.live, kill::KillOptions::default())
                .ok()?;
            Some((g.key.clone(), agent::digest(&plan)))
        })
        .collect()
}

/// A finding id given by the agent, or a JSON-RPC error in words.
fn parse_id(text: &str) -> Result<FindingId, ErrorData> {
    FindingId::from_str(text).map_err(|_| {
        ErrorData::invalid_params(
            format!(
                "{:?} is not a finding id (e.g. leaked-worker:4242.881733)",
                text.chars().take(80).collect::<String>()
            ),
            None,
        )
    })
}

fn kill_request(args: &KillArgs) -> Result<KillRequest, ErrorData> {
    match (&args.finding_id, &args.kind) {
        (Some(id), None) => Ok(KillRequest::Finding { id: parse_id(id)? }),
        (None, Some(kind)) => {
            let kind = FindingKind::from_str(kind).map_err(|_| {
                ErrorData::invalid_params(
                    format!(
                        "{:?} is not a finding kind",
                        kind.chars().take(80).collect::<String>()
                    ),
                    None,
                )
            })?;
            Ok(KillRequest::Kind {
                kind,
                server: args.server_pid,
            })
        }
        _ => Err(ErrorData::invalid_params(
            "give exactly one of finding_id and kind",
            None,
        )),
    }
}

/// An agent's folder for an export: absolute, no `..`, an existing directory (not a link to
/// one), or the refusal in words.
fn checked_dir(text: &str) -> Result<PathBuf, String> {
    let path = Path::new(text);
    if !path.is_absolute()
        || path
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(format!(
            "{text:?} is not an absolute folder without `..`: nothing written"
        ));
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => Ok(path.to_path_buf()),
        Ok(_) => Err(format!(
            "{text:?} is not a folder (a link or a file): nothing written"
        )),
        Err(e) => Err(format!("{text:?}: {e}: nothing written")),
    }
}

/// Writes the incident's two files into `dir` (a new private folder when none) under
/// debugtop's own names, never over an existing file.
fn write_incident(s: &Snapshot, dir: Option<PathBuf>) -> Result<Exported, String> {
    let stamp = s.taken_at.format("%Y%m%d-%H%M%S");
    let dir = match dir {
        Some(d) => d,
        None => private_dir(&format!("debugtop-incident-{stamp}-{}", std::process::id()))?,
    };
    let json = export::render(s, ExportFormat::Json).map_err(|e| e.to_string())?;
    let md = export::render(s, ExportFormat::Md).map_err(|e| e.to_string())?;
    let base = format!("debugtop-incident-{stamp}");
    let (jp, mp) = (
        dir.join(format!("{base}.json")),
        dir.join(format!("{base}.md")),
    );
    for (path, text) in [(&jp, &json), (&mp, &md)] {
        if std::fs::symlink_metadata(path).is_ok() {
            return Err(format!("{} exists: nothing replaced", path.display()));
        }
        write_atomic(path, text.as_bytes(), Visibility::Private)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let summary: String = md.chars().take(SUMMARY_CHARS).collect();
    Ok(Exported {
        json_path: jp.display().to_string(),
        markdown_path: mp.display().to_string(),
        summary_left_out: md.chars().count().saturating_sub(SUMMARY_CHARS),
        summary_markdown: summary,
    })
}

/// A new folder only this user can open, under the system's temporary directory.
fn private_dir(name: &str) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(name);
    #[cfg(unix)]
    let b = {
        let mut b = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b
    };
    #[cfg(not(unix))]
    let b = std::fs::DirBuilder::new();
    b.create(&dir)
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    Ok(dir)
}

/// A structured answer with its short text.
fn answer<T: Serialize>(text: String, value: &T) -> Result<CallToolResult, ErrorData> {
    let v = serde_json::to_value(value)
        .map_err(|e| ErrorData::internal_error(format!("cannot write the answer: {e}"), None))?;
    let mut r = CallToolResult::structured(v);
    r.content = vec![ContentBlock::text(text)];
    Ok(r)
}

/// A refusal the agent reads (a tool error, not a protocol one).
fn refused(why: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(why)])
}
