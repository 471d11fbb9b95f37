//! `serve`: debugtop's verdicts for the Prometheus a fleet already runs. One monitor (the
//! sampler `watch` runs) steps every interval; a scrape reads its latest look — rendered once
//! per look, on the first scrape that asks — and never waits for one. `/metrics` (the text
//! format, OpenMetrics when asked), `/api/findings` (the redacted findings with the command
//! that fixes each), `/healthz`; every other path is 404, every other method 405. Nothing
//! served changes the machine. The series and what they mean are the core's
//! (`report::metrics`); this only listens, routes and writes.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use debugtop_core::model::printable::{self, one_line};
use debugtop_core::model::{FindingsReport, Snapshot};
use debugtop_core::report::metrics::{self, Exposition, Look};
use debugtop_core::safe_fs::{write_atomic, Visibility};
use debugtop_core::sampler::{self, Published};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use tokio::sync::watch;

/// The most connections served at once (a scraper needs one; the rest wait in the backlog).
const MAX_CONNECTIONS: usize = 32;
/// How long a client may take to send its request's head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs the monitor and serves it on `listen` until interrupted; with `textfile`, also writes
/// the series there every tick.
pub async fn serve(
    listen: SocketAddr,
    config: sampler::Config,
    textfile: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let interval = config.interval;
    let running = sampler::spawn(config).context("cannot start the sampler")?;
    let exporter = Arc::new(Exporter {
        updates: running.updates.clone(),
        errors: running.errors.clone(),
        stale_after: (interval * 5).max(Duration::from_secs(10)),
        rendered: Mutex::new(Rendered::default()),
    });
    let local = listener.local_addr().unwrap_or(listen);
    eprintln!("debugtop-cli: serving http://{local}/metrics, /api/findings and /healthz");
    if let Some(path) = textfile {
        tokio::spawn(write_every_tick(running.updates.clone(), path));
    }
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = tokio::signal::ctrl_c() => break,
        };
        let Ok((stream, _)) = accepted else { continue };
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            break;
        };
        let exporter = Arc::clone(&exporter);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let exporter = Arc::clone(&exporter);
                async move { Ok::<_, Infallible>(exporter.answer(&req)) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
            drop(slot);
        });
    }
    running.task.abort();
    Ok(ExitCode::SUCCESS)
}

/// What a scrape reads: the monitor's latest look, and its renderings.
struct Exporter {
    updates: watch::Receiver<Option<Published>>,
    errors: watch::Receiver<Option<String>>,
    /// A look older than this makes `/healthz` fail.
    stale_after: Duration,
    rendered: Mutex<Rendered>,
}

/// The latest look as served, each form made the first time it is asked for.
#[derive(Default)]
struct Rendered {
    seq: Option<(u64, bool)>,
    prometheus: Option<Bytes>,
    openmetrics: Option<Bytes>,
    findings: Option<Bytes>,
}

/// What a path answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Metrics,
    Findings,
    Health,
    Index,
}

impl Route {
    fn of(path: &str) -> Option<Self> {
        Some(match path {
            "/metrics" => Self::Metrics,
            "/api/findings" => Self::Findings,
            "/healthz" => Self::Health,
            "/" => Self::Index,
            _ => return None,
        })
    }
}

