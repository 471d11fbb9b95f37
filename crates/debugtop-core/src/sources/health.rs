//! `GET /health` of an HTTP-mode server: which HTTP sessions it holds (and, on newer servers,
//! which debug sessions each holds).
//!
//! A stopped server accepts the connection and never answers, a broken one may answer anything:
//! every outcome is a typed, worded [`HealthError`], bounded in time (default 1.5 s) and size
//! (1 MiB), and the caller keeps polling.

use std::time::Duration;

use serde_json::Value;

use crate::model::{session_id, Health, HealthError, HttpSessionDetail, Listening};

/// Default request timeout (connect + headers + body).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(1500);
/// The largest body accepted.
pub const MAX_BODY: usize = 1024 * 1024;

/// A reusable health client.
#[derive(Debug, Clone)]
pub struct HealthClient {
    http: reqwest::Client,
    timeout: Duration,
}

impl HealthClient {
    /// A client with the given timeout.
    pub fn new(timeout: Duration) -> Self {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .no_proxy()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap_or_default();
        Self { http, timeout }
    }

    /// `GET <base>/health` (`base` like `http://127.0.0.1:3001`).
    pub async fn check(&self, base: &str) -> Result<Health, HealthError> {
        let url = format!("{}/health", base.trim_end_matches('/'));
        let fail = |e: reqwest::Error| classify_error(&url, self.timeout, &e);
        // The server only accepts loopback Host names; name it `localhost` whatever the URL says.
        let host = reqwest::Url::parse(&url)
            .ok()
            .map(|u| match u.port() {
                Some(p) => format!("localhost:{p}"),
                None => "localhost".to_owned(),
            })
            .unwrap_or_else(|| "localhost".to_owned());
        let mut resp = self
            .http
            .get(&url)
            .header("host", host)
            .send()
            .await
            .map_err(fail)?;
        let status = resp.status().as_u16();
        if status != 200 {
            return Err(HealthError::Status { url, status });
        }
        if resp.content_length().is_some_and(|n| n > MAX_BODY as u64) {
            return Err(HealthError::TooLarge {
                url,
                limit: MAX_BODY as u32,
            });
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(fail)? {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(HealthError::TooLarge {
                    url,
                    limit: MAX_BODY as u32,
                });
            }
            body.extend_from_slice(&chunk);
        }
        parse(&url, &body)
    }
}

fn classify_error(url: &str, timeout: Duration, e: &reqwest::Error) -> HealthError {
    let url = url.to_owned();
    if e.is_timeout() {
        return HealthError::TimedOut {
            url,
            ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        };
    }
    // Walk the source chain for the OS error.
    let mut src: Option<&dyn std::error::Error> = Some(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return HealthError::Refused { url };
            }
        }
        src = s.source();
    }
    let mut detail = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        src = s.source();
    }
    if e.is_body() || e.is_decode() {
        return HealthError::Incomplete { url, detail };
    }
    HealthError::Connect { url, detail }
}

/// Parses a `/health` body: the 0.24.2 shape, and the newer one with `details`.
pub fn parse(url: &str, body: &[u8]) -> Result<Health, HealthError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| HealthError::NotJson {
        url: url.to_owned(),
        detail: e.to_string(),
    })?;
    let shape = |detail: &str| HealthError::WrongShape {
        url: url.to_owned(),
        detail: detail.to_owned(),
    };
    let obj = v.as_object().ok_or_else(|| shape("not an object"))?;
    let status = obj
        .get("status")
        .and_then(Value::as_str)
        .ok_or_else(|| shape("no \"status\" string"))?;
    let sessions = match obj.get("sessions") {
        None => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .filter_map(session_id)
            .collect(),
        Some(_) => return Err(shape("\"sessions\" is not an array")),
    };
    let details = match obj.get("details") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => Some(a.iter().filter_map(detail).collect()),
        Some(_) => return Err(shape("\"details\" is not an array")),
    };
    Ok(Health {
        status: crate::redact::bounded(status, 64),
        mode: obj
            .get("mode")
            .and_then(Value::as_str)
            .map(|m| crate::redact::bounded(m, 16)),
        connections: obj
            .get("connections")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok()),
        sessions,
        details,
        listening: obj.get("listening").and_then(listening),
    })
}

/// The newer `listening{address, port}`: the port the server really bound. Any other shape
/// (none recorded) is no port: never guessed from it.
fn listening(v: &Value) -> Option<Listening> {
    let o = v.as_object()?;
    let port = o
        .get("port")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p != 0)?;
    let address = o
        .get("address")
        .and_then(Value::as_str)
        .filter(|a| {
            !a.is_empty()
                && a.len() <= 64
                && a.bytes()
                    .all(|b| b.is_ascii_hexdigit() || matches!(b, b'.' | b':' | b'%'))
        })
        .map(str::to_owned);
    Some(Listening { address, port })
}

