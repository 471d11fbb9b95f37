//! A session's DAP trace (`dap-trace-<session>.ndjson`, beside its worker's log): one JSON line
//! per DAP message, `{"ts", "direction": "out"|"in", "payload": {seq, type, command,
//! request_seq, …}}`. Folded line by line into the requests still waiting for a response —
//! the one fact that tells "the adapter never answered `initialize`" from "the adapter is
//! slow". Untrusted input like every log: a line may be cut, huge or not JSON; a huge line
//! (a response with a large body) is read from its head, so its answer is never lost.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::model::{Asker, PendingRequest, TraceState};

/// The most requests remembered as waiting (the oldest go first past it).
const MAX_PENDING: usize = 256;
/// How much of an oversized line is kept to read its header from.
pub const HEAD: usize = 4096;

/// What one trace line says, as far as waiting requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Header {
    at: Option<DateTime<Utc>>,
    out: bool,
    kind: MessageKind,
    seq: Option<u64>,
    request_seq: Option<u64>,
    command: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MessageKind {
    Request,
    Response,
    Event,
}

/// The folded trace of one session.
#[derive(Debug, Default, Clone)]
pub struct TraceReader {
    /// Waiting requests by (who asked, seq).
    pending: BTreeMap<(bool, u64), PendingRequest>,
    last_at: Option<DateTime<Utc>>,
    messages: u64,
}

impl TraceReader {
    /// Folds one complete line in.
    pub fn line(&mut self, line: &str) {
        if let Some(h) = serde_json::from_str::<Value>(line)
            .ok()
            .as_ref()
            .and_then(header)
        {
            self.fold(h);
        }
    }

    /// Folds in the head of a line too long to read whole.
    pub fn head(&mut self, head: &[u8]) {
        let text = String::from_utf8_lossy(head);
        if let Some(h) = scan_header(&text) {
            self.fold(h);
        }
    }

    fn fold(&mut self, h: Header) {
        self.messages += 1;
        if h.at.is_some() {
            self.last_at = h.at;
        }
        match (h.kind, h.seq, h.request_seq) {
            (MessageKind::Request, Some(seq), _) => {
                let asker = if h.out { Asker::Worker } else { Asker::Adapter };
                let Some(sent_at) = h.at else { return };
                self.pending.insert(
                    (h.out, seq),
                    PendingRequest {
                        command: h.command.unwrap_or_default(),
                        seq,
                        sent_at,
                        asker,
                    },
                );
                while self.pending.len() > MAX_PENDING {
                    let oldest = self
                        .pending
                        .iter()
                        .min_by_key(|(_, r)| r.sent_at)
                        .map(|(k, _)| *k);
                    oldest.map(|k| self.pending.remove(&k));
                }
            }
            // A response travels the other way from its request.
            (MessageKind::Response, _, Some(rs)) => {
                self.pending.remove(&(!h.out, rs));
            }
            _ => {}
        }
    }

    /// The state now, for `file`.
    pub fn state(&self, file: &str) -> TraceState {
        let mut pending: Vec<PendingRequest> = self.pending.values().cloned().collect();
        pending.sort_by_key(|r| (r.sent_at, r.seq));
        TraceState {
            file: file.to_owned(),
            pending,
            last_at: self.last_at,
            messages: self.messages,
        }
    }
}

fn header(v: &Value) -> Option<Header> {
    let p = v.get("payload")?;
    let kind = match p.get("type")?.as_str()? {
        "request" => MessageKind::Request,
        "response" => MessageKind::Response,
        "event" => MessageKind::Event,
        _ => return None,
    };
    Some(Header {
        at: v
            .get("ts")
            .and_then(Value::as_str)
            .and_then(|t| t.parse().ok()),
        out: match v.get("direction")?.as_str()? {
            "out" => true,
            "in" => false,
            _ => return None,
        },
        kind,
        seq: p.get("seq").and_then(Value::as_u64),
        request_seq: p.get("request_seq").and_then(Value::as_u64),
        command: p
            .get("command")
            .and_then(Value::as_str)
            .map(|c| crate::redact::bounded(c, 64)),
    })
}