impl Exporter {
    /// The answer to one request.
    fn answer(&self, req: &Request<Incoming>) -> Response<Full<Bytes>> {
        let Some(route) = Route::of(req.uri().path()) else {
            return text(
                StatusCode::NOT_FOUND,
                "not found: /metrics, /api/findings, /healthz\n",
            );
        };
        if !matches!(*req.method(), Method::GET | Method::HEAD) {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
            r.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            return r;
        }
        match route {
            Route::Index => text(
                StatusCode::OK,
                "debugtop: /metrics (Prometheus), /api/findings (JSON), /healthz\n",
            ),
            Route::Health => self.health(),
            Route::Metrics => {
                let accept = req
                    .headers()
                    .get(ACCEPT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                let how = Exposition::for_accept(accept);
                self.form(Form::Metrics(how), how.content_type())
            }
            Route::Findings => self.form(Form::Findings, "application/json"),
        }
    }

    /// `/healthz`: 200 while the monitor's latest look is recent, 503 (in words) otherwise.
    fn health(&self) -> Response<Full<Bytes>> {
        let latest = self.updates.borrow().clone();
        let error = self.errors.borrow().clone();
        let Some(p) = latest else {
            return text(StatusCode::SERVICE_UNAVAILABLE, "no look yet\n");
        };
        let age = (chrono::Utc::now() - p.update.snapshot.taken_at)
            .to_std()
            .unwrap_or_default();
        match error {
            _ if age > self.stale_after => text(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("the last look is {} s old\n", age.as_secs()),
            ),
            Some(e) => text(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("the last look failed: {}\n", one_line(&e)),
            ),
            None => text(
                StatusCode::OK,
                &format!("ok: last look {} ms ago\n", age.as_millis()),
            ),
        }
    }

    /// One form of the latest look, made once per look.
    fn form(&self, form: Form, content_type: &'static str) -> Response<Full<Bytes>> {
        let latest = self.updates.borrow().clone();
        let failed = self.errors.borrow().is_some();
        let Some(p) = latest else {
            return text(StatusCode::SERVICE_UNAVAILABLE, "no look yet\n");
        };
        let mut r = self
            .rendered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = (p.update.seq, failed);
        if r.seq != Some(key) {
            *r = Rendered {
                seq: Some(key),
                ..Rendered::default()
            };
        }
        let slot = match form {
            Form::Metrics(Exposition::Prometheus) => &mut r.prometheus,
            Form::Metrics(Exposition::OpenMetrics) => &mut r.openmetrics,
            Form::Findings => &mut r.findings,
        };
        let body = slot
            .get_or_insert_with(|| render(form, &p.update.snapshot, p.took, failed))
            .clone();
        let mut resp = Response::new(Full::new(body));
        resp.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        resp
    }
}

/// Which form of a look.
#[derive(Debug, Clone, Copy)]
enum Form {
    Metrics(Exposition),
    Findings,
}

fn render(form: Form, s: &Snapshot, took: Duration, failed: bool) -> Bytes {
    match form {
        Form::Metrics(how) => {
            let look = Look {
                snapshot: s,
                duration: took,
                failed,
            };
            Bytes::from(metrics::render(&look, how))
        }
        Form::Findings => {
            let json = printable::json(&FindingsReport::of(s), false)
                .unwrap_or_else(|e| format!("{{\"error\": \"{}\"}}", one_line(&e.to_string())));
            Bytes::from(json + "\n")
        }
    }
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_owned())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Writes `s`'s series to `path` for a textfile collector: atomically (a scrape never reads
/// half a file), readable by everyone (the collector runs as its own user), ending with a
/// newline.
pub fn write_textfile(
    path: &Path,
    s: &Snapshot,
    took: Duration,
    failed: bool,
) -> anyhow::Result<()> {
    let look = Look {
        snapshot: s,
        duration: took,
        failed,
    };
    let text = metrics::render(&look, Exposition::Prometheus);
    write_atomic(path, text.as_bytes(), Visibility::Readable)
        .with_context(|| format!("cannot write the textfile {}", path.display()))
}

/// Rewrites the textfile after every tick (a failure said on stderr; the next tick tries again).
async fn write_every_tick(mut updates: watch::Receiver<Option<Published>>, path: PathBuf) {
    while updates.changed().await.is_ok() {
        let Some(p) = updates.borrow_and_update().clone() else {
            continue;
        };
        if let Err(e) = write_textfile(&path, &p.update.snapshot, p.took, false) {
            eprintln!("debugtop-cli: {}", one_line(&format!("{e:#}")));
        }
    }
}
