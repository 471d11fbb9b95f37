//! A whole document's secrets: every string of a model value, through its serialised form, so
//! that a field added later is covered without anyone remembering to list it.
//!
//! A string is redacted where it stands and the document must still read as the model: an
//! identity that looks like a secret (a session id `sk-…`, a finding id about it) cannot take
//! the redaction mark and still parse, so it keeps its shape through a keyed digest
//! (`redacted-3fa9c2d1e0b4`): the same id gives the same digest everywhere in the document and
//! in every tick of this process, so it still joins what it joined; the key is random per
//! process and never leaves it, so the digest says nothing of the id. If some element still
//! does not read back, it is left out and counted — never passed through unredacted.

use std::hash::BuildHasher;
use std::str::FromStr;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::model::{FindingKind, Snapshot, SourceKind, SourceState, SourceStatus};

use super::argv::redact_argv;
use super::text::redact_text;

/// Redacts a whole snapshot in place — every string it carries, wherever it sits (processes,
/// tree labels, facts, timeline, HTTP and debug sessions, sources, findings, unconfirmed
/// findings, groups and plans, servers, log excerpts, environment): argv arrays as command
/// lines, everything else as free text; `home` is shown as `~`. An element that could not be
/// redacted is left out, and a source line says how many.
pub fn redact_snapshot(s: &mut Snapshot, home: Option<&str>) {
    let dropped = match redact_document(&*s, home) {
        Ok((redacted, dropped)) => {
            *s = redacted;
            dropped
        }
        Err(everything) => {
            // Not even its frame reads back (cannot happen with the model's types): nothing
            // of it leaves.
            *s = empty_like(s);
            everything
        }
    };
    if dropped > 0 {
        tracing::error!("redaction left out {dropped} element(s) it could not redact");
        s.sources.push(SourceStatus::new(
            SourceKind::Sampler,
            None,
            SourceState::Degraded,
            format!(
                "{dropped} element(s) of this snapshot could not be redacted in place and were \
                 left out (never shown unredacted)"
            ),
        ));
    }
    s.redacted = true;
}

/// The snapshot's frame with none of its contents.
fn empty_like(s: &Snapshot) -> Snapshot {
    Snapshot {
        schema: s.schema.clone(),
        taken_at: s.taken_at,
        host: super::REDACTED.to_owned(),
        debugtop: s.debugtop.clone(),
        redacted: true,
        servers: Vec::new(),
        http_sessions: Vec::new(),
        debug_sessions: Vec::new(),
        processes: Vec::new(),
        tree: Vec::new(),
        findings: Vec::new(),
        unconfirmed: Vec::new(),
        groups: Vec::new(),
        timeline: Vec::new(),
        log_excerpts: Vec::new(),
        sources: Vec::new(),
        environment: None,
    }
}

/// Redacts every string of any model value, through its serialised form; `false` (and `x`
/// unchanged) if the redacted form does not read back whole — the caller leaves it out.
pub fn redact_serde<T: Serialize + DeserializeOwned>(x: &mut T, home: Option<&str>) -> bool {
    match redact_document(&*x, home) {
        Ok((r, 0)) => {
            *x = r;
            true
        }
        _ => false,
    }
}

/// The most elements left out of one document before it is given up whole.
const MAX_LEFT_OUT: usize = 64;

/// `x` redacted, and how many elements of its lists had to be left out for it to read back;
/// `Err` (with how many it held) when not even that made it read back.
fn redact_document<T: Serialize + DeserializeOwned>(
    x: &T,
    home: Option<&str>,
) -> Result<(T, usize), usize> {
    let mut v = serde_json::to_value(x).map_err(|_| 1usize)?;
    redact_value(&mut v, false, home);
    let mut dropped = 0;
    loop {
        // The plain parse first: the path of a failure is asked for only when there is one.
        if let Ok(t) = T::deserialize(&v) {
            return Ok((t, dropped));
        }
        match serde_path_to_error::deserialize::<_, T>(&v) {
            Ok(t) => return Ok((t, dropped)),
            Err(e) if dropped < MAX_LEFT_OUT && leave_out(&mut v, e.path()) => dropped += 1,
            Err(_) => return Err(dropped.max(1)),
        }
    }
}

