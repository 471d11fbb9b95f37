//! The MCP stdio transport, one JSON-RPC message a line, with what the SDK's own leaves out: a
//! line that is no JSON gets `-32700 Parse error`, and JSON that is no JSON-RPC message gets
//! `-32600 Invalid Request` (with its id when it has one), instead of silence; the session goes
//! on. Nothing but these lines is written to stdout.

use futures::channel::mpsc::{unbounded, SendError};
use futures::{SinkExt, Stream, StreamExt};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::RoleServer;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Stdin as a stream of client messages and stdout as a sink of server messages.
pub fn transport() -> (
    impl futures::Sink<TxJsonRpcMessage<RoleServer>, Error = SendError> + Send + Unpin + 'static,
    impl Stream<Item = RxJsonRpcMessage<RoleServer>> + Send + Unpin + 'static,
) {
    let (tx, mut rx) = unbounded::<String>();
    tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        while let Some(line) = rx.next().await {
            let written = out.write_all(line.as_bytes()).await;
            if written
                .and(out.write_all(b"\n").await)
                .and(out.flush().await)
                .is_err()
            {
                break;
            }
        }
    });
    let replies = tx.clone();
    let sink = tx.with(|m: TxJsonRpcMessage<RoleServer>| {
        futures::future::ready(Ok::<_, SendError>(
            serde_json::to_string(&m).unwrap_or_default(),
        ))
    });
    let lines = BufReader::new(tokio::io::stdin()).lines();
    let stream = futures::stream::unfold((lines, replies), |(mut lines, replies)| async move {
        loop {
            let line = lines.next_line().await.ok().flatten()?;
            match read(&line) {
                Read::Message(m) => return Some((*m, (lines, replies))),
                Read::Blank => {}
                Read::Error(reply) => {
                    let _ = replies.unbounded_send(reply);
                }
            }
        }
    });
    (sink, Box::pin(stream))
}

/// One line, read.
enum Read {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    Blank,
    Error(String),
}

fn read(line: &str) -> Read {
    if line.trim().is_empty() {
        return Read::Blank;
    }
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Read::Error(error(&Value::Null, -32700, &format!("Parse error: {e}"))),
    };
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value.clone()) {
        Ok(m) => Read::Message(Box::new(m)),
        Err(e) => {
            let id = value.get("id").cloned().unwrap_or(Value::Null);
            Read::Error(error(&id, -32600, &format!("Invalid Request: {e}")))
        }
    }
}

fn error(id: &Value, code: i64, message: &str) -> String {
    let message: String = message.chars().take(300).collect();
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_is_no_message_gets_its_json_rpc_error() {
        let Read::Error(e) = read("this is no JSON") else {
            panic!("an error");
        };
        let v: Value = serde_json::from_str(&e).unwrap_or_default();
        assert_eq!(
            (v["error"]["code"].as_i64(), &v["id"]),
            (Some(-32700), &Value::Null)
        );
        let Read::Error(e) = read(r#"{"jsonrpc":"2.0","id":5,"method":7}"#) else {
            panic!("an error");
        };
        let v: Value = serde_json::from_str(&e).unwrap_or_default();
        assert_eq!(
            (v["error"]["code"].as_i64(), v["id"].as_i64()),
            (Some(-32600), Some(5))
        );
        assert!(matches!(read("   "), Read::Blank));
        assert!(matches!(
            read(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Read::Message(_)
        ));
    }
}
