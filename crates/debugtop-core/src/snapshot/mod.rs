//! Snapshots: one reconciled view of the machine as a versioned document
//! (`"schema": "debugtop.snapshot/1"`). It is what `debugtop-cli snapshot` prints, what the app
//! exports and reopens offline, and what an incident report carries: everything a maintainer
//! needs to understand a leak without the machine. Redacted by default; written atomically;
//! imported back with errors that say what is wrong and where.

#[doc(hidden)]
pub mod fixture;
pub mod markdown;
pub mod redact;

use std::io::Write;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::collect::{ProcessTable, ScanStats};
use crate::model::{Proc, ServerInfo, SourceState, SourceStatus};
use crate::reconcile::World;
pub use crate::reconcile::{DebugSession, Fact, FactSource, HttpSession, NodeKind, TreeNode};
pub use crate::timeline::TimelineEvent;
pub use crate::verdict::Finding;

/// The schema tag of this build's snapshots.
pub const SCHEMA: &str = "debugtop.snapshot/1";
/// The major version this build reads and writes.
pub const SCHEMA_MAJOR: u32 = 1;
/// Lines of context kept on each side of a cited log line.
pub const EXCERPT_CONTEXT: u64 = 3;
/// The most excerpts one snapshot carries.
pub const MAX_EXCERPTS: usize = 32;

/// Lines of a log around a finding's evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct LogExcerpt {
    /// The finding it supports.
    pub finding_id: Option<String>,
    /// The file.
    pub file: String,
    /// Number of the first line.
    #[ts(type = "number")]
    pub first_line: u64,
    /// The cited line's number.
    #[ts(type = "number")]
    pub cited_line: u64,
    /// The lines (each cut at 500 characters; redacted unless turned off).
    pub lines: Vec<String>,
}

/// Versions and the machine, for a bug report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Environment {
    /// debugtop's version.
    pub debugtop: String,
    /// Each server's package version (from its `package.json`), by pid.
    pub servers: Vec<ServerVersion>,
    /// `node --version` of the first server's interpreter.
    pub node: Option<String>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// Operating system.
    pub os: String,
}

/// A server's package and version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct ServerVersion {
    /// The server pid.
    pub pid: u32,
    /// Package name.
    pub package: Option<String>,
    /// Package version.
    pub version: Option<String>,
}

/// The snapshot document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Snapshot {
    /// `debugtop.snapshot/<major>`.
    pub schema: String,
    /// When it was taken.
    pub taken_at: DateTime<Utc>,
    /// Host name.
    pub host: String,
    /// debugtop's version.
    pub debugtop: String,
    /// Whether secrets were redacted.
    #[serde(default = "yes")]
    pub redacted: bool,
    /// Servers found.
    pub servers: Vec<ServerInfo>,
    /// HTTP sessions (from /health and logs).
    pub http_sessions: Vec<HttpSession>,
    /// Debug sessions.
    pub debug_sessions: Vec<DebugSession>,
    /// Every server-related process (and tombs of those that just exited).
    pub processes: Vec<Proc>,
    /// The reconciled tree.
    pub tree: Vec<TreeNode>,
    /// Findings.
    pub findings: Vec<Finding>,
    /// Timeline (the last minutes).
    pub timeline: Vec<TimelineEvent>,
    /// Log lines around each finding's evidence (filled on export).
    pub log_excerpts: Vec<LogExcerpt>,
    /// Each source's health.
    pub sources: Vec<SourceStatus>,
    /// Versions and machine (filled on export).
    #[serde(default)]
    pub environment: Option<Environment>,
}

fn yes() -> bool {
    true
}

impl Snapshot {
    /// A snapshot of a process table alone (no logs, no health). Argv redacted unless `redact`
    /// is false.
    pub fn from_table(table: &ProcessTable, redact: bool) -> Self {
        let world = crate::reconcile::Reconciler::default().build_offline(table);
        Self::from_world(&world, Vec::new(), Vec::new(), redact)
    }

    /// A snapshot of a reconciled world.
    pub fn from_world(
        world: &World,
        findings: Vec<Finding>,
        timeline: Vec<TimelineEvent>,
        redact: bool,
    ) -> Self {
        let mut sources = vec![process_table_status(&world.table.stats)];
        sources.extend(world.sources.iter().cloned());
        let mut s = Self {
            schema: SCHEMA.to_owned(),
            taken_at: world.table.taken_at,
            host: hostname::get()
                .map(|h| h.to_string_lossy().into_owned())
                .unwrap_or_default(),
            debugtop: env!("CARGO_PKG_VERSION").to_owned(),
            redacted: false,
            servers: world.table.servers.clone(),
            http_sessions: world.http_sessions.clone(),
            debug_sessions: world.debug_sessions.clone(),
            processes: world.table.procs.clone(),
            tree: world.tree.clone(),
            findings,
            timeline,
            log_excerpts: Vec::new(),
            sources,
            environment: None,
        };
        if redact {
            redact::redact_snapshot(&mut s);
        }
        s
    }

