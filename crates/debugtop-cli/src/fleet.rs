//! The CLI's target commands: `audit --target …` (the fleet gate), `kill --target T <id>` and
//! `snapshot --target …`. Each calls the core's fleet actions and prints; plans are made and
//! checked on the target.

use debugtop_core::model::printable::{self, one_line};
use std::io::Write;
use std::process::ExitCode;

use debugtop_cli::{audit_config, AuditArgs, Format};
use debugtop_core::actions::fleet as core_fleet;
use debugtop_core::actions::kill;
use debugtop_core::model::{KillAnswer, Snapshot, Target};
use debugtop_core::targets::Engines;

/// Audits every target; exits with the worst status.
pub async fn audit(args: &AuditArgs, targets: &[Target], json: bool) -> anyhow::Result<ExitCode> {
    let fleet = core_fleet::audit_targets(targets, &audit_config(args), &Engines::from_env()).await;
    let text = if json {
        printable::json(&fleet, true)? + "\n"
    } else {
        debugtop_core::model::printable::for_terminal(&debugtop_core::report::text::fleet(&fleet))
            .into_owned()
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::from(fleet.exit_code()))
}

/// Kills a finding (or a pid) on a target: its plan from a dry run there, confirmed here, executed there
/// restricted to the confirmed identities.
pub async fn kill(
    on: &Target,
    request: kill::KillRequest,
    grace_ms: Option<u64>,
    dry_run: bool,
    yes: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    if json && !yes && !dry_run {
        anyhow::bail!("with --json there is no prompt: pass --yes or --dry-run");
    }
    let engines = Engines::from_env();
    let (hello, shown) = core_fleet::plan_remote(on, &request, grace_ms, &engines).await?;
    if json && dry_run {
        println!("{}", printable::json(&shown, false)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    if !json {
        print_plan(&mut out, on, &hello.host, &shown.plan)?;
    }
    if shown.plan.targets.is_empty() {
        return Ok(ExitCode::from(1));
    }
    if dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    if !yes && !crate::confirmed(&mut out)? {
        writeln!(out, "nothing done")?;
        return Ok(ExitCode::from(1));
    }
    drop(out);
    let done = core_fleet::execute_remote(on, &request, &shown.plan, &engines).await?;
    print_done(on, &done, json)?;
    Ok(if done.report.as_ref().is_some_and(|r| r.all_gone()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The far side's plan, as its lines (or that there is nothing to kill).
fn print_plan(
    out: &mut impl Write,
    on: &Target,
    host: &str,
    plan: &debugtop_core::model::KillPlan,
) -> anyhow::Result<()> {
    writeln!(out, "plan on {on} ({}):", one_line(host))?;
    for line in plan.describe() {
        writeln!(out, "  {}", one_line(&line))?;
    }
    if plan.targets.is_empty() {
        writeln!(out, "nothing to kill")?;
    }
    Ok(())
}

/// What the far side did: the answer as JSON, or each outcome (a refusal is one) as a line.
fn print_done(on: &Target, done: &KillAnswer, json: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", printable::json(done, false)?)?;
        return Ok(());
    }
    for o in done.report.iter().flat_map(|r| &r.outcomes) {
        let outcome = o.outcome.to_string();
        writeln!(out, "{} {} on {on}: {}", o.role, o.pid, one_line(&outcome))?;
    }
    Ok(())
}

/// One fleet file with every target's snapshot.
pub async fn snapshot(
    targets: &[Target],
    local: Option<Snapshot>,
    format: Format,
    out: Option<std::path::PathBuf>,
    no_redact: bool,
) -> anyhow::Result<ExitCode> {
    let fleet = core_fleet::snapshot_targets(targets, local, no_redact, &Engines::from_env()).await;
    let text = match format {
        Format::Json => printable::json(&fleet, true)? + "\n",
        Format::Md => debugtop_core::report::markdown::render_fleet(&fleet),
    };
    crate::write_out(out.as_deref(), &text)?;
    let failed = fleet
        .targets
        .iter()
        .filter(|t| t.snapshot.is_none())
        .count();
    for t in fleet.targets.iter().filter(|t| t.snapshot.is_none()) {
        eprintln!(
            "debugtop-cli: no snapshot of {}: {}",
            one_line(&t.target.to_string()),
            one_line(t.error.as_deref().unwrap_or("no answer"))
        );
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}
