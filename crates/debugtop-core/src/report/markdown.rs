//! The Markdown incident report: ready to paste into a GitHub issue. A one-line summary, the
//! findings with their evidence, the tree as an indented forest with role / state / finding
//! marks, a timeline table, log excerpts in fenced blocks, and the environment.
//!
//! Every string in it came from a process or a log: outside code blocks it is escaped so it
//! renders as text (no links, no HTML, no table breaks); code blocks use a fence longer than
//! any backtick run inside them.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

use crate::model::{
    DebugSession, Finding, FindingKind, Fleet, NodeKind, Severity, Snapshot, SourceState, TreeNode,
};

/// Timeline rows shown (the newest).
pub const TIMELINE_ROWS: usize = 40;

/// Renders the report.
pub fn render(s: &Snapshot) -> String {
    let mut out = String::new();
    let _ = write_report(s, &mut out);
    out
}

fn write_report(s: &Snapshot, o: &mut String) -> std::fmt::Result {
    writeln!(
        o,
        "# debugtop incident report — {}, {}",
        esc(&s.host),
        s.taken_at.format("%Y-%m-%d %H:%M:%S UTC")
    )?;
    writeln!(o)?;
    writeln!(o, "**Summary:** {}", summary(s))?;
    writeln!(o)?;
    findings(s, o)?;
    stuck_sessions(s, o)?;
    tree(s, o)?;
    timeline(s, o)?;
    excerpts(s, o)?;
    environment(s, o)
}

fn findings(s: &Snapshot, o: &mut String) -> std::fmt::Result {
    writeln!(o, "## Findings")?;
    writeln!(o)?;
    if s.findings.is_empty() {
        writeln!(o, "No findings: every process is accounted for.")?;
        writeln!(o)?;
    }
    let procs: ByPid<'_> = s.processes.iter().map(|p| (p.pid, &**p)).collect();
    for f in &s.findings {
        finding(f, &procs, o)?;
    }
    if !s.unconfirmed.is_empty() {
        writeln!(o, "## Not yet confirmed")?;
        writeln!(o)?;
        writeln!(
            o,
            "Seen in this one look but not yet held for their grace (a normal teardown can look \
             the same for a second); `debugtop-cli audit` confirms or clears them."
        )?;
        writeln!(o)?;
        for f in &s.unconfirmed {
            finding(f, &procs, o)?;
        }
    }
    Ok(())
}

/// The snapshot's processes by pid.
type ByPid<'a> = std::collections::HashMap<u32, &'a crate::model::Proc>;

fn finding(f: &Finding, procs: &ByPid<'_>, o: &mut String) -> std::fmt::Result {
    let icon = match f.severity {
        Severity::Critical => "🔴 CRITICAL",
        Severity::Warning => "🟠 WARNING",
        Severity::Info => "🔵 INFO",
    };
    writeln!(o, "### {icon} `{}` — `{}`", f.kind, f.id)?;
    writeln!(o)?;
    let mut meta = Vec::new();
    if !f.pids.is_empty() {
        let pids: Vec<String> = f.pids.iter().map(u32::to_string).collect();
        meta.push(format!("pids {}", pids.join(", ")));
    }
    if let Some(sid) = &f.session_id {
        meta.push(format!("session `{}`", code_inline(sid)));
    }
    if let Some(p) = f.server_pid {
        meta.push(format!("server {p}"));
    }
    meta.push(f.dates());
    writeln!(o, "{}", meta.join(" · "))?;
    writeln!(o)?;
    for e in &f.evidence {
        writeln!(o, "- {}", esc(e))?;
    }
    writeln!(o)?;
    commands(f, procs, o)?;
    write!(o, "**Suggested:** {}", esc(&f.suggested_action))?;
    if f.plan.as_ref().is_some_and(|p| !p.targets.is_empty()) {
        write!(o, " — `debugtop-cli kill {}`", f.id)?;
    }
    writeln!(o)?;
    writeln!(o)
}

