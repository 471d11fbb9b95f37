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

use debugtop_model::{FindingKind, Snapshot, SourceKind, SourceState, SourceStatus};

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
mod tests {
    use super::*;

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
