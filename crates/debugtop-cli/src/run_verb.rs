//! `run -- CMD`: the flags to the core's run, the report to where CI looks (stderr, the files
//! asked for, GitHub Actions' annotations), and the hidden verb through which the command is
//! born in the run's cgroup.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use debugtop_cli::RunArgs;
use debugtop_core::actions::{export, run};
use debugtop_core::model::printable::{self, for_terminal};
use debugtop_core::model::{RunReport, UNCHECKED_STATUS};
use debugtop_core::report::run as words;
use debugtop_core::safe_fs::{write_atomic, Visibility};

/// The hidden verb's name (`__join-cgroup DIR -- CMD…`).
const JOIN_VERB: &str = "__join-cgroup";

/// Runs the command, reports, and answers with the run's status.
pub async fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let joiner = std::env::current_exe().ok().map(|program| run::Joiner {
        program,
        args: vec![OsString::from(JOIN_VERB)],
    });
    let config = args.config(joiner);
    let answer = match run::run(&config).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "debugtop run: could not run the check: {}",
                for_terminal(&e.to_string())
            );
            return Ok(ExitCode::from(UNCHECKED_STATUS));
        }
    };
    let report = answer.report;
    eprint!("{}", for_terminal(&words::to_text(&report)));
    if std::env::var_os("GITHUB_ACTIONS").is_some_and(|v| v == "true") {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(words::github_annotations(&report).as_bytes());
        let _ = out.flush();
    }
    let written = write_files(args, &report, answer.snapshot.as_ref(), config.redact);
    let status = match written {
        Err(e) => {
            eprintln!("debugtop run: {}", for_terminal(&format!("{e:#}")));
            if report.exit_status == 0 {
                UNCHECKED_STATUS
            } else {
                report.exit_status
            }
        }
        Ok(()) => report.exit_status,
    };
    Ok(ExitCode::from(status))
}

/// The files asked for: the JSON report, the JUnit file, the snapshot.
fn write_files(
    args: &RunArgs,
    report: &RunReport,
    snapshot: Option<&debugtop_core::model::Snapshot>,
    redact: bool,
) -> anyhow::Result<()> {
    let write = |path: &Path, text: &str| {
        write_atomic(path, text.as_bytes(), Visibility::Private)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
    };
    if let Some(p) = &args.json {
        write(p, &(printable::json(report, true)? + "\n"))?;
    }
    if let Some(p) = &args.junit {
        write(p, &words::to_junit(report))?;
    }
    if let Some(p) = &args.snapshot {
        let Some(s) = snapshot else {
            anyhow::bail!("no snapshot for {}: the engine could not look", p.display());
        };
        let home = debugtop_core::redact::home_dir();
        let ready = export::prepare(s, redact, home.as_deref());
        write(p, &export::render(&ready, export::ExportFormat::Json)?)?;
    }
    Ok(())
}

/// The hidden verb: joins the run's cgroup, then becomes the command (its pid, its stdio,
/// its everything: nothing of debugtop remains in it), or with `--probe` exits.
pub fn join_cgroup(dir: &Path, probe: bool, command: &[OsString]) -> ExitCode {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        if let Err(e) = debugtop_core::collect::scope::Cgroup::at(dir).join() {
            eprintln!(
                "debugtop run: cannot join the cgroup {}: {e}",
                dir.display()
            );
            return ExitCode::from(UNCHECKED_STATUS);
        }
        if probe {
            return ExitCode::SUCCESS;
        }
        let Some((program, rest)) = command.split_first() else {
            eprintln!("debugtop run: no command to run");
            return ExitCode::from(127);
        };
        let e = std::process::Command::new(program).args(rest).exec();
        eprintln!(
            "debugtop run: cannot run {}: {e}",
            for_terminal(&program.to_string_lossy())
        );
        ExitCode::from(if e.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (dir, probe, command);
        eprintln!("debugtop run: cgroups are Linux's");
        ExitCode::from(UNCHECKED_STATUS)
    }
}