/// The most processes of one finding whose command lines are written out.
const COMMANDS_SHOWN: usize = 10;
/// The most characters of one command line written out.
const COMMAND_CHARS: usize = 1_000;

/// The whole command line of each process a finding names (the tree cuts labels short): what
/// a reader of the report needs to tell what leaked.
fn commands(f: &Finding, procs: &ByPid<'_>, o: &mut String) -> std::fmt::Result {
    let named: Vec<&crate::model::Proc> = f
        .pids
        .iter()
        .filter_map(|pid| procs.get(pid).copied())
        .collect();
    if named.is_empty() {
        return Ok(());
    }
    writeln!(o, "Command lines:")?;
    writeln!(o)?;
    for p in named.iter().take(COMMANDS_SHOWN) {
        let line: String = crate::model::printable::one_line(&p.argv.join(" "))
            .replace('`', "'")
            .chars()
            .take(COMMAND_CHARS)
            .collect();
        writeln!(o, "- {} {}: `{line}`", p.role, p.pid)?;
    }
    if named.len() > COMMANDS_SHOWN {
        writeln!(o, "- and {} more", named.len() - COMMANDS_SHOWN)?;
    }
    writeln!(o)
}

/// The sessions a `stuck-session` finding names: how far each start got, stage by stage, what
/// it waits for, its last sign of life and its debuggee.
fn stuck_sessions(s: &Snapshot, o: &mut String) -> std::fmt::Result {
    let stuck: Vec<&DebugSession> = s
        .debug_sessions
        .iter()
        .map(|d| &**d)
        .filter(|d| {
            s.findings.iter().any(|f| {
                f.kind == FindingKind::StuckSession && f.session_id.as_deref() == Some(&d.id)
            })
        })
        .collect();
    if stuck.is_empty() {
        return Ok(());
    }
    writeln!(o, "## Stuck sessions")?;
    writeln!(o)?;
    for d in stuck {
        stuck_session(s, d, o)?;
    }
    Ok(())
}

fn stuck_session(s: &Snapshot, d: &DebugSession, o: &mut String) -> std::fmt::Result {
    let p = &d.progress;
    let age = |at: chrono::DateTime<chrono::Utc>| {
        format!(
            "{:.0} s",
            (s.taken_at - at).num_milliseconds() as f64 / 1000.0
        )
    };
    let state = d.state.map(|x| x.to_string()).unwrap_or_else(|| "?".into());
    let since = p
        .state_since
        .map(|at| format!(" for {} (since {})", age(at), at.format("%H:%M:%S%.3f")))
        .unwrap_or_default();
    let name = d
        .name
        .as_deref()
        .map(|n| format!(" ({})", esc(n)))
        .unwrap_or_default();
    writeln!(
        o,
        "### Session `{}`{name} — {state}{since}",
        code_inline(&d.id)
    )?;
    writeln!(o)?;
    stage_table(p, o)?;
    for r in p.trace.iter().flat_map(|t| &t.pending) {
        writeln!(
            o,
            "- waiting: DAP `{}` (seq {}) sent at {}, for {}",
            code_inline(&r.command),
            r.seq,
            r.sent_at.format("%H:%M:%S%.3f"),
            age(r.sent_at)
        )?;
    }
    if let Some(l) = &p.last_sign {
        writeln!(o, "- last sign of life {} ago: {}", age(l.at), esc(&l.text))?;
    }
    if let Some(g) = &p.debuggee {
        let tracer = g
            .tracer_pid
            .map(|t| format!(", traced by {t}"))
            .unwrap_or_default();
        let what = match g.state {
            crate::model::ProcState::TracingStop => " (stopped by its debugger)",
            crate::model::ProcState::Stopped => " (stopped by a signal)",
            crate::model::ProcState::DiskSleep => " (uninterruptible sleep)",
            _ => "",
        };
        writeln!(
            o,
            "- debuggee {}: state {}{what}{tracer}",
            g.pid,
            g.state.letter()
        )?;
    }
    writeln!(o)
}

