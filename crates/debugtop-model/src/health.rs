//! What a server's `/health` said, or why it could not be asked (the client lives in
//! `sources::health`).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What `/health` said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Health {
    /// `status` (`"ok"` when healthy).
    pub status: String,
    /// `mode`, when given.
    pub mode: Option<String>,
    /// `connections`, when given.
    pub connections: Option<u32>,
    /// HTTP session ids (`sessions`).
    pub sessions: Vec<String>,
    /// Per-HTTP-session details (newer servers only).
    pub details: Option<Vec<HttpSessionDetail>>,
    /// Where the server says it listens (`listening{address,port}`, newer servers only): the
    /// port it really bound, whatever its argv asked (`-p 0`).
    #[serde(default)]
    pub listening: Option<Listening>,
}

/// The newer `listening` object of `/health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Listening {
    /// The address bound (`127.0.0.1` by default; `0.0.0.0` in upstream's image), when given.
    pub address: Option<String>,
    /// The port bound.
    pub port: u16,
}

/// One entry of the newer `details` array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct HttpSessionDetail {
    /// The HTTP session id.
    pub http_session: String,
    /// Open streams, when given.
    pub open_streams: Option<u32>,
    /// Idle time in ms, when given.
    #[ts(type = "number | null")]
    pub idle_ms: Option<u64>,
    /// Its SSE stream was lost (newer servers reap such a session after a while).
    #[serde(default)]
    pub stream_lost: Option<bool>,
    /// The debug sessions it holds.
    pub debug_sessions: Vec<String>,
}

/// Why a health check failed, in words.
#[derive(
    Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize, TS, schemars::JsonSchema,
)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[ts(export)]
pub enum HealthError {
    /// Nothing listens there.
    #[error("connection refused: nothing is listening at {url}")]
    Refused {
        /// The URL.
        url: String,
    },
    /// No (complete) answer in time: a hung or stopped (SIGSTOP) server, or a slow drip.
    #[error("no answer within {ms} ms from {url}: the server is hung, stopped, or too slow")]
    TimedOut {
        /// The URL.
        url: String,
        /// The timeout.
        #[ts(type = "number")]
        ms: u64,
    },
    /// A status other than 200.
    #[error("{url} answered HTTP {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
    },
    /// More than [`MAX_BODY`] bytes.
    #[error("{url} sent more than {limit} bytes; ignored")]
    TooLarge {
        /// The URL.
        url: String,
        /// The cap.
        limit: u32,
    },
    /// The body is not JSON.
    #[error("{url} did not answer JSON: {detail}")]
    NotJson {
        /// The URL.
        url: String,
        /// Parser message.
        detail: String,
    },
    /// JSON, but not the `/health` shape.
    #[error("{url} answered JSON of an unexpected shape: {detail}")]
    WrongShape {
        /// The URL.
        url: String,
        /// What is wrong.
        detail: String,
    },
    /// The connection closed before the whole answer arrived.
    #[error("{url} closed the connection mid-answer: {detail}")]
    Incomplete {
        /// The URL.
        url: String,
        /// What failed.
        detail: String,
    },
    /// Any other transport failure.
    #[error("cannot reach {url}: {detail}")]
    Connect {
        /// The URL.
        url: String,
        /// What failed.
        detail: String,
    },
}