    /// Adds what only an export needs (reads files, runs `node --version` once): log excerpts
    /// around every cited log line, and the environment. Redacts what it adds when the
    /// snapshot is redacted.
    pub fn enrich_for_export(&mut self) {
        self.log_excerpts = excerpts(&self.findings, &self.debug_sessions);
        self.environment = Some(environment(&self.servers, &self.processes));
        if self.redacted {
            let home = redact::home_dir();
            for x in &mut self.log_excerpts {
                x.file = redact::redact_text(&x.file, home.as_deref());
                for l in &mut x.lines {
                    *l = redact::redact_text(l, home.as_deref());
                }
            }
        }
    }

    /// Serialises to pretty JSON.
    pub fn to_json(&self) -> Result<String, crate::Error> {
        let mut s =
            serde_json::to_string_pretty(self).map_err(|source| crate::Error::Serialize {
                what: "the snapshot",
                source,
            })?;
        s.push('\n');
        Ok(s)
    }
}

/// Why a snapshot file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// Not JSON, or cut short.
    #[error("{what} at line {line}, column {column}: {detail}")]
    Malformed {
        /// `the snapshot is truncated` or `the snapshot is not valid JSON`.
        what: &'static str,
        /// Line.
        line: usize,
        /// Column.
        column: usize,
        /// The parser's message.
        detail: String,
    },
    /// No schema tag: not a debugtop snapshot.
    #[error("not a debugtop snapshot: no \"schema\": \"debugtop.snapshot/…\" field at the top")]
    NotASnapshot,
    /// A newer major version.
    #[error("this snapshot is {found}, written by a newer debugtop; this build reads debugtop.snapshot/{SCHEMA_MAJOR} — update debugtop to open it")]
    NewerMajor {
        /// The schema tag found.
        found: String,
    },
    /// The right schema, but a field has the wrong shape.
    #[error(
        "the snapshot does not match debugtop.snapshot/1 at line {line}, column {column}: {detail}"
    )]
    WrongShape {
        /// Line.
        line: usize,
        /// Column.
        column: usize,
        /// What is wrong (names the field).
        detail: String,
    },
}

/// Reads a snapshot document back into the model.
pub fn import(text: &str) -> Result<Snapshot, ImportError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| ImportError::Malformed {
            what: if e.is_eof() {
                "the snapshot is truncated"
            } else {
                "the snapshot is not valid JSON"
            },
            line: e.line(),
            column: e.column(),
            detail: e.to_string(),
        })?;
    let tag = value
        .get("schema")
        .and_then(|s| s.as_str())
        .ok_or(ImportError::NotASnapshot)?;
    let major = tag
        .strip_prefix("debugtop.snapshot/")
        .and_then(|m| m.split('.').next()?.parse::<u32>().ok())
        .ok_or(ImportError::NotASnapshot)?;
    if major > SCHEMA_MAJOR {
        return Err(ImportError::NewerMajor {
            found: tag.to_owned(),
        });
    }
    serde_json::from_str(text).map_err(|e| ImportError::WrongShape {
        line: e.line(),
        column: e.column(),
        detail: e.to_string(),
    })
}

/// Reads and imports a snapshot file.
pub fn import_file(path: &Path) -> Result<Snapshot, ImportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ImportError::Io {
        path: path.display().to_string(),
        source,
    })?;
    import(&text)
}

/// Writes `contents` to `path` atomically: a temporary file in the same folder, then a rename,
/// so a reader never sees half a snapshot.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "snapshot".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The JSON Schema of the snapshot document (checked in as `schema/debugtop.snapshot-1.schema.json`).
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Snapshot)).unwrap_or_default()
}

fn excerpts(findings: &[Finding], sessions: &[DebugSession]) -> Vec<LogExcerpt> {
    let mut wanted: Vec<(Option<String>, String, u64)> = Vec::new();
    for f in findings {
        let facts = sessions
            .iter()
            .filter(|d| f.session_id.as_deref() == Some(d.id.as_str()))
            .flat_map(|d| d.ended_by.iter().chain(d.facts.iter().rev().take(3)));
        for fact in facts {
            if let FactSource::Log { file, line } = &fact.source {
                if !wanted.iter().any(|(_, fl, ln)| fl == file && ln == line) {
                    wanted.push((Some(f.id.clone()), file.clone(), *line));
                }
            }
        }
    }
    wanted.truncate(MAX_EXCERPTS);
    wanted
        .into_iter()
        .filter_map(|(finding_id, file, line)| {
            let first = line.saturating_sub(EXCERPT_CONTEXT).max(1);
            let lines = read_lines(Path::new(&file), first, line + EXCERPT_CONTEXT)?;
            Some(LogExcerpt {
                finding_id,
                file,
                first_line: first,
                cited_line: line,
                lines,
            })
        })
        .collect()
}