/// A session's start, one stage a row, with its time and log line.
fn stage_table(p: &crate::model::SessionProgress, o: &mut String) -> std::fmt::Result {
    if p.stages.is_empty() {
        return Ok(());
    }
    writeln!(o, "| stage | at | source |")?;
    writeln!(o, "|---|---|---|")?;
    for m in &p.stages {
        let at =
            m.at.map(|a| a.format("%H:%M:%S%.3f").to_string())
                .unwrap_or_default();
        let file = m.file.rsplit('/').next().unwrap_or(&m.file);
        let stage = esc(&m.stage.to_string());
        writeln!(o, "| {stage} | {at} | {}:{} |", esc(file), m.line)?;
    }
    writeln!(o)
}

fn tree(s: &Snapshot, o: &mut String) -> std::fmt::Result {
    writeln!(o, "## Process tree")?;
    writeln!(o)?;
    let marks = finding_marks(&s.findings);
    let mut lines = Vec::new();
    for (i, n) in s.tree.iter().enumerate() {
        forest(n, "", i + 1 == s.tree.len(), true, &marks, &mut lines);
    }
    if lines.is_empty() {
        lines.push("(no debug server processes)".to_owned());
    }
    fenced(o, "text", &lines.join("\n"))
}

fn timeline(s: &Snapshot, o: &mut String) -> std::fmt::Result {
    writeln!(o, "## Timeline")?;
    writeln!(o)?;
    if s.timeline.is_empty() {
        writeln!(o, "No events recorded.")?;
        return writeln!(o);
    }
    let skip = s.timeline.len().saturating_sub(TIMELINE_ROWS);
    if skip > 0 {
        writeln!(
            o,
            "The newest {TIMELINE_ROWS} of {} events.",
            s.timeline.len()
        )?;
        writeln!(o)?;
    }
    writeln!(o, "| time | event | what | source |")?;
    writeln!(o, "|---|---|---|---|")?;
    for e in s.timeline.iter().skip(skip) {
        let src = e
            .source
            .as_ref()
            .map(|x| esc(&x.to_string()))
            .unwrap_or_default();
        writeln!(
            o,
            "| {} | {} | {} | {} |",
            e.at.format("%H:%M:%S%.3f"),
            e.kind,
            esc(&e.text),
            src
        )?;
    }
    writeln!(o)
}

fn excerpts(s: &Snapshot, o: &mut String) -> std::fmt::Result {
    if s.log_excerpts.is_empty() {
        return Ok(());
    }
    writeln!(o, "## Log excerpts")?;
    writeln!(o)?;
    for x in &s.log_excerpts {
        let name = std::path::Path::new(&x.file)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let last = x.first_line + x.lines.len().saturating_sub(1) as u64;
        let why = x
            .finding_id
            .as_ref()
            .map(|f| format!(" (for `{f}`)"))
            .unwrap_or_default();
        writeln!(
            o,
            "**{}:{}–{}**{why}, line {} cited:",
            esc(&name),
            x.first_line,
            last,
            x.cited_line
        )?;
        writeln!(o)?;
        fenced(o, "json", &x.lines.join("\n"))?;
    }
    Ok(())
}

fn environment(s: &Snapshot, o: &mut String) -> std::fmt::Result {
    writeln!(o, "## Environment")?;
    writeln!(o)?;
    writeln!(o, "| what | value |")?;
    writeln!(o, "|---|---|")?;
    writeln!(o, "| debugtop | {} |", esc(&s.debugtop))?;
    writeln!(o, "| host | {} |", esc(&s.host))?;
    if let Some(env) = &s.environment {
        for v in &env.servers {
            let pkg = v.package.as_deref().unwrap_or("mcp-debugger");
            let ver = v.version.as_deref().unwrap_or("unknown version");
            writeln!(o, "| server {} | {} {} |", v.pid, esc(pkg), esc(ver))?;
        }
        let or_unknown = |v: &Option<String>| esc(v.as_deref().unwrap_or("unknown"));
        writeln!(o, "| node | {} |", or_unknown(&env.node))?;
        writeln!(o, "| kernel | {} |", or_unknown(&env.kernel))?;
        writeln!(o, "| os | {} |", esc(&env.os))?;
    }
    for src in &s.sources {
        let who = src
            .server_pid
            .map(|p| format!(" (server {p})"))
            .unwrap_or_default();
        let state = match src.state {
            SourceState::Ok => "ok",
            SourceState::Degraded => "degraded",
            SourceState::Failed => "failed",
        };
        writeln!(o, "| {}{who} | {state}: {} |", src.source, esc(&src.detail))?;
    }
    let redacted = if s.redacted {
        "yes"
    } else {
        "**no** — this report may contain secrets"
    };
    writeln!(o, "| redacted | {redacted} |")
}

