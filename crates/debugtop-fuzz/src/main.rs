//! debugtop-fuzz: mutation fuzzing on stable Rust. Each target starts from seeds (the recorded
//! test data, real `/proc` files, generated snapshots), mutates them with a fast PRNG for a
//! fixed time budget, and checks its property: no panic for the parsers (and import), no
//! planted secret surviving for redaction. A failing input is written to `target/fuzz-found/`
//! and the run fails. No coverage feedback (that needs a nightly toolchain): it is a steady
//! stream of hostile variants of real inputs, which is what debugtop meets.

mod mutate;
mod targets;

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;

use mutate::Rng;
use targets::{Target, TARGETS};

/// Fuzz every target (or one) for a fixed time each.
#[derive(Debug, Parser)]
#[command(name = "debugtop-fuzz", version)]
struct Args {
    /// Seconds per target.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Only this target (stat, cmdline, environ, log-line, health, import, redaction).
    #[arg(long)]
    only: Option<String>,
    /// PRNG seed (default: from the clock; printed, so a run can be repeated).
    #[arg(long)]
    seed: Option<u64>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let seed = args.seed.unwrap_or_else(clock_seed);
    println!("debugtop-fuzz: seed {seed}, {} s per target", args.seconds);
    // A panic is a finding, reported by the loop below; keep the default hook quiet.
    std::panic::set_hook(Box::new(|_| {}));
    let mut failed = Vec::new();
    for t in TARGETS
        .iter()
        .filter(|t| args.only.as_deref().is_none_or(|o| o == t.name))
    {
        let mut rng = Rng::new(seed ^ fnv(t.name));
        match run(t, &mut rng, Duration::from_secs(args.seconds)) {
            Ok(n) => println!("{:<10} {n:>9} inputs, nothing found", t.name),
            Err(e) => {
                println!("{:<10} FOUND: {e:#}", t.name);
                failed.push(t.name);
            }
        }
    }
    if !failed.is_empty() {
        bail!("findings in {failed:?} (inputs in target/fuzz-found/)");
    }
    Ok(())
}

/// Mutates the target's seeds until the budget is spent; the number of inputs tried.
fn run(t: &Target, rng: &mut Rng, budget: Duration) -> anyhow::Result<u64> {
    let seeds = (t.seeds)();
    if seeds.is_empty() {
        bail!("no seeds");
    }
    let end = Instant::now() + budget;
    let mut n = 0u64;
    while Instant::now() < end {
        for _ in 0..64 {
            let base = &seeds[rng.below(seeds.len())];
            let other = &seeds[rng.below(seeds.len())];
            let input = mutate::mutate(base, other, rng);
            let verdict =
                std::panic::catch_unwind(AssertUnwindSafe(|| (t.check)(&input, rng.next())));
            let problem = match verdict {
                Ok(Ok(())) => None,
                Ok(Err(why)) => Some(why),
                Err(p) => Some(format!("panic: {}", panic_text(&p))),
            };
            if let Some(why) = problem {
                let file = save(t.name, &input)?;
                bail!("{why} (input: {file})");
            }
            n += 1;
        }
    }
    Ok(n)
}

fn save(name: &str, input: &[u8]) -> anyhow::Result<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-found");
    std::fs::create_dir_all(&dir).context("target/fuzz-found")?;
    let file = dir.join(format!("{name}-{:016x}", fnv_bytes(input)));
    std::fs::write(&file, input).context("saving the input")?;
    Ok(file.display().to_string())
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

fn fnv(s: &str) -> u64 {
    fnv_bytes(s.as_bytes())
}

fn fnv_bytes(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, x| {
        (h ^ u64::from(*x)).wrapping_mul(0x0100_0000_01b3)
    })
}