/// Removes the innermost list element on `path` (the element that does not read back); `false`
/// when the path crosses no list.
fn leave_out(v: &mut Value, path: &serde_path_to_error::Path) -> bool {
    use serde_path_to_error::Segment;
    let segments: Vec<&Segment> = path.iter().collect();
    let Some(last_seq) = segments
        .iter()
        .rposition(|s| matches!(s, Segment::Seq { .. }))
    else {
        return false;
    };
    let mut at = &mut *v;
    for s in &segments[..last_seq] {
        let next = match s {
            Segment::Seq { index } => at.get_mut(*index),
            Segment::Map { key } => at.get_mut(key.as_str()),
            Segment::Enum { .. } | Segment::Unknown => Some(at),
        };
        let Some(next) = next else { return false };
        at = next;
    }
    match (at, segments[last_seq]) {
        (Value::Array(items), Segment::Seq { index }) if *index < items.len() => {
            items.remove(*index);
            true
        }
        _ => false,
    }
}

/// Every string under `v`; `argv` says the strings are one command line.
fn redact_value(v: &mut Value, argv: bool, home: Option<&str>) {
    match v {
        Value::String(x) => {
            if let Some(r) = redact_string(x, home) {
                *x = r;
            }
        }
        Value::Array(items) if argv && items.iter().all(Value::is_string) => {
            let words: Vec<String> = items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect();
            *items = redact_argv(&words)
                .into_iter()
                .map(|a| Value::String(redact_text(&a, home)))
                .collect();
        }
        Value::Array(items) => items.iter_mut().for_each(|i| redact_value(i, false, home)),
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if k != "schema" {
                    redact_value(x, k == "argv", home);
                }
            }
        }
        _ => {}
    }
}

/// One string redacted (`None`: unchanged). An identity keeps its shape (see the module doc).
fn redact_string(x: &str, home: Option<&str>) -> Option<String> {
    let r = redact_text(x, home);
    if r == x {
        return None;
    }
    Some(identity(x).unwrap_or(r))
}