fn summary(s: &Snapshot) -> String {
    let procs = s
        .processes
        .iter()
        .filter(|p| p.sample.state.is_alive())
        .count();
    if s.findings.is_empty() {
        return format!(
            "all healthy — {} server(s), {} debug session(s), {procs} live process(es).",
            s.servers.len(),
            s.debug_sessions.len()
        );
    }
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &s.findings {
        *by_kind.entry(f.kind.as_str()).or_default() += 1;
    }
    let kinds: Vec<String> = by_kind
        .iter()
        .map(|(k, n)| {
            if *n == 1 {
                format!("`{k}`")
            } else {
                format!("{n}× `{k}`")
            }
        })
        .collect();
    let critical = s
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Critical)
        .count();
    format!(
        "{} finding(s), {critical} critical: {} — on {} server(s), {} debug session(s), {procs} live process(es).",
        s.findings.len(),
        kinds.join(", "),
        s.servers.len(),
        s.debug_sessions.len()
    )
}

fn finding_marks(findings: &[Arc<Finding>]) -> BTreeMap<u32, Vec<&'static str>> {
    let mut m: BTreeMap<u32, Vec<&'static str>> = BTreeMap::new();
    for f in findings {
        for p in &f.pids {
            m.entry(*p).or_default().push(f.kind.as_str());
        }
    }
    m
}

fn forest(
    n: &TreeNode,
    prefix: &str,
    last: bool,
    root: bool,
    marks: &BTreeMap<u32, Vec<&'static str>>,
    out: &mut Vec<String>,
) {
    let branch = if root {
        ""
    } else if last {
        "└─ "
    } else {
        "├─ "
    };
    let what = match n.kind {
        NodeKind::Server => "server".to_owned(),
        NodeKind::GoneServer => "gone server".to_owned(),
        NodeKind::RemoteServer => "remote server".to_owned(),
        NodeKind::Host => "MCP host".to_owned(),
        NodeKind::GoneHost => "gone MCP host".to_owned(),
        NodeKind::HttpSession => "http-session".to_owned(),
        NodeKind::DebugSession => "debug-session".to_owned(),
        NodeKind::Process => n
            .role
            .map(|r| r.as_str().to_owned())
            .unwrap_or_else(|| "process".into()),
    };
    let pid = n.pid.map(|p| format!(" {p}")).unwrap_or_default();
    let state = n
        .state
        .map(|s| format!(" [{}]", s.letter()))
        .unwrap_or_default();
    let status = n.status.map(|s| format!(" ({s})")).unwrap_or_default();
    let mark = n
        .pid
        .and_then(|p| marks.get(&p))
        .map(|k| format!(" ⚠ {}", k.join(", ")))
        .unwrap_or_default();
    let label: String = one_line(&n.label).chars().take(100).collect();
    out.push(format!(
        "{prefix}{branch}{what}{pid}{state}{status}{mark}  {label}"
    ));
    let child_prefix = if root {
        prefix.to_owned()
    } else {
        format!("{prefix}{}", if last { "   " } else { "│  " })
    };
    for (i, c) in n.children.iter().enumerate() {
        forest(
            c,
            &child_prefix,
            i + 1 == n.children.len(),
            false,
            marks,
            out,
        );
    }
}

fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A fleet file as Markdown: each target's report under its name.
pub fn render_fleet(f: &Fleet) -> String {
    let mut o = format!(
        "# debugtop fleet snapshot — {} target(s), {}\n\n",
        f.targets.len(),
        f.taken_at.to_rfc3339()
    );
    for t in &f.targets {
        o.push_str(&format!("## Target `{}`\n\n", esc(&t.target.to_string())));
        match (&t.snapshot, &t.error) {
            (Some(s), _) => {
                let md = render(s);
                // Each report's headings one level down, under the target's.
                for line in md.lines() {
                    if line.starts_with('#') {
                        o.push('#');
                    }
                    o.push_str(line);
                    o.push('\n');
                }
            }
            (None, e) => o.push_str(&format!(
                "Could not take a snapshot: {}\n",
                esc(e.as_deref().unwrap_or("no answer"))
            )),
        }
        o.push('\n');
    }
    o
}

/// Escapes untrusted text for Markdown outside code: it renders as the same characters, and
/// pasted into an issue it pings nobody and links nothing — a word joiner (U+2060, invisible)
/// goes after `@` before a name, after `#` before a number, and inside `://` and `www.`, so
/// `@someone`, `#123` and bare URLs from a process's argv stay plain text.
pub fn esc(s: &str) -> String {
    const WJ: char = '\u{2060}';
    let line = one_line(s);
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied().unwrap_or(' ');
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '@' if next.is_alphanumeric() => {
                out.push(c);
                out.push(WJ);
            }
            '#' if next.is_ascii_digit() => {
                out.push(c);
                out.push(WJ);
            }
            ':' if next == '/' && chars.get(i + 2) == Some(&'/') => {
                out.push(c);
                out.push(WJ);
            }
            '.' if i >= 3
                && chars[i - 3..i]
                    .iter()
                    .collect::<String>()
                    .eq_ignore_ascii_case("www") =>
            {
                out.push(WJ);
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Text for inside an inline code span (no backticks can end it early).
fn code_inline(s: &str) -> String {
    one_line(s).replace('`', "'")
}

/// A fenced block whose fence is longer than any backtick run in `body`.
fn fenced(o: &mut String, lang: &str, body: &str) -> std::fmt::Result {
    let body = crate::model::printable::for_terminal(body);
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    writeln!(o, "{fence}{lang}")?;
    writeln!(o, "{body}")?;
    writeln!(o, "{fence}")?;
    writeln!(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::sample_snapshot;
    use std::sync::Arc;

    #[test]
    fn report_of_a_fixed_model() {
        insta::assert_snapshot!(render(&sample_snapshot()));
    }

    #[test]
    fn a_stuck_session_has_its_stages_waiting_requests_and_last_sign_of_life() {
        let mut s = sample_snapshot();
        let d = s
            .debug_sessions
            .iter_mut()
            .map(Arc::make_mut)
            .find(|d| !d.progress.stages.is_empty())
            .unwrap();
        d.progress.stages.truncate(4);
        if let Some(t) = d.progress.trace.as_mut() {
            t.pending.push(crate::model::PendingRequest {
                command: "initialize".into(),
                seq: 1,
                sent_at: d.progress.stages[3].at.unwrap(),
                asker: crate::model::Asker::Worker,
            });
        }
        let id = d.id.clone();
        let mut f = (*s.findings[0]).clone();
        f.kind = FindingKind::StuckSession;
        f.session_id = Some(id);
        s.findings.push(Arc::new(f));
        let md = render(&s);
        let section = md.split("## Stuck sessions").nth(1).unwrap();
        let section = section.split("## Process tree").next().unwrap();
        insta::assert_snapshot!(section);
        // Without a stuck-session finding there is no section.
        assert!(!render(&sample_snapshot()).contains("## Stuck sessions"));
        assert!(!render(&sample_snapshot()).contains("## Not yet confirmed"));
        let mut s = sample_snapshot();
        s.unconfirmed = s.findings.clone();
        let md = render(&s);
        let section = md.split("## Not yet confirmed").nth(1).unwrap_or_default();
        assert!(section.contains(&format!("`{}`", s.findings[0].id)), "{md}");
    }

    #[test]
    fn a_findings_processes_are_written_with_their_whole_command_line() {
        let mut s = sample_snapshot();
        let pid = s.findings[0].pids[0];
        let long = format!(
            "{} --token `x`\n## fake heading tail-ZqEnd",
            "a".repeat(150)
        );
        let p = s.processes.iter_mut().find(|p| p.pid == pid).unwrap();
        Arc::make_mut(p).facts.argv = vec!["node".to_owned(), long].into();
        let md = render(&s);
        let lines: Vec<&str> = md.lines().filter(|l| l.contains("tail-ZqEnd")).collect();
        assert_eq!(lines.len(), 1, "past the tree's cut, on one line: {md}");
        assert!(
            lines[0].contains("--token 'x'\\x0a## fake heading"),
            "{}",
            lines[0]
        );
        // A process no finding names is in the tree only.
        let named: Vec<u32> = s.findings.iter().flat_map(|f| f.pids.clone()).collect();
        let other = s
            .processes
            .iter()
            .find(|p| !named.contains(&p.pid))
            .unwrap();
        let listed = format!(" {}: `", other.pid);
        let section = md.split("## Process tree").next().unwrap();
        assert!(!section.contains(&listed), "{md}");
    }

    #[test]
    fn a_pasted_report_pings_nobody_and_links_nothing() {
        let mut s = sample_snapshot();
        Arc::make_mut(&mut s.findings[0])
            .evidence
            .push("cc @octocat, fixes #123, see https://evil.example/x or www.evil.example".into());
        let md = render(&s);
        for live in ["@octocat", "#123", "https://evil", "www.evil"] {
            assert!(!md.contains(live), "{live} is live in the report");
        }
        let shown: String = md.chars().filter(|c| *c != '\u{2060}').collect();
        assert!(
            shown.contains(
                "cc @octocat, fixes #123, see https://evil.example/x or www.evil.example"
            ),
            "it reads the same"
        );
    }

    #[test]
    fn hostile_strings_render_as_text() {
        let mut s = sample_snapshot();
        Arc::make_mut(&mut Arc::make_mut(&mut s.tree[0]).children[0]).label =
            "<img src=x onerror=alert(1)> ```` | [x](javascript:alert(1))".into();
        Arc::make_mut(&mut s.findings[0])
            .evidence
            .push("<script>alert(1)</script> | *bold* [link](http://x)".into());
        let md = render(&s);
        let html = {
            let mut h = String::new();
            pulldown_cmark::html::push_html(
                &mut h,
                pulldown_cmark::Parser::new_ext(&md, pulldown_cmark::Options::ENABLE_TABLES),
            );
            h
        };
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<a "), "{html}");
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "the text is still there, as text"
        );
    }

    #[test]
    fn renders_to_html_with_tables_and_code() {
        let md = render(&sample_snapshot());
        let mut h = String::new();
        pulldown_cmark::html::push_html(
            &mut h,
            pulldown_cmark::Parser::new_ext(&md, pulldown_cmark::Options::ENABLE_TABLES),
        );
        assert!(
            h.contains("<table>")
                && h.contains("<pre><code class=\"language-text\">")
                && h.contains("<h3>")
        );
        // `scripts/screenshot-report.sh` sets this to look at the rendered report.
        if let Ok(path) = std::env::var("DEBUGTOP_REPORT_HTML") {
            let page = format!(
                "<!doctype html><meta charset=utf-8><style>body{{font:15px/1.5 -apple-system,'Segoe UI',sans-serif;max-width:980px;margin:24px auto;color:#1f2328}}\
                 table{{border-collapse:collapse}}td,th{{border:1px solid #d0d7de;padding:4px 10px}}pre{{background:#f6f8fa;padding:12px;overflow:auto;font-size:12px}}\
                 code{{font-family:ui-monospace,monospace}}h1{{border-bottom:1px solid #d0d7de}}</style>{h}"
            );
            std::fs::write(path, page).expect("write the report page");
        }
    }
}
