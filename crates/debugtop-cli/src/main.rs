//! `debugtop-cli`: the debugtop engine without a window, for terminals and CI jobs.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use debugtop_core::collect::Collector;
use debugtop_core::snapshot::Snapshot;

#[derive(Debug, Parser)]
#[command(
    name = "debugtop-cli",
    version,
    about = "What your debug server really has running, and what it left behind."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Take one snapshot of every debug-server process on this machine.
    Snapshot {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
        /// Write to this file instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Keep secrets in argv (off by default: snapshots are meant to be shared).
        #[arg(long)]
        no_redact: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Json,
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("debugtop-cli: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Snapshot {
            format: Format::Json,
            out,
            no_redact,
        } => {
            let mut collector = Collector::new().context("cannot start the process collector")?;
            // Two samples so CPU percentages are real.
            let table = collector
                .scan_twice(Duration::from_millis(250))
                .context("cannot scan the process table")?;
            let snap = Snapshot::from_table(&table, !no_redact);
            let mut text =
                serde_json::to_string_pretty(&snap).context("cannot serialise the snapshot")?;
            text.push('\n');
            match out {
                Some(path) => std::fs::write(&path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?,
                None => std::io::stdout()
                    .lock()
                    .write_all(text.as_bytes())
                    .context("cannot write to stdout")?,
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
