//! A run's report as CI shows it: the summary a person reads on stderr after the command's own
//! output, a JUnit file (one test case per survivor, so every CI system lists them), and the
//! GitHub Actions annotations that put each leak on the run's page. All from the one
//! [`RunReport`]; every string in it is data, escaped for where it goes.

use std::fmt::Write;

use crate::model::printable::one_line;
use crate::model::{RunReport, RunVerdict, ScopeKind, Survivor};

/// The readable summary (several lines, ending with a newline).
pub fn to_text(r: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "debugtop run: {}", headline(r));
    let _ = writeln!(out, "  scope: {}", scope_line(r));
    for s in &r.survivors {
        out.push_str(&survivor_lines(s));
    }
    for p in &r.problems {
        let _ = writeln!(out, "  could not check: {}", one_line(p));
    }
    if r.kept && r.survivors.iter().any(|s| s.ended.is_none()) {
        let _ = writeln!(
            out,
            "  kept running (--keep): open them in the app (`debugtop`), or \
             `debugtop-cli audit`; end them with `debugtop-cli kill PID --tree`"
        );
    }
    let _ = writeln!(out, "  exit status {}", r.exit_status);
    out
}

fn headline(r: &RunReport) -> String {
    let leaks = r.leaks().count();
    let allowed = r.survivors.len() - leaks;
    let allowed = if allowed > 0 {
        format!(" ({allowed} allowed)")
    } else {
        String::new()
    };
    let cmd = format!("the command {}", r.end);
    match r.verdict {
        RunVerdict::Clean => format!("{cmd}; nothing of it outlived it{allowed}"),
        RunVerdict::Leaked => format!(
            "{cmd}; {leaks} process{} of it outlived it by the {} s grace{allowed}",
            plural(leaks),
            secs(r.grace_ms)
        ),
        RunVerdict::CommandFailed if leaks > 0 => format!(
            "{cmd}; and {leaks} process{} of it outlived it{allowed}",
            plural(leaks)
        ),
        RunVerdict::CommandFailed => format!("{cmd}; nothing of it outlived it{allowed}"),
        RunVerdict::Unchecked => format!("{cmd}; what it left could not be checked"),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "es"
    }
}

fn secs(ms: u64) -> String {
    format!("{:.1}", ms as f64 / 1000.0)
}

fn scope_line(r: &RunReport) -> String {
    let mut s = r.scope.kind.to_string();
    if let Some(p) = &r.scope.path {
        let _ = write!(s, " {}", one_line(p));
    }
    if r.scope.kind == ScopeKind::Subreaper {
        if let Some(why) = &r.scope.why {
            let _ = write!(s, " (no cgroup: {})", one_line(why));
        }
    }
    if r.scope.heard_forks {
        s.push_str("; forks heard from the kernel");
    }
    if let Some(why) = &r.scope.forks_unheard {
        let _ = write!(s, "; forks not heard: {}", one_line(why));
    }
    s
}

/// One survivor: what it is, then who started it, which test, and what was done.
fn survivor_lines(s: &Survivor) -> String {
    let mut out = String::new();
    let what = match (&s.allowed, &s.finding) {
        (Some(a), _) => format!("allowed ({a})"),
        (None, Some(f)) => format!("LEAK {f}"),
        (None, None) => "LEAK".to_owned(),
    };
    let _ = writeln!(
        out,
        "  {what}: {} {} — {}",
        s.what(),
        s.id.pid,
        one_line(&cut(&s.argv.join(" "), 160))
    );
    let cpu = s
        .cpu_percent
        .map_or_else(String::new, |c| format!(", {c:.0} % CPU"));
    let _ = writeln!(
        out,
        "      started {} s into the run, outlived it by {} s, {} MiB{cpu}, {}",
        secs(u64::try_from(s.started_after_ms.max(0)).unwrap_or(0)),
        secs(s.outlived_ms),
        s.rss_bytes / (1024 * 1024),
        s.state.word()
    );
    if let Some(t) = &s.test {
        let _ = writeln!(out, "      test: {}", one_line(&t.to_string()));
    }
    let _ = writeln!(out, "      started by: {}", ancestry_line(s));
    if s.broke_away {
        let _ = writeln!(
            out,
            "      left the run's scope: it was started to break away from the job, and was \
             found by its parent"
        );
    }
    if let Some(c) = &s.container {
        let _ = writeln!(
            out,
            "      in container {}, which the run's `docker run` started (ended through the \
             engine)",
            one_line(c)
        );
    }
    if let Some(o) = &s.ended {
        let _ = writeln!(out, "      ended: {}", one_line(&outcome_words(o)));
    }
    out
}