/// The header of a cut line, by its first fields: the trace writes `ts` and `direction` before
/// the payload, and a payload's `seq`, `type`, `request_seq` and `command` before its
/// arguments or body.
fn scan_header(text: &str) -> Option<Header> {
    let payload = text.find("\"payload\"")?;
    let (outer, inner) = text.split_at(payload);
    let kind = match string_field(inner, "type")?.as_str() {
        "request" => MessageKind::Request,
        "response" => MessageKind::Response,
        "event" => MessageKind::Event,
        _ => return None,
    };
    Some(Header {
        at: string_field(outer, "ts").and_then(|t| t.parse().ok()),
        out: match string_field(outer, "direction")?.as_str() {
            "out" => true,
            "in" => false,
            _ => return None,
        },
        kind,
        seq: number_field(inner, "seq"),
        request_seq: number_field(inner, "request_seq"),
        command: string_field(inner, "command"),
    })
}

fn after_key<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let k = format!("\"{key}\"");
    let at = text.find(&k)? + k.len();
    let rest = text[at..].trim_start().strip_prefix(':')?;
    Some(rest.trim_start())
}

fn string_field(text: &str, key: &str) -> Option<String> {
    let rest = after_key(text, key)?.strip_prefix('"')?;
    let end = rest.find('"')?;
    Some(crate::redact::bounded(&rest[..end], 64))
}

fn number_field(text: &str, key: &str) -> Option<u64> {
    let rest = after_key(text, key)?;
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real 0.24.2 trace: a mock session started with `stopOnEntry`, recorded from the real
    /// server by `tests/tests/stuck.rs` (`DEBUGTOP_RECORD=1`).
    const MOCK: &str = include_str!("testdata/dap-trace-mock.ndjson");
    /// A real 0.24.2 trace of an adapter that accepted the connection and never answered.
    const STALLED: &str = include_str!("testdata/dap-trace-stalled.ndjson");

    fn read(text: &str) -> TraceState {
        let mut r = TraceReader::default();
        text.lines().for_each(|l| r.line(l));
        r.state("t")
    }

    #[test]
    fn a_real_mock_start_leaves_nothing_waiting() {
        let s = read(MOCK);
        assert!(s.messages >= 8, "{s:?}");
        assert!(s.pending.is_empty(), "{:?}", s.pending);
        assert!(s.last_at.is_some());
    }

    #[test]
    fn a_real_js_debug_session_paused_on_entry_leaves_nothing_waiting() {
        let s = read(include_str!("testdata/dap-trace-js.ndjson"));
        assert!(s.messages > 300, "{}", s.messages);
        assert!(s.pending.is_empty(), "{:?}", s.pending);
    }

    #[test]
    fn a_real_stalled_initialize_is_waiting() {
        let s = read(STALLED);
        assert_eq!(s.pending.len(), 1, "{s:?}");
        assert_eq!(s.pending[0].command, "initialize");
        assert_eq!(s.pending[0].seq, 1);
        assert_eq!(s.pending[0].asker, Asker::Worker);
    }

    #[test]
    fn truncated_and_interleaved_lines_are_skipped_and_a_cut_response_still_answers() {
        let mut lines: Vec<&str> = MOCK.lines().collect();
        // The answer to `initialize` (the second line), read only from its head.
        let answer = lines.remove(1);
        let mut r = TraceReader::default();
        r.line(lines[0]);
        r.line(&answer[..answer.len() / 2]);
        r.line("{\"ts\":\"x\",\"dir");
        assert_eq!(r.state("t").pending.len(), 1);
        r.head(&answer.as_bytes()[..answer.len().min(HEAD) / 2 + 60]);
        assert!(r.state("t").pending.is_empty(), "{:?}", r.state("t"));
        for l in &lines[1..] {
            r.line(l);
        }
        assert!(r.state("t").pending.is_empty());
    }

    #[test]
    fn a_reverse_request_waits_for_the_worker() {
        let mut r = TraceReader::default();
        r.line(r#"{"ts":"2026-12-01T10:00:00.000Z","direction":"in","payload":{"seq":7,"type":"request","command":"runInTerminal","arguments":{}}}"#);
        let s = r.state("t");
        assert_eq!(s.pending[0].asker, Asker::Adapter);
        r.line(r#"{"ts":"2026-12-01T10:00:01.000Z","direction":"out","payload":{"seq":9,"type":"response","request_seq":7,"command":"runInTerminal","success":true}}"#);
        assert!(r.state("t").pending.is_empty());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in ".{0,300}") {
            let mut r = TraceReader::default();
            r.line(&s);
            r.head(s.as_bytes());
        }
    }
}
