//! The reconciled tree of the real `@debugmcp/mcp-debugger@0.24.2`, driven over real MCP
//! Streamable HTTP: two HTTP sessions, mock, python (debugpy from PyPI) and javascript
//! (bundled js-debug) debug sessions; a close and a stale reap seen as events and as nodes
//! leaving the tree.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::time::Duration;

use debugtop_core::model::{Language, LogEventKind, NodeKind, NodeStatus, Role, TreeNode, Update};
use debugtop_core::sampler::{Config, Engine};
use debugtop_e2e::mcp::{Abandoned, Client, Server};
use debugtop_e2e::{fixture, render, tick_until};

const EVERY: Duration = Duration::from_millis(250);

/// Ticks until `done` holds; returns the update and every log event seen meanwhile.
async fn until(
    engine: &mut Engine,
    secs: u64,
    what: &str,
    done: impl Fn(&Update) -> bool,
) -> (Update, Vec<LogEventKind>) {
    let mut seen = Vec::new();
    let u = tick_until(engine, secs, EVERY, what, |u| {
        seen.extend(u.events.iter().map(|e| e.kind.clone()));
        done(u).then(|| u.clone())
    })
    .await;
    (u, seen)
}

fn server_node(u: &Update, pid: u32) -> Option<&TreeNode> {
    u.snapshot
        .tree
        .iter()
        .find(|n| n.kind == NodeKind::Server && n.pid == Some(pid))
        .map(|n| &**n)
}

fn session_node<'a>(server: &'a TreeNode, id: &str) -> Option<&'a TreeNode> {
    server
        .walk()
        .into_iter()
        .find(|n| n.kind == NodeKind::DebugSession && n.session_id.as_deref() == Some(id))
}

