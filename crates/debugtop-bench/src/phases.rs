//! Where a tick's time goes: the engine runs each phase of a tick (the scan, reconciliation,
//! each rule, redaction, …) in a `trace` span; this layer times every span from its creation to
//! its close and keeps the figures until they are taken, so a claim about which part is slow is
//! measured, not guessed. A `rule` span is named by its `kind`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

static TIMED: Mutex<Vec<(String, Duration)>> = Mutex::new(Vec::new());

/// Starts timing the engine's spans (for the rest of the process's life).
pub fn enable() {
    let _ = tracing_subscriber::registry().with(Timing).try_init();
}

/// The spans closed since the last call, in the order they closed.
pub fn take() -> Vec<(String, Duration)> {
    TIMED
        .lock()
        .map(|mut t| std::mem::take(&mut *t))
        .unwrap_or_default()
}

struct Timing;

/// A span's name and when it began.
struct Began(String, Instant);

/// The `kind` field of a span, if it has one.
struct Kind(Option<String>);

impl Visit for Kind {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "kind" {
            self.0 = Some(value.to_owned());
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Timing {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut kind = Kind(None);
        attrs.record(&mut kind);
        let name = kind.0.unwrap_or_else(|| attrs.metadata().name().to_owned());
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Began(name, Instant::now()));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let ext = span.extensions();
        if let (Some(Began(name, at)), Ok(mut t)) = (ext.get::<Began>(), TIMED.lock()) {
            t.push((name.clone(), at.elapsed()));
        }
    }
}