/// `x` with its secret-looking identity replaced by its digest, when `x` is an identity: a
/// token (`sk-0123…`, a session or container id), or a token after a kind's name
/// (`stuck-session:sk-0123…`, a finding id; `session:…`, a tree node's id).
fn identity(x: &str) -> Option<String> {
    if is_token(x) {
        return Some(digest(x));
    }
    let (kind, subject) = x.split_once(':')?;
    let named = FindingKind::from_str(kind).is_ok()
        || (!kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
    (named && is_token(subject)).then(|| format!("{kind}:{}", digest(subject)))
}

/// 1–200 of `[A-Za-z0-9._-]`: what an id is made of.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 200
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `redacted-` and 12 hex digits of `id`'s hash under this process's random key.
pub fn digest(id: &str) -> String {
    static KEY: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    let h = KEY
        .get_or_init(std::collections::hash_map::RandomState::new)
        .hash_one(id);
    format!("redacted-{:012x}", h >> 16)
}

#[cfg(test)]
mod prop_tests {
    //! Secrets planted in every free-text string of generated snapshots, in every shape the
    //! review found; none may survive redaction into the JSON or the Markdown export.
    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;
    use crate::testing::{host_snapshot, sample_snapshot};

    /// Paths (JSON pointers) of the string leaves the model reads as free text: replacing one
    /// with arbitrary words still deserialises (enums and ids do not).
    fn free_text_leaves(v: &Value) -> Vec<String> {
        fn walk(v: &Value, at: String, out: &mut Vec<String>) {
            match v {
                Value::String(_) => out.push(at),
                Value::Array(a) => a
                    .iter()
                    .enumerate()
                    .for_each(|(i, x)| walk(x, format!("{at}/{i}"), out)),
                Value::Object(m) => m
                    .iter()
                    .for_each(|(k, x)| walk(x, format!("{at}/{k}"), out)),
                _ => {}
            }
        }
        let mut all = Vec::new();
        walk(v, String::new(), &mut all);
        all.into_iter()
            .filter(|p| p != "/schema")
            .filter(|p| {
                let mut w = v.clone();
                if let Some(x) = w.pointer_mut(p) {
                    *x = Value::String("free words".into());
                }
                serde_json::from_value::<Snapshot>(w).is_ok()
            })
            .collect()
    }

    const SHAPES: [&str; 32] = [
        "--password SECRET",
        "--token=SECRET",
        r#"{"token":"SECRET"}"#,
        r#""password": "SECRET""#,
        "Authorization: Basic SECRET",
        "Bearer SECRET",
        "https://SECRET@host/x",
        "https://user:SECRET@host/x",
        "see http://h/cb?access_token=SECRET&x=1",
        r#"--pass "a SECRET b""#,
        "-pSECRET",
        "API_KEY=SECRET",
        "token: SECRET",
        "--adapter-access-token SECRET",
        "curl -u alice:SECRET x",
        "--passphrase SECRET",
        "--bearer SECRET",
        "-PSECRET",
        "apikey sk-SECRET",
        "root:$6$saltsalt$SECRET:19000:0:99999:7:::",
        "$y$j9T$salt$SECRET",
        "--password 'a SECRET'",
        "--password \"a SECRET\"",
        // The review of stop 40.
        "-ualice:SECRET",
        "--requirepass SECRET",
        "--accessKey SECRET",
        "--privateKey SECRET",
        "-H X-Auth-Token:SECRET",
        r#"{\"token\":\"SECRET\"}"#,
        "password:SECRET",
        "{'password': 'SECRET'}",
        "--password -SECRET",
    ];

    /// The planted text and the secret as it stands in it: `SHAPES`, then keys known by their
    /// shape alone (an AWS access key id, an AWS secret key), made from the secret.
    fn plant(shape: usize, secret: &str) -> (String, String) {
        match shape.checked_sub(SHAPES.len()) {
            None => (SHAPES[shape].replace("SECRET", secret), secret.to_owned()),
            Some(0) => {
                let id: String = secret
                    .to_ascii_uppercase()
                    .chars()
                    .chain(std::iter::repeat('7'))
                    .take(16)
                    .collect();
                (format!("key AKIA{id}"), id)
            }
            _ => {
                let key: String = format!("{secret}/a9B+").chars().cycle().take(40).collect();
                (format!("aws_secret {key}"), key)
            }
        }
    }

    /// Paths of the string leaves that are identities (a finding id, a session id): replacing
    /// one with a secret-shaped token of the same form (`kind:sk-…`, `sk-…`) still reads.
    fn identity_leaves(v: &Value, free: &[String]) -> Vec<(String, String)> {
        let mut all = Vec::new();
        fn walk(v: &Value, at: String, out: &mut Vec<(String, String)>) {
            match v {
                Value::String(s) => out.push((at, s.clone())),
                Value::Array(a) => a
                    .iter()
                    .enumerate()
                    .for_each(|(i, x)| walk(x, format!("{at}/{i}"), out)),
                Value::Object(m) => m
                    .iter()
                    .for_each(|(k, x)| walk(x, format!("{at}/{k}"), out)),
                _ => {}
            }
        }
        walk(v, String::new(), &mut all);
        all.into_iter()
            .filter(|(p, _)| p != "/schema" && !free.contains(p))
            .filter_map(|(p, s)| {
                let planted = match s.split_once(':') {
                    Some((kind, _)) => format!("{kind}:sk-PLANTED"),
                    None => "sk-PLANTED".to_owned(),
                };
                let mut w = v.clone();
                *w.pointer_mut(&p)? = Value::String(planted.clone());
                serde_json::from_value::<Snapshot>(w)
                    .is_ok()
                    .then_some((p, planted))
            })
            .collect()
    }

    /// `base` with every section that carries text filled (an unconfirmed finding too).
    fn every_section(mut base: Snapshot) -> Snapshot {
        if base.unconfirmed.is_empty() {
            base.unconfirmed = base.findings.clone();
        }
        base.redacted = false;
        base
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6))]
        /// Every shape, through every free-text string and every identity of both snapshots,
        /// every run (the secret is what varies): none survives into the JSON or the Markdown,
        /// and nothing is dropped for it.
        #[test]
        fn no_planted_secret_survives_either_export(raw in "Zq[A-Za-z0-9]{10,18}") {
            for base in [sample_snapshot(), host_snapshot()].map(every_section) {
                let clean = serde_json::to_value(&base).unwrap();
                let leaves = free_text_leaves(&clean);
                prop_assert!(leaves.len() > 50, "only {} free-text leaves", leaves.len());
                let ids = identity_leaves(&clean, &leaves);
                prop_assert!(ids.len() >= 3, "only {} identity leaves", ids.len());
                for section in ["/tree", "/unconfirmed", "/groups", "/servers", "/findings", "/timeline", "/processes", "/sources"] {
                    prop_assert!(
                        leaves.iter().chain(ids.iter().map(|(p, _)| p)).any(|p| p.starts_with(section)),
                        "no string of {section} is planted"
                    );
                }
                for shape in 0..SHAPES.len() + 2 {
                    let (planted, secret) = plant(shape, &raw);
                    let mut v = clean.clone();
                    for p in &leaves {
                        if let Some(Value::String(x)) = v.pointer_mut(p) {
                            *x = format!("{x} {planted}");
                        }
                    }
                    for (p, id) in &ids {
                        if let Some(x) = v.pointer_mut(p) {
                            *x = Value::String(id.replace("PLANTED", &raw));
                        }
                    }
                    let mut s: Snapshot = serde_json::from_value(v).unwrap();
                    let counts = (s.processes.len(), s.findings.len(), s.unconfirmed.len(), s.groups.len(), s.sources.len());
                    redact_snapshot(&mut s, Some("/home/dev"));
                    let json = serde_json::to_string(&s).unwrap();
                    let md = crate::report::markdown::render(&s);
                    for secret in [&secret, &raw] {
                        prop_assert!(!json.contains(secret), "{planted:?} survived in the JSON");
                        prop_assert!(!md.contains(secret), "{planted:?} survived in the Markdown");
                    }
                    prop_assert_eq!(
                        counts,
                        (s.processes.len(), s.findings.len(), s.unconfirmed.len(), s.groups.len(), s.sources.len()),
                        "something was dropped"
                    );
                }
            }
        }
    }

    #[test]
    fn regression_a_secret_shaped_session_id_turned_redaction_off_for_whole_sections() {
        // A session named `sk-…` (a key's shape) gave findings the id `stuck-session:sk-…`,
        // whose redaction no longer parsed; the fallback then left `unconfirmed`, `groups` and
        // `servers` unredacted and emptied `sources`.
        let mut s = every_section(sample_snapshot());
        let sid = "sk-0123456789abcdef";
        let f = std::sync::Arc::make_mut(&mut s.findings[0]);
        f.id = format!("stuck-session:{sid}").parse().unwrap();
        f.session_id = Some(sid.to_owned());
        f.evidence
            .push("its command line: x --token Zqtok1 --api-key=Zqtok2".into());
        let mut u = (*s.findings[0]).clone();
        u.id = format!("session-without-worker:{sid}").parse().unwrap();
        s.unconfirmed = vec![std::sync::Arc::new(u)];
        s.groups = crate::model::group_findings(&s.findings);
        s.servers[0].log_file = Some("/srv/x --password Zqtok3".into());
        let sources = s.sources.len();
        redact_snapshot(&mut s, None);
        let json = serde_json::to_string(&s).unwrap();
        for leaked in ["Zqtok1", "Zqtok2", "Zqtok3", sid] {
            assert!(!json.contains(leaked), "{leaked} left in {json}");
        }
        assert_eq!(s.sources.len(), sources, "sources kept, nothing dropped");
        assert_eq!(s.unconfirmed.len(), 1);
        // The id keeps its kind and matches itself wherever it is named.
        let id = s.findings[0].id.to_string();
        assert!(id.starts_with("stuck-session:redacted-"), "{id}");
        assert_eq!(s.groups[0].findings[0].to_string(), id);
        assert_eq!(
            s.findings[0].session_id.as_deref(),
            id.strip_prefix("stuck-session:")
        );
        // Near miss: an ordinary session id is kept.
        let mut plain = every_section(sample_snapshot());
        let kept = plain.findings[0].id.clone();
        redact_snapshot(&mut plain, None);
        assert_eq!(plain.findings[0].id, kept);
    }

    #[test]
    fn an_element_that_cannot_be_redacted_is_left_out_never_passed_through() {
        // A list element that does not read back is removed by the path serde names.
        let mut v = serde_json::json!({"a": [{"x": 1}, {"x": "bad Zqsecret"}]});
        let path = {
            #[derive(serde::Deserialize)]
            #[allow(dead_code)]
            struct Doc {
                a: Vec<Item>,
            }
            #[derive(serde::Deserialize)]
            #[allow(dead_code)]
            struct Item {
                x: u32,
            }
            serde_path_to_error::deserialize::<_, Doc>(&v)
                .err()
                .map(|e| e.path().clone())
        };
        assert!(leave_out(&mut v, &path.unwrap()));
        assert_eq!(v, serde_json::json!({"a": [{"x": 1}]}));
    }
}