/// One `details` entry; field names vary, so the usual spellings are accepted.
fn detail(v: &Value) -> Option<HttpSessionDetail> {
    let o = v.as_object()?;
    let pick = |keys: &[&str]| keys.iter().find_map(|k| o.get(*k));
    let http_session = pick(&["sessionId", "id", "httpSessionId", "mcpSessionId"])?
        .as_str()
        .and_then(session_id)?;
    let debug_sessions = match pick(&["debugSessions", "debugSessionIds", "debug_sessions"]) {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|d| match d {
                Value::String(s) => session_id(s),
                Value::Object(m) => m
                    .get("id")
                    .or_else(|| m.get("sessionId"))
                    .and_then(Value::as_str)
                    .and_then(session_id),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Some(HttpSessionDetail {
        http_session,
        open_streams: pick(&["openStreams", "streams", "open_streams"])
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok()),
        idle_ms: pick(&["idleMs", "idle_ms"]).and_then(Value::as_u64),
        stream_lost: pick(&["streamLost", "stream_lost"]).and_then(Value::as_bool),
        debug_sessions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_of_0_24_2() {
        let h = parse("u", br#"{"status":"ok","mode":"http","connections":3,"sessions":["629143fa-1","e1efbd42-2"]}"#).unwrap();
        assert_eq!(h.status, "ok");
        assert_eq!(h.connections, Some(3));
        assert_eq!(h.sessions, ["629143fa-1", "e1efbd42-2"]);
        assert_eq!(h.details, None);
    }

    #[test]
    fn newer_shape_with_details() {
        let h = parse(
            "u",
            br#"{"status":"ok","mode":"http","connections":1,"sessions":["h-1"],
                "details":[{"sessionId":"h-1","openStreams":1,"idleMs":1200,"debugSessions":["d-1",{"id":"d-2"}]}]}"#,
        )
        .unwrap();
        let d = &h.details.unwrap()[0];
        assert_eq!(d.http_session, "h-1");
        assert_eq!(d.open_streams, Some(1));
        assert_eq!(d.idle_ms, Some(1200));
        assert_eq!(d.debug_sessions, ["d-1", "d-2"]);
    }

    /// The shape upstream's main documents for its next release (PR #664), not recorded from a
    /// released server: `details[]: {id, openStreams, streamLost, idleMs, debugSessions[{id,
    /// name, language, state}]}`.
    #[test]
    fn upstream_next_release_details() {
        let h = parse(
            "u",
            br#"{"status":"ok","mode":"http","connections":2,"sessions":["h-1","h-2"],
                "details":[{"id":"h-1","openStreams":0,"streamLost":true,"idleMs":41000,
                  "debugSessions":[{"id":"d-1","name":"py","language":"python","state":"paused"}]},
                  {"id":"h-2","openStreams":1,"streamLost":false,"idleMs":10,"debugSessions":[]}]}"#,
        )
        .unwrap();
        let d = h.details.unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].http_session, "h-1");
        assert_eq!(d[0].debug_sessions, ["d-1"]);
        assert_eq!(d[0].stream_lost, Some(true));
        assert!(d[1].debug_sessions.is_empty());
    }

    #[test]
    fn a_listening_field_of_any_shape_is_no_error_and_only_a_port_is_taken() {
        // Upstream's main: `listening{address, port}`; other shapes give no port, never an error.
        for (listening, port) in [
            (r#""http://127.0.0.1:40123/mcp""#, None),
            (r#"{"host":"127.0.0.1","port":40123}"#, Some(40123)),
            (r#"{"address":"127.0.0.1","port":0}"#, None),
            (r#"{"address":"127.0.0.1","port":70000}"#, None),
            (r#"{"address":"127.0.0.1","port":"40123"}"#, None),
        ] {
            let body = format!(
                r#"{{"status":"ok","mode":"http","listening":{listening},"connections":0,"sessions":[]}}"#
            );
            let h = parse("u", body.as_bytes()).unwrap();
            assert_eq!((h.status.as_str(), h.sessions.len()), ("ok", 0));
            assert_eq!(h.listening.map(|l| l.port), port, "{listening}");
        }
    }

    #[test]
    fn upstream_mains_health_fixtures_give_the_port_and_the_holders() {
        let h = parse("u", include_bytes!("testdata/health-upstream-main.json")).unwrap();
        let l = h.listening.unwrap();
        assert_eq!((l.address.as_deref(), l.port), (Some("127.0.0.1"), 41237));
        let d = h.details.unwrap();
        assert_eq!(
            d[0].debug_sessions,
            ["2d3e4f50-6172-4839-a4b5-c6d7e8f90a1b"]
        );
        assert_eq!(d[0].stream_lost, Some(true));
        // Upstream's Docker image binds every address.
        let h = parse(
            "u",
            include_bytes!("testdata/health-docker-upstream-main.json"),
        )
        .unwrap();
        let l = h.listening.unwrap();
        assert_eq!((l.address.as_deref(), l.port), (Some("0.0.0.0"), 3001));
        // An address that is not one is dropped, the port kept.
        let h = parse(
            "u",
            br#"{"status":"ok","sessions":[],"listening":{"address":"<b>x</b>","port":3001}}"#,
        )
        .unwrap();
        assert_eq!(h.listening.map(|l| (l.address, l.port)), Some((None, 3001)));
    }

    #[test]
    fn bad_bodies_are_worded() {
        assert!(matches!(
            parse("u", b"<html>"),
            Err(HealthError::NotJson { .. })
        ));
        assert!(matches!(
            parse("u", b"[]"),
            Err(HealthError::WrongShape { .. })
        ));
        assert!(matches!(
            parse("u", br#"{"sessions":[]}"#),
            Err(HealthError::WrongShape { .. })
        ));
        assert!(matches!(
            parse("u", br#"{"status":"ok","sessions":5}"#),
            Err(HealthError::WrongShape { .. })
        ));
        let e = parse("http://x/health", b"{").unwrap_err().to_string();
        assert!(e.starts_with("http://x/health did not answer JSON"), "{e}");
        // Hostile ids are dropped, not trusted.
        let h = parse(
            "u",
            br#"{"status":"ok","sessions":["<img src=x>","ok-1",7]}"#,
        )
        .unwrap();
        assert_eq!(h.sessions, ["ok-1"]);
    }
}