fn ancestry_line(s: &Survivor) -> String {
    let mut parts: Vec<String> = s
        .ancestry
        .iter()
        .map(|a| {
            let gone = if a.gone { ", gone" } else { "" };
            format!(
                "{} ({}{gone})",
                one_line(&cut(&a.argv.join(" "), 60)),
                a.id.pid
            )
        })
        .collect();
    if !s.ancestry_complete {
        parts.push("re-parented before the run saw it (its parent lived under 50 ms)".to_owned());
    }
    if parts.is_empty() {
        return "the command itself".to_owned();
    }
    parts.join(" ← ")
}

fn outcome_words(o: &crate::model::Outcome) -> String {
    use crate::model::Outcome;
    match o {
        Outcome::Exited => "exited after SIGTERM".into(),
        Outcome::Killed => "needed SIGKILL".into(),
        Outcome::Terminated => "terminated".into(),
        Outcome::ContainerKilled => "its container was killed".into(),
        Outcome::AlreadyGone => "gone before it was signalled".into(),
        Outcome::Refused { why } => format!("refused: {why}"),
        Outcome::Failed { why } => format!("failed: {why}"),
    }
}

fn cut(s: &str, max: usize) -> String {
    crate::redact::cut_at_word(s, max)
}

/// The JUnit XML: a suite `debugtop run`, one case per survivor (a failure for a leak), and
/// one passing case when nothing was left, so the check is visible either way.
pub fn to_junit(r: &RunReport) -> String {
    let leaks = r.leaks().count();
    let cases = r.survivors.len().max(1);
    let failures = leaks + usize::from(r.verdict == RunVerdict::Unchecked);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"debugtop run\" tests=\"{cases}\" failures=\"{failures}\">"
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"debugtop run: {}\" tests=\"{cases}\" failures=\"{failures}\" timestamp=\"{}\">",
        xml(&cut(&r.command.join(" "), 120)),
        r.started_at.format("%Y-%m-%dT%H:%M:%S")
    );
    if r.survivors.is_empty() {
        let _ = writeln!(
            out,
            "    <testcase classname=\"debugtop.run\" name=\"nothing outlived the command\">"
        );
        if r.verdict == RunVerdict::Unchecked {
            let _ = writeln!(
                out,
                "      <failure message=\"could not check\">{}</failure>",
                xml(&r.problems.join("\n"))
            );
        }
        out.push_str("    </testcase>\n");
    }
    for s in &r.survivors {
        out.push_str(&junit_case(s));
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

fn junit_case(s: &Survivor) -> String {
    let class = s
        .test
        .as_ref()
        .map_or_else(|| "debugtop.run".to_owned(), |t| t.name.clone());
    let name = format!("{} {} outlived the command", s.what(), s.id.pid);
    let mut out = format!(
        "    <testcase classname=\"{}\" name=\"{}\">\n",
        xml(&class),
        xml(&name)
    );
    let body = survivor_lines(s);
    match &s.allowed {
        Some(a) => {
            let _ = writeln!(
                out,
                "      <system-out>{}</system-out>",
                xml(&format!("allowed by {a}\n{body}"))
            );
        }
        None => {
            let message = s
                .finding
                .as_ref()
                .map_or_else(|| "leaked process".to_owned(), |f| f.kind.to_string());
            let _ = writeln!(
                out,
                "      <failure message=\"{}\" type=\"leak\">{}</failure>",
                xml(&message),
                xml(&body)
            );
        }
    }
    out.push_str("    </testcase>\n");
    out
}

/// Text made safe for XML content and attributes: the five escapes, and characters XML 1.0
/// cannot hold dropped.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

/// GitHub Actions workflow commands: one `::error` per leak (a `::notice` per allowed
/// survivor), one `::warning` per problem.
pub fn github_annotations(r: &RunReport) -> String {
    let mut out = String::new();
    for s in &r.survivors {
        let level = if s.is_leak() { "error" } else { "notice" };
        let title = match (&s.finding, &s.allowed) {
            (_, Some(_)) => format!("debugtop run: allowed {} {}", s.what(), s.id.pid),
            (Some(f), None) => format!("debugtop run: {} ({})", f.kind, s.id.pid),
            (None, None) => format!("debugtop run: leaked {} {}", s.what(), s.id.pid),
        };
        let _ = writeln!(
            out,
            "::{level} title={}::{}",
            gh_property(&title),
            gh_data(&survivor_lines(s))
        );
    }
    for p in &r.problems {
        let _ = writeln!(
            out,
            "::warning title=debugtop run: could not check::{}",
            gh_data(p)
        );
    }
    out
}

/// A workflow command's message: `%`, CR and LF escaped (so a line of the data cannot start
/// a command of its own).
fn gh_data(s: &str) -> String {
    s.trim_end()
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property: the message's escapes, and `:` and `,`.
fn gh_property(s: &str) -> String {
    gh_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        Ancestor, CommandEnd, LeakPolicy, ProcId, ProcState, RunScope, TestName, TestRunner,
    };

    fn report(survivors: Vec<Survivor>) -> RunReport {
        let leaks = survivors.iter().filter(|s| s.is_leak()).count();
        let (verdict, exit_status) =
            RunReport::judge(CommandEnd::Exited { code: 0 }, leaks, 0, LeakPolicy::Fail);
        RunReport {
            schema: crate::model::RUN_SCHEMA.into(),
            command: vec!["pytest".into(), "-q".into()],
            started_at: chrono::DateTime::UNIX_EPOCH,
            reported_at: chrono::DateTime::UNIX_EPOCH,
            command_ms: 1200,
            end: CommandEnd::Exited { code: 0 },
            forwarded: Vec::new(),
            scope: RunScope {
                heard_forks: false,
                forks_unheard: None,
                kind: ScopeKind::Cgroup,
                path: Some("/sys/fs/cgroup/debugtop-run-1".into()),
                why: None,
            },
            grace_ms: 6000,
            survivors,
            kept: false,
            leaks: LeakPolicy::Fail,
            problems: Vec::new(),
            verdict,
            exit_status,
        }
    }

    fn survivor(argv: &str) -> Survivor {
        Survivor {
            id: ProcId::new(4242, 100),
            role: None,
            finding: None,
            argv: vec![argv.into()],
            state: ProcState::Sleeping,
            ancestry: vec![Ancestor {
                id: ProcId::new(4200, 90),
                argv: vec!["pytest".into()],
                gone: true,
            }],
            ancestry_complete: true,
            started_after_ms: 300,
            outlived_ms: 6100,
            rss_bytes: 3 << 20,
            cpu_percent: Some(0.0),
            test: Some(TestName {
                runner: TestRunner::Pytest,
                name: "t/test_a.py::test_b".into(),
            }),
            allowed: None,
            broke_away: false,
            container: None,
            ended: Some(crate::model::Outcome::Exited),
        }
    }

    #[test]
    fn the_summary_names_the_leak_its_test_and_its_parent() {
        let text = to_text(&report(vec![survivor("sleep 60")]));
        assert!(text.contains("1 process of it outlived it"), "{text}");
        assert!(text.contains("LEAK: process 4242 — sleep 60"), "{text}");
        assert!(
            text.contains("test: t/test_a.py::test_b (pytest)"),
            "{text}"
        );
        assert!(text.contains("started by: pytest (4200, gone)"), "{text}");
        assert!(text.contains("exit status 86"), "{text}");
        assert!(!text.contains("left the run's scope"), "{text}");
        let away = Survivor {
            broke_away: true,
            ..survivor("sleep 60")
        };
        let text = to_text(&report(vec![away]));
        assert!(text.contains("left the run's scope"), "{text}");
        let clean = to_text(&report(Vec::new()));
        assert!(clean.contains("nothing of it outlived it"), "{clean}");
        assert!(clean.contains("exit status 0"), "{clean}");
    }

    #[test]
    fn hostile_text_stays_data_in_junit_and_in_annotations() {
        let r = report(vec![survivor(
            "x</failure><evil a=\"1\"> \u{1b}[31m\n::error::forged",
        )]);
        let xml_text = to_junit(&r);
        assert!(!xml_text.contains("<evil"), "{xml_text}");
        assert!(!xml_text.contains('\u{1b}'), "{xml_text}");
        assert_eq!(xml_text.matches("<failure ").count(), 1, "{xml_text}");
        let gh = github_annotations(&r);
        assert_eq!(gh.lines().count(), 1, "{gh}");
        assert!(
            gh.starts_with("::error title=debugtop run%3A leaked process 4242::"),
            "{gh}"
        );
    }
}