fn roles_below(n: &TreeNode) -> Vec<Role> {
    n.walk().iter().filter_map(|c| c.role).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_server_tree_close_and_reap() {
    let server = Server::start(5000);
    let a = Client::connect(&server.url()).await;
    let b = Client::connect(&server.url()).await;
    let mut mocks = Vec::new();
    for (c, tag) in [(&a, "a"), (&b, "b")] {
        mocks.extend(c.start_mock_sessions(&format!("mock-{tag}"), 2).await);
    }
    let py = a.create_session("python", "py-loop").await;
    let r = a.start(&py, &fixture("py-app/loop.py")).await;
    assert_eq!(r["success"], true, "python: {r}");
    let js = b.create_session("javascript", "js-loop").await;
    let r = b.start(&js, &fixture("js-app/loop.js")).await;
    assert_eq!(r["success"], true, "javascript: {r}");

    let mut engine = Engine::new(Config::default()).unwrap();
    let all: Vec<String> = mocks
        .iter()
        .cloned()
        .chain([py.clone(), js.clone()])
        .collect();
    let pid = server.pid();
    let (u, _) = until(&mut engine, 30, "every session with its chain", |u| {
        let Some(srv) = server_node(u, pid) else {
            return false;
        };
        let http = srv
            .children
            .iter()
            .filter(|c| c.kind == NodeKind::HttpSession)
            .count();
        let chains = all.iter().all(|id| {
            session_node(srv, id).is_some_and(|n| roles_below(n).contains(&Role::Adapter))
        });
        let py_done = session_node(srv, &py).is_some_and(|n| {
            roles_below(n)
                .iter()
                .filter(|r| **r == Role::Debuggee)
                .count()
                >= 1
        });
        let js_done =
            session_node(srv, &js).is_some_and(|n| roles_below(n).contains(&Role::Watchdog));
        http == 2 && chains && py_done && js_done
    })
    .await;
    let srv = server_node(&u, pid).unwrap();
    eprintln!("{}", render(std::slice::from_ref(srv)));

    // Two HTTP sessions from /health, both open, each citing /health and its log line.
    let http: Vec<&TreeNode> = srv
        .children
        .iter()
        .map(|c| &**c)
        .filter(|c| c.kind == NodeKind::HttpSession)
        .collect();
    for h in &http {
        assert_eq!(h.status, Some(NodeStatus::Open));
        assert!(
            h.facts.iter().any(|f| f.text == "listed by /health"),
            "{:?}",
            h.facts
        );
        assert!(
            h.facts.iter().any(|f| f.text == "HTTP session initialized"),
            "{:?}",
            h.facts
        );
    }
    // 0.24.2 has no `details`: debug sessions hang directly under the server.
    for id in &all {
        let n = srv
            .children
            .iter()
            .find(|c| c.session_id.as_deref() == Some(id.as_str()))
            .expect("session under server");
        assert_eq!(n.status, Some(NodeStatus::Paused), "{id}");
        let worker = &n.children[0];
        assert_eq!(worker.role, Some(Role::Worker));
        let adapter = worker
            .children
            .iter()
            .find(|c| c.role == Some(Role::Adapter))
            .expect("adapter under worker");
        assert_eq!(adapter.session_id.as_deref(), Some(id.as_str()));
        assert!(
            n.facts
                .iter()
                .any(|f| f.text.starts_with("worker spawned with pid")),
            "{:?}",
            n.facts
        );
    }
    // python: worker → adapter → launcher → debuggee.
    let pyn = session_node(srv, &py).unwrap();
    let launcher = pyn
        .walk()
        .into_iter()
        .find(|n| n.role == Some(Role::Launcher))
        .expect("launcher");
    assert!(
        launcher
            .children
            .iter()
            .any(|c| c.role == Some(Role::Debuggee)),
        "{}",
        render(std::slice::from_ref(pyn))
    );
    // javascript: worker → adapter → debuggee → watchdog (tied through NODE_INSPECTOR_INFO).
    let jsn = session_node(srv, &js).unwrap();
    let debuggee = jsn
        .walk()
        .into_iter()
        .find(|n| n.role == Some(Role::Debuggee))
        .expect("js debuggee");
    assert!(
        debuggee
            .children
            .iter()
            .any(|c| c.role == Some(Role::Watchdog)),
        "{}",
        render(std::slice::from_ref(jsn))
    );
    let js_session = u
        .snapshot
        .debug_sessions
        .iter()
        .find(|d| d.id == js)
        .unwrap();
    assert_eq!(js_session.name.as_deref(), Some("js-loop"));
    assert_eq!(js_session.language, Some(Language::Javascript));

    // A normal close: events, then the node leaves the tree.
    let closed = mocks[0].clone();
    let r = a
        .call(
            "close_debug_session",
            serde_json::json!({ "sessionId": closed }),
        )
        .await;
    assert_eq!(r["success"], true);
    let (_, seen) = until(&mut engine, 15, "closed session leaves the tree", |u| {
        server_node(u, pid).is_some_and(|s| session_node(s, &closed).is_none())
    })
    .await;
    let events = seen;
    assert!(
        events.contains(&LogEventKind::DebugSessionClosed {
            session_id: closed.clone()
        }),
        "{events:?}"
    );
    assert!(events.iter().any(
        |e| matches!(e, LogEventKind::SessionStopped { session_id } if *session_id == closed)
    ));

    // An abandoned client: reaped at the next 60 s sweep after 5 s idle.
    let mut gone = Abandoned::connect(server.port);
    let orphan_session = gone.call(
        "create_debug_session",
        serde_json::json!({"language":"mock","name":"abandoned"}),
    )["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = gone.call(
        "start_debugging",
        serde_json::json!({"sessionId": orphan_session, "scriptPath": fixture("mock/script.js"), "dapLaunchArgs": {"stopOnEntry": true}}),
    );
    assert_eq!(r["success"], true, "{r}");
    let hsid = gone.http_session.clone();
    until(&mut engine, 20, "abandoned HTTP session in the tree", |u| {
        server_node(u, pid)
            .is_some_and(|s| s.children.iter().any(|c| c.id == format!("http:{hsid}")))
    })
    .await;
    let (_, seen) = until(
        &mut engine,
        90,
        "abandoned HTTP session reaped and gone",
        |u| {
            server_node(u, pid).is_some_and(|s| {
                !s.children.iter().any(|c| c.id == format!("http:{hsid}"))
                    && session_node(s, &orphan_session).is_none()
            })
        },
    )
    .await;
    let events = seen;
    assert!(
        events.iter().any(|e| matches!(e, LogEventKind::HttpSessionReaped { http_session, .. } if *http_session == hsid)),
        "{events:?}"
    );
    drop(gone);
    a.close().await;
    b.close().await;
}