/// Lines `from..=to` (1-based) of a file, reading at most 8 MiB, each cut at 500 characters.
fn read_lines(path: &Path, from: u64, to: u64) -> Option<Vec<String>> {
    use std::io::{BufRead, BufReader, Read};
    let f = std::fs::File::open(path).ok()?;
    let mut out = Vec::new();
    for (i, line) in BufReader::new(f.take(8 * 1024 * 1024))
        .split(b'\n')
        .enumerate()
    {
        let n = i as u64 + 1;
        if n > to {
            break;
        }
        let line = line.ok()?;
        if n >= from {
            let s = String::from_utf8_lossy(&line);
            out.push(s.chars().take(500).collect());
        }
    }
    (!out.is_empty()).then_some(out)
}

fn environment(servers: &[ServerInfo], procs: &[Proc]) -> Environment {
    let versions = servers
        .iter()
        .map(|s| {
            let pkg = s
                .pkg_dir
                .as_deref()
                .and_then(|d| std::fs::read_to_string(Path::new(d).join("package.json")).ok());
            let v: Option<serde_json::Value> = pkg.and_then(|t| serde_json::from_str(&t).ok());
            let field = |k: &str| {
                v.as_ref()
                    .and_then(|v| v.get(k)?.as_str().map(|s| s.chars().take(64).collect()))
            };
            ServerVersion {
                pid: s.pid,
                package: field("name"),
                version: field("version"),
            }
        })
        .collect();
    let node_bin = servers
        .first()
        .and_then(|s| procs.iter().find(|p| p.pid == s.pid))
        .and_then(|p| p.argv.first().cloned());
    let node = node_bin.and_then(|bin| {
        let out = std::process::Command::new(bin)
            .arg("--version")
            .stdin(std::process::Stdio::null())
            .output()
            .ok()?;
        out.status.success().then(|| {
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .chars()
                .take(32)
                .collect()
        })
    });
    Environment {
        debugtop: env!("CARGO_PKG_VERSION").to_owned(),
        servers: versions,
        node,
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|s| s.trim().to_owned()),
        os: std::env::consts::OS.to_owned(),
    }
}

fn process_table_status(stats: &ScanStats) -> SourceStatus {
    let degraded = stats.denied > 0;
    SourceStatus {
        source: "process-table".to_owned(),
        server_pid: None,
        state: if degraded {
            SourceState::Degraded
        } else {
            SourceState::Ok
        },
        detail: format!(
            "{} processes read in {} ms; {} vanished mid-read, {} not readable (other users)",
            stats.processes,
            stats.duration_us / 1000,
            stats.vanished,
            stats.denied
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::sample_snapshot;
    use super::*;

    #[test]
    fn round_trip_model_json_import_equal() {
        let s = sample_snapshot();
        let json = s.to_json().unwrap();
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
        let now = sample_snapshot().to_json().unwrap();
        if std::env::var_os("DEBUGTOP_WRITE_SCHEMA").is_some() {
            std::fs::write(&path, &now).unwrap();
        }
        assert!(std::fs::read_to_string(&path).unwrap_or_default() == now, "ui/tests/fixtures/sample-snapshot.json is stale: run `DEBUGTOP_WRITE_SCHEMA=1 cargo test -p debugtop-core fixture`");
    }

    #[test]
    fn import_errors_say_what_and_where() {
        let json = sample_snapshot().to_json().unwrap();
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
            e.contains("debugtop.snapshot/2, written by a newer debugtop"),
            "{e}"
        );
        assert!(matches!(
            import("{\"hello\": 1}"),
            Err(ImportError::NotASnapshot)
        ));
        let wrong = json.replacen("\"host\": \"devbox\"", "\"host\": 42", 1);
        let e = import(&wrong).unwrap_err().to_string();
        assert!(
            e.contains("does not match debugtop.snapshot/1") && e.contains("line"),
            "{e}"
        );
        let e = import_file(Path::new("/nonexistent/s.json"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("cannot read /nonexistent/s.json"), "{e}");
    }

    #[test]
    fn atomic_write_replaces_whole_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["s.json"], "no temporary file left behind");
        assert!(write_atomic(Path::new("/nonexistent/dir/s.json"), b"x").is_err());
    }

    #[test]
    fn redacted_snapshot_hides_tokens_and_home() {
        let mut s = sample_snapshot();
        s.redacted = false;
        s.processes[0].argv = vec![
            "python".into(),
            "--adapter-access-token".into(),
            "s3cr3t".into(),
            "/home/dev/app.py".into(),
        ];
        redact::redact_snapshot_with(&mut s, Some("/home/dev"));
        let j = serde_json::to_string(&s.processes[0]).unwrap();
        assert!(!j.contains("s3cr3t") && j.contains("~/app.py"), "{j}");
        assert!(s.redacted);
    }
}
