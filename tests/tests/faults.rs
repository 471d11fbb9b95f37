//! Faults: a stopped server, servers answering 500 / garbage / 10 MB / a slow drip, a log
//! truncated mid-run and hostile lines appended to a real log. Every failure becomes a worded
//! source state and the sampler keeps ticking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::io::Write;
use std::time::{Duration, Instant};

use debugtop_core::model::{HealthError, LogEventKind, SourceKind, SourceState, Update};
use debugtop_core::sampler::{Config, Engine};
use debugtop_core::sources::health::HealthClient;
use debugtop_e2e::mcp::{Client, Server};
use nix::sys::signal::Signal;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A loopback HTTP server that answers every request with `respond`.
async fn fake_server(
    respond: fn(
        &mut tokio::net::TcpStream,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>,
) -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        // Bounded: a handful of connections, then the listener closes with the test.
        for _ in 0..16 {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let _ = s.read(&mut buf).await;
                respond(&mut s).await;
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn every_bad_answer_is_a_worded_error() {
    let c = HealthClient::new(Duration::from_millis(800));
    let e500 = fake_server(|s| Box::pin(async move {
        let _ = s.write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\nConnection: close\r\n\r\noops").await;
    }))
    .await;
    let garbage = fake_server(|s| Box::pin(async move {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\n<html>hi</ht").await;
    }))
    .await;
    let cut = fake_server(|s| Box::pin(async move {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nConnection: close\r\n\r\n{\"status\"").await;
    }))
    .await;
    let huge = fake_server(|s| Box::pin(async move {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n").await;
        let chunk = vec![b' '; 64 * 1024];
        for _ in 0..160 {
            if s.write_all(&chunk).await.is_err() {
                return;
            }
        }
    }))
    .await;
    let drip = fake_server(|s| {
        Box::pin(async move {
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{")
                .await;
            for _ in 0..20 {
                tokio::time::sleep(Duration::from_millis(200)).await;
                if s.write_all(b" ").await.is_err() {
                    return;
                }
            }
        })
    })
    .await;
    let shape = fake_server(|s| Box::pin(async move {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{\"status\":true}").await;
    }))
    .await;
    // Nothing listens on a port we bound and released.
    let refused = format!("http://127.0.0.1:{}", debugtop_e2e::mcp::free_port());

    let r = c.check(&e500).await.unwrap_err();
    assert!(matches!(r, HealthError::Status { status: 500, .. }), "{r}");
    let r = c.check(&garbage).await.unwrap_err();
    assert!(matches!(r, HealthError::NotJson { .. }), "{r}");
    let r = c.check(&cut).await.unwrap_err();
    assert!(matches!(r, HealthError::Incomplete { .. }), "{r}");
    assert!(
        r.to_string().contains("closed the connection mid-answer"),
        "{r}"
    );
    let started = Instant::now();
    let r = c.check(&huge).await.unwrap_err();
    assert!(matches!(r, HealthError::TooLarge { .. }), "{r}");
    assert!(r.to_string().contains("more than 1048576 bytes"), "{r}");
    let r = c.check(&drip).await.unwrap_err();
    assert!(matches!(r, HealthError::TimedOut { ms: 800, .. }), "{r}");
    assert!(r.to_string().contains("hung, stopped, or too slow"), "{r}");
    let r = c.check(&shape).await.unwrap_err();
    assert!(matches!(r, HealthError::WrongShape { .. }), "{r}");
    let r = c.check(&refused).await.unwrap_err();
    assert!(matches!(r, HealthError::Refused { .. }), "{r}");
    assert!(r.to_string().starts_with("connection refused"), "{r}");
    eprintln!("bad answers handled in {:?}", started.elapsed());

    // Through the sampler: a remote server that answers garbage is a failed source, in words,
    // and ticking goes on.
    let mut config = Config::default();
    config.sources.extra_servers = vec![garbage.clone()];
    let mut engine = Engine::new(config).unwrap();
    for _ in 0..2 {
        let u = engine.tick().await.unwrap();
        let src = u
            .snapshot
            .sources
            .iter()
            .find(|s| s.source == SourceKind::Health && s.server_pid.is_none())
            .unwrap();
        assert_eq!(src.state, SourceState::Failed);
        assert!(src.detail.contains("did not answer JSON"), "{}", src.detail);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_server_times_out_in_words_and_ticking_goes_on() {
    let server = Server::start(60_000);
    let mut engine = debugtop_e2e::engine(700);
    let health_of = |u: &Update| {
        u.snapshot
            .sources
            .iter()
            .find(|s| s.source == SourceKind::Health && s.server_pid == Some(server.pid()))
            .cloned()
            .unwrap()
    };
    let u = engine.tick().await.unwrap();
    assert_eq!(health_of(&u).state, SourceState::Ok, "{:?}", health_of(&u));

    server.proc.signal(Signal::SIGSTOP);
    server.proc.wait_state('T', Duration::from_secs(5));
    for _ in 0..3 {
        let t = Instant::now();
        let u = engine.tick().await.unwrap();
        let took = t.elapsed();
        let h = health_of(&u);
        assert_eq!(h.state, SourceState::Failed);
        assert!(h.detail.contains("no answer within 700 ms"), "{}", h.detail);
        // The tick is bounded by the health timeout (not asserted tightly: timings are not
        // asserted in tests; this only proves it does not hang).
        assert!(took < Duration::from_secs(10), "tick took {took:?}");
        let me = u
            .snapshot
            .processes
            .iter()
            .find(|p| p.pid == server.pid())
            .unwrap();
        assert_eq!(me.sample.state, debugtop_core::model::ProcState::Stopped);
    }
    server.proc.signal(Signal::SIGCONT);
    let mut ok = false;
    for _ in 0..20 {
        let u = engine.tick().await.unwrap();
        if health_of(&u).state == SourceState::Ok {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(ok, "health recovers after SIGCONT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_log_and_hostile_lines_lose_nothing_after_them() {
    let server = Server::start(60_000);
    let client = Client::connect(&server.url()).await;
    let mut engine = Engine::new(Config::default()).unwrap();
    let s1 = client.create_session("mock", "before").await;
    let mut seen = Vec::new();
    for _ in 0..20 {
        let u = engine.tick().await.unwrap();
        seen.extend(u.events);
        if seen.iter().any(|e| matches!(&e.kind, LogEventKind::DebugSessionCreated { session_id, .. } if *session_id == s1)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    assert!(seen.iter().any(|e| matches!(&e.kind, LogEventKind::DebugSessionCreated { session_id, .. } if *session_id == s1)));

    // Truncate the real log under the running server and, before the next tick, write past the
    // old offset: first a line only a restarted tail can see (it sits before the old offset),
    // then 200 KB of junk and hostile lines. The size alone says "it grew"; the inode is the
    // same; only the content shows the file started over.
    let logs_of = |u: &Update| {
        u.snapshot
            .sources
            .iter()
            .find(|s| s.source == SourceKind::Logs && s.server_pid == Some(server.pid()))
            .cloned()
            .unwrap()
    };
    let before = std::fs::metadata(&server.log_file).unwrap().len();
    let marker = uuid::Uuid::new_v4().to_string();
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&server.log_file)
            .unwrap();
        writeln!(
            f,
            "{{\"level\":\"info\",\"message\":\"HTTP session initialized: {marker}\",\"timestamp\":\"{}\"}}",
            chrono::Utc::now().to_rfc3339()
        )
        .unwrap();
        f.write_all(&vec![b'x'; 200 * 1024]).unwrap();
        f.write_all(b"\n\xff\xfe not utf8\n{\"message\":\"HTTP session initialized: <script>alert(1)</script>\"}\n[]\n{\"level\":").unwrap();
        f.write_all(b"\n").unwrap();
    }
    assert!(
        std::fs::metadata(&server.log_file).unwrap().len() > before,
        "the rewritten log is longer than what was read: a size check alone cannot see it"
    );
    let u = engine.tick().await.unwrap();
    assert!(
        u.events.iter().any(|e| matches!(&e.kind, LogEventKind::HttpSessionInitialized { http_session } if *http_session == marker)),
        "the line written at the start of the truncated log was read: {:?}",
        u.events
    );
    let logs = logs_of(&u);
    assert_eq!(logs.state, SourceState::Ok, "{}", logs.detail);
    assert!(
        logs.detail.contains(" 1 restarts"),
        "the restart is counted: {}",
        logs.detail
    );

    // The server keeps logging; what it writes next is still read.
    let s2 = client.create_session("mock", "after").await;
    let mut found = false;
    for _ in 0..20 {
        let u = engine.tick().await.unwrap();
        if u.events.iter().any(|e| matches!(&e.kind, LogEventKind::DebugSessionCreated { session_id, .. } if *session_id == s2)) {
            found = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    assert!(
        found,
        "events after truncation and hostile lines are still read"
    );
    client.close().await;
}
