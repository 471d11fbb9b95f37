//! The Windows installer, for real: `scripts/windows/debugtop.nsi` built by Debian's makensis
//! and run under Wine in a fresh copy of the test prefix — silent installs (`/S`, `/D=`), per
//! user and `/ALLUSERS`, an upgrade, the uninstaller — with the prefix's registry and file tree
//! compared before and after, and the installed `debugtop-cli.exe` run from the PATH setup
//! wrote, auditing the real mcp-debugger 0.24.2 on Windows node.
//!
//! What is packaged: the real `debugtop-cli.exe` (the workspace's debug cross-build, stripped
//! of its debug information: 30 MB instead of 134, what runs is the same) and the real
//! `WebView2Loader.dll` (the one webview2-com-sys ships and the app's build copies beside it).
//! The app's slot holds a stand-in, a text file named `debugtop.exe`: a cold cross-build of the
//! app takes 2 min 37 s on two cores, make test has no other use for it, and nothing here could
//! run it (Wine has no WebView2 runtime; a silent install never starts it). `make dist-windows`
//! packages the real app. `DEBUGTOP_WINDOWS_APP=<debugtop.exe>` packages a real one here too.
//!
//! Wine's own noise, allowed and nothing else: the display-device class keys Wine's display
//! driver rewrites at every start (`{4D36E968-…}` display adapters, `{4D36E96E-…}` monitors:
//! `DriverDateData`, their default values). NSIS's own: the uninstaller runs from a copy in
//! `%TEMP%\~nsuN.tmp` and schedules the copy and its folder for deletion at the next boot; the
//! test reboots the prefix (`wineboot -r`), which deletes the copy, and the folder, scheduled
//! before it, is left empty.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use debugtop_e2e::wait_for;
use debugtop_e2e::wine::{seed_bug_stand_in, win, windows_cli, WinServer, Wine};
use serde_json::{json, Value};

const WINESERVER: &str = "/usr/lib/wine/wineserver64";
const UNINSTALL_KEY: &str = r"Software\Microsoft\Windows\CurrentVersion\Uninstall\debugtop";
const MACHINE_ENVIRONMENT: &str =
    r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Environment";
/// The older version an upgrade starts from.
const OLD: &str = "0.0.1";

/// Wine is heavy on two cores: one Windows world at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workspace's version, which the installer built from this tree carries.
fn version() -> String {
    let toml = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    toml.lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("the workspace's version")
        .to_owned()
}

fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The real WebView2Loader.dll: webview2-com-sys's own x64 copy (cargo metadata fetches the
/// crate if the Linux build never needed it).
fn webview2_loader() -> PathBuf {
    let out = run(
        Command::new(env!("CARGO"))
            .args([
                "metadata",
                "--format-version",
                "1",
                "--filter-platform",
                "x86_64-pc-windows-gnu",
                "--manifest-path",
            ])
            .arg(repo().join("Cargo.toml")),
        "cargo metadata",
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let manifest = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "webview2-com-sys")
        .and_then(|p| p["manifest_path"].as_str())
        .expect("webview2-com-sys among the app's Windows dependencies");
    let dll = Path::new(manifest).with_file_name("x64/WebView2Loader.dll");
    assert!(dll.exists(), "no {}", dll.display());
    dll
}

/// What the installers are built from, and the two setups (`OLD` and this version).
struct Kit {
    source: PathBuf,
    setup_old: PathBuf,
    setup: PathBuf,
}

fn kit() -> &'static Kit {
    static KIT: OnceLock<Kit> = OnceLock::new();
    KIT.get_or_init(|| {
        // A folder of this process's own: nextest runs each test in a process, and two of
        // them building into one folder (two at once, as a paired run did) removed each
        // other's setups. Those of processes gone are removed.
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        remove_kits_of_gone_processes(tmp);
        // The one shared folder of before (no process builds there any more).
        let _ = std::fs::remove_dir_all(tmp.join("installer"));
        let dir = tmp.join(format!("installer-{}", std::process::id()));
        let source = dir.join("source");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&source).unwrap();
        let cli = windows_cli();
        assert!(
            cli.exists(),
            "the Windows debugtop-cli is missing at {}: run `cargo build -p debugtop-cli \
             --target x86_64-pc-windows-gnu` (make test does)",
            cli.display()
        );
        run(
            Command::new("x86_64-w64-mingw32-strip")
                .arg("-o")
                .arg(source.join("debugtop-cli.exe"))
                .arg(&cli),
            "stripping the CLI (mingw-w64; make test installs it)",
        );
        std::fs::copy(webview2_loader(), source.join("WebView2Loader.dll")).unwrap();
        match std::env::var_os("DEBUGTOP_WINDOWS_APP") {
            Some(app) => {
                std::fs::copy(app, source.join("debugtop.exe")).expect("DEBUGTOP_WINDOWS_APP");
            }
            None => std::fs::write(
                source.join("debugtop.exe"),
                "A stand-in for the app: make test does not cross-build it (see \
                 crates/debugtop-cli/tests/installer.rs); make dist-windows packages the real one.\n",
            )
            .unwrap(),
        }
        let build = |version: &str| {
            let out = dir.join(format!("debugtop-{version}-setup-x86_64.exe"));
            let t = Instant::now();
            run(
                Command::new("makensis")
                    .args(["-V2", "-WX"])
                    .arg(format!("-DVERSION={version}"))
                    .arg(format!("-DSOURCE={}", source.display()))
                    .arg(format!("-DOUTFILE={}", out.display()))
                    .arg("-DCOMPRESSOR=zlib")
                    .arg(repo().join("scripts/windows/debugtop.nsi")),
                "makensis (Debian's nsis; make test installs it)",
            );
            eprintln!(
                "installer: {} built in {:.1} s, {} bytes",
                out.display(),
                t.elapsed().as_secs_f64(),
                std::fs::metadata(&out).unwrap().len()
            );
            out
        };
        Kit {
            setup_old: build(OLD),
            setup: build(&version()),
            source,
        }
    })
}

/// Removes the `installer-<pid>` folders whose process has ended (a live pid's folder stays,
/// even if the pid now names another process: it goes once that one has ended too).
fn remove_kits_of_gone_processes(tmp: &Path) {
    for e in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("installer-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// A fresh prefix for installing into.
struct Machine {
    wine: Wine,
    prefix: PathBuf,
}

impl Machine {
    /// A copy of the test prefix with the ProcessPrng stand-in in system32 (Windows 10 has
    /// ProcessPrng; Wine 8 lacks the DLL: an installed program finds it where Windows keeps its
    /// own), started once so that Wine's first-start writes are behind us.
    fn new() -> Self {
        let wine = Wine::prepare();
        let prefix = wine.dir.path().join("prefix");
        std::fs::copy(
            wine.dir.path().join("bin/bcryptprimitives.dll"),
            prefix.join("drive_c/windows/system32/bcryptprimitives.dll"),
        )
        .unwrap();
        let b = Self { wine, prefix };
        b.exec(Path::new("cmd"), &["/c", "exit"]);
        b.settle();
        b
    }

    /// A Windows program in this prefix. winemenubuilder is off: it would mirror the Start
    /// menu shortcut into this Linux account's ~/.local and ~/.config.
    fn cmd(&self, program: &Path) -> Command {
        let mut c = self.wine.command(program);
        c.env("WINEDLLOVERRIDES", "winemenubuilder.exe=d");
        c
    }

    fn exec(&self, program: &Path, args: &[&str]) -> Output {
        self.cmd(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", program.display()))
    }

    /// Waits until every process of the prefix has ended and Wine wrote its registry out.
    fn settle(&self) {
        let ok = Command::new(WINESERVER)
            .arg("-w")
            .env("WINEPREFIX", &self.prefix)
            .status()
            .expect("wineserver");
        assert!(ok.success());
    }

    /// Runs a setup or an uninstaller to its end (and what it started to theirs); its exit
    /// code and how long that took.
    fn setup(&self, exe: &Path, args: &[&str]) -> (i32, Duration) {
        let t = Instant::now();
        let out = self.exec(exe, args);
        self.settle();
        (out.status.code().unwrap_or(-1), t.elapsed())
    }

    /// `reg query` of one value: its type and data, or None.
    fn reg(&self, key: &str, name: &str) -> Option<(String, String)> {
        self.reg_answer(key, name).0
    }

    /// `reg query` of one value: its type and data, or None; and what `reg` answered (its
    /// exit status and output), for a failure's message.
    fn reg_answer(&self, key: &str, name: &str) -> (Option<(String, String)>, String) {
        let out = self.exec(Path::new("reg"), &["query", key, "/v", name]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let found = text.lines().find_map(|l| {
            let l = l.trim_end_matches('\r');
            let rest = l.strip_prefix(&format!("    {name}    "))?;
            let (ty, data) = rest.split_once("    ")?;
            Some((ty.to_owned(), data.to_owned()))
        });
        let said = format!(
            "reg query {key} /v {name}: {}, stdout {text:?}, stderr {:?}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        (found, said)
    }

    fn reg_set_path(&self, key: &str, value: &str) {
        let out = self.exec(
            Path::new("reg"),
            &[
                "add",
                key,
                "/v",
                "Path",
                "/t",
                "REG_EXPAND_SZ",
                "/d",
                value,
                "/f",
            ],
        );
        assert!(out.status.success(), "reg add {key} Path");
        assert_eq!(self.reg(key, "Path").unwrap().1, value);
    }

    /// A Windows path of this prefix as a Linux path.
    fn host(&self, windows: &str) -> PathBuf {
        let rest = windows.strip_prefix(r"C:\").expect("a C: path");
        self.prefix.join("drive_c").join(rest.replace('\\', "/"))
    }

    /// The registry (every key and value of the three hives, Wine's timestamps left out) and
    /// the file tree (type, path, size; the hives themselves aside).
    fn state(&self) -> State {
        self.settle();
        let mut reg = BTreeSet::new();
        for hive in ["system.reg", "user.reg", "userdef.reg"] {
            let text = std::fs::read_to_string(self.prefix.join(hive)).unwrap();
            let mut key: Option<String> = None;
            let mut value = String::new();
            for line in text.lines() {
                if !value.is_empty() {
                    value.push_str(line.trim_start());
                } else if let Some(k) = line.strip_prefix('[') {
                    let k = k.rsplit_once(']').map_or(k, |(k, _)| k).to_owned();
                    reg.insert(format!("{hive} [{k}]"));
                    key = Some(k);
                    continue;
                } else if key.is_some() && !line.is_empty() && !line.starts_with('#') {
                    value.push_str(line);
                }
                if value.ends_with('\\') {
                    value.pop();
                } else if !value.is_empty() {
                    reg.insert(format!("{hive} [{}] {value}", key.as_deref().unwrap()));
                    value.clear();
                }
            }
        }
        let mut files = BTreeSet::new();
        walk(&self.prefix, &self.prefix, &mut files);
        State { reg, files }
    }
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let path = e.path();
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_symlink() {
            out.insert(format!("l {rel}"));
        } else if meta.is_dir() {
            out.insert(format!("d {rel}"));
            walk(root, &path, out);
        } else if dir != root || !rel.ends_with(".reg") {
            out.insert(format!("f {rel} {}", meta.len()));
        }
    }
}

#[derive(Clone)]
struct State {
    reg: BTreeSet<String>,
    files: BTreeSet<String>,
}

/// Wine's display driver rewrites these at every start (see the module's documentation).
fn wine_noise(entry: &str) -> bool {
    [
        r"[System\\CurrentControlSet\\Control\\Class\\{4D36E968-E325-11CE-BFC1-08002BE10318}",
        r"[System\\CurrentControlSet\\Control\\Class\\{4D36E96E-E325-11CE-BFC1-08002BE10318}",
    ]
    .iter()
    .any(|k| entry.starts_with("system.reg ") && entry.contains(k))
}

/// What is in `after` and not in `before`, and the reverse.
fn diff(before: &BTreeSet<String>, after: &BTreeSet<String>) -> (Vec<String>, Vec<String>) {
    (
        after.difference(before).cloned().collect(),
        before.difference(after).cloned().collect(),
    )
}

/// `after` is `before`, but for Wine's noise and the empty folder NSIS's uninstaller copy ran
/// from.
fn assert_as_before(before: &State, after: &State, what: &str) {
    let (added, removed) = diff(&before.reg, &after.reg);
    let added: Vec<_> = added.into_iter().filter(|e| !wine_noise(e)).collect();
    let removed: Vec<_> = removed.into_iter().filter(|e| !wine_noise(e)).collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "{what}: the registry is not as it was: added {added:#?}, removed {removed:#?}"
    );
    let (added, removed) = diff(&before.files, &after.files);
    let nsis_copy = |f: &String| {
        f.starts_with(r"d drive_c/users/")
            && f.split('/')
                .next_back()
                .is_some_and(|n| n.starts_with("~nsu") && n.ends_with(".tmp"))
    };
    let added: Vec<_> = added.into_iter().filter(|f| !nsis_copy(f)).collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "{what}: the files are not as they were: added {added:#?}, removed {removed:#?}"
    );
}

/// Where a per-user install goes in this prefix (Wine's user is the Linux user).
fn user_dir(b: &Machine) -> String {
    let users = b.prefix.join("drive_c/users");
    let user = std::fs::read_dir(&users)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n != "Public")
        .expect("the prefix's user");
    format!(r"C:\users\{user}")
}

/// The files an install puts in `dir` (a Windows path), with what they must hold.
fn installed_files(dir: &str) -> Vec<(String, Option<PathBuf>)> {
    let src = &kit().source;
    vec![
        (
            format!(r"{dir}\debugtop.exe"),
            Some(src.join("debugtop.exe")),
        ),
        (
            format!(r"{dir}\WebView2Loader.dll"),
            Some(src.join("WebView2Loader.dll")),
        ),
        (
            format!(r"{dir}\debugtop.ico"),
            Some(repo().join("icons/icon.ico")),
        ),
        (
            format!(r"{dir}\bin\debugtop-cli.exe"),
            Some(src.join("debugtop-cli.exe")),
        ),
        (format!(r"{dir}\uninstall.exe"), None),
    ]
}

/// Every file of an install is there with its bytes, the shortcut names the app, and the Apps
/// list's entry says what it must, under `root` (HKCU or HKLM).
fn assert_installed(b: &Machine, root: &str, dir: &str, version: &str, shortcut: &str) {
    for (file, same_as) in installed_files(dir) {
        let host = b.host(&file);
        let got = std::fs::read(&host).unwrap_or_else(|e| panic!("{file}: {e}"));
        if let Some(src) = same_as {
            assert!(got == std::fs::read(&src).unwrap(), "{file} is not {src:?}");
        }
    }
    let lnk = std::fs::read(b.host(shortcut)).unwrap_or_else(|e| panic!("{shortcut}: {e}"));
    let target = format!(r"{dir}\debugtop.exe");
    let utf16: Vec<u8> = target.encode_utf16().flat_map(u16::to_le_bytes).collect();
    assert!(
        lnk.windows(target.len()).any(|w| w == target.as_bytes())
            || lnk.windows(utf16.len()).any(|w| w == utf16.as_slice()),
        "{shortcut} does not point at {target}"
    );
    let key = format!(r"{root}\{UNINSTALL_KEY}");
    let value = |name: &str| {
        let (found, said) = b.reg_answer(&key, name);
        found
            .unwrap_or_else(|| panic!("{key} has no {name} ({said})"))
            .1
    };
    assert_eq!(value("DisplayName"), "debugtop");
    assert_eq!(value("DisplayVersion"), version);
    assert_eq!(value("Publisher"), "The debugtop authors");
    assert_eq!(value("DisplayIcon"), format!(r"{dir}\debugtop.ico"));
    assert_eq!(value("InstallLocation"), dir);
    let mode = if root == "HKLM" {
        "/ALLUSERS"
    } else {
        "/CURRENTUSER"
    };
    assert_eq!(
        value("UninstallString"),
        format!(r#""{dir}\uninstall.exe" {mode}"#)
    );
    assert_eq!(
        value("QuietUninstallString"),
        format!(r#""{dir}\uninstall.exe" {mode} /S"#)
    );
    let size = u64::from_str_radix(value("EstimatedSize").trim_start_matches("0x"), 16).unwrap();
    let bytes: u64 = installed_files(dir)
        .iter()
        .map(|(f, _)| std::fs::metadata(b.host(f)).unwrap().len())
        .sum();
    assert!(
        size.abs_diff(bytes / 1024) <= 8,
        "EstimatedSize {size} KiB, the files {} KiB",
        bytes / 1024
    );
}

/// Runs the Apps list's QuietUninstallString, as Settings › Apps would.
fn uninstall(b: &Machine, root: &str) -> Duration {
    let quiet = b
        .reg(&format!(r"{root}\{UNINSTALL_KEY}"), "QuietUninstallString")
        .expect("a QuietUninstallString")
        .1;
    let (exe, args) = quiet[1..].split_once("\" ").expect("a quoted program");
    let args: Vec<&str> = args.split(' ').collect();
    let exe = b.host(exe);
    let (code, took) = b.setup(&exe, &args);
    assert_eq!(code, 0, "{quiet}");
    // What NSIS left for the next boot is its own copy, and only that.
    let (_, pending) = b
        .reg(
            r"HKLM\System\CurrentControlSet\Control\Session Manager",
            "PendingFileRenameOperations",
        )
        .unwrap_or_default();
    assert!(
        pending.is_empty() || pending.contains(r"\~nsu"),
        "{pending}"
    );
    let reboot = b.exec(Path::new("wineboot"), &["-r"]);
    assert!(reboot.status.success(), "wineboot -r");
    b.settle();
    took
}

/// A PATH longer than NSIS's 1,024-character strings, which a careless setup would cut there.
fn long_path() -> String {
    let mut p = String::from(r"C:\pre existing");
    for i in 0..150 {
        p.push_str(&format!(r";C:\Tools\long-path-entry-{i:03}"));
    }
    assert!(p.len() > 4000);
    p
}

/// Runs `debugtop-cli <args>` as a terminal opened after the install would: cmd.exe finds it
/// through the PATH read back from the registry (the system folders, then the user's Path).
/// Wine 8 itself cuts a long registry PATH at 1,024 characters when it makes a process's
/// environment, so the value is set by the script, whole. Exit code, stdout.
fn cli_from_path(b: &Machine, user_path: &str, args: &[&str]) -> (i32, String) {
    let dir = b.wine.dir.path();
    let script = dir.join("terminal.cmd");
    std::fs::write(
        &script,
        format!(
            "@set \"PATH=%SystemRoot%\\system32;%SystemRoot%;{user_path}\"\r\n@debugtop-cli \
             %*\r\n"
        ),
    )
    .unwrap();
    let out = dir.join("terminal.out");
    let status = b
        .cmd(Path::new("cmd"))
        .arg("/c")
        .arg(win(&script))
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::process::Stdio::inherit())
        .status()
        .expect("cmd");
    (
        status.code().unwrap_or(-1),
        std::fs::read_to_string(&out).unwrap_or_default(),
    )
}

#[test]
fn a_silent_install_for_the_user_puts_the_cli_on_path_and_it_audits_the_seed_leak() {
    let _one = one_at_a_time();
    let b = Machine::new();
    let kit = kit();
    let user = user_dir(&b);
    let long = long_path();
    b.reg_set_path(r"HKCU\Environment", &long);
    let before = b.state();

    let (code, took) = b.setup(&kit.setup, &["/S"]);
    eprintln!("installer: per-user silent install in {took:.1?}");
    assert_eq!(code, 0);
    let dir = format!(r"{user}\AppData\Local\Programs\debugtop");
    let shortcut =
        format!(r"{user}\AppData\Roaming\Microsoft\Windows\Start Menu\Programs\debugtop.lnk");
    assert_installed(&b, "HKCU", &dir, &version(), &shortcut);

    // Nothing else was written: the files are the install's, the keys its own and the Path.
    let after = b.state();
    let (added, removed) = diff(&before.files, &after.files);
    let mut expected: BTreeSet<String> = installed_files(&dir)
        .iter()
        .map(|(f, _)| {
            let rel = b.host(f).strip_prefix(&b.prefix).unwrap().to_owned();
            let len = std::fs::metadata(b.host(f)).unwrap().len();
            format!("f {} {len}", rel.display())
        })
        .collect();
    let rel = |w: &str| {
        b.host(w)
            .strip_prefix(&b.prefix)
            .unwrap()
            .display()
            .to_string()
    };
    for d in [
        format!(r"{user}\AppData\Local\Programs"),
        dir.clone(),
        format!(r"{dir}\bin"),
    ] {
        expected.insert(format!("d {}", rel(&d)));
    }
    let lnk_len = std::fs::metadata(b.host(&shortcut)).unwrap().len();
    expected.insert(format!("f {} {lnk_len}", rel(&shortcut)));
    assert_eq!(
        added.into_iter().collect::<BTreeSet<_>>(),
        expected,
        "the files setup added"
    );
    assert!(removed.is_empty(), "setup removed {removed:#?}");
    let (added, removed) = diff(&before.reg, &after.reg);
    let ours = |e: &String| {
        wine_noise(e)
            || e.starts_with(r"user.reg [Software\\Microsoft\\Windows\\CurrentVersion\\Uninstall")
            || e.starts_with(r#"user.reg [Environment] "Path"="#)
    };
    let stray: Vec<_> = added.iter().chain(&removed).filter(|e| !ours(e)).collect();
    assert!(stray.is_empty(), "setup wrote elsewhere: {stray:#?}");

    // The PATH: the long value whole, the CLI's folder appended once.
    let (ty, path) = b.reg(r"HKCU\Environment", "Path").unwrap();
    assert_eq!(ty, "REG_EXPAND_SZ");
    assert_eq!(
        path,
        format!(r"{long};{dir}\bin"),
        "not truncated, appended"
    );

    let (code, out) = cli_from_path(&b, &path, &["--version"]);
    assert_eq!(
        (code, out.trim()),
        (0, format!("debugtop-cli {}", version()).as_str())
    );

    // The installed CLI audits the real server on Windows node, from the PATH, and finds the
    // seed's leak: a worker of a session its live owner never created.
    let server = WinServer::start(&b.wine);
    let (_harness, worker, leaked) = seed_bug_stand_in(&b.wine, server.pid, server.dir.path());
    let t = Instant::now();
    let (code, doc) = wait_for(Duration::from_secs(90), || {
        let (code, out) = cli_from_path(&b, &path, &["audit", "--json"]);
        let doc: Value = serde_json::from_str(&out).ok()?;
        let found = doc["findings"]
            .as_array()?
            .iter()
            .any(|f| f["kind"] == "leaked-worker" && f["pids"] == json!([worker]));
        found.then_some((code, doc))
    })
    .expect("the installed CLI finds the stand-in as a leaked worker");
    eprintln!(
        "installer: the installed CLI's audit found the leak in {:.1?}",
        t.elapsed()
    );
    assert_eq!(code, 1, "an audit with a finding exits 1: {doc:#}");
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "leaked-worker")
        .unwrap();
    assert_eq!(f["session_id"], leaked.as_str(), "{f:#}");
}

#[test]
fn an_upgrade_keeps_the_settings_and_the_uninstaller_leaves_the_prefix_as_it_was() {
    let _one = one_at_a_time();
    let b = Machine::new();
    let kit = kit();
    let user = user_dir(&b);
    let long = long_path();
    b.reg_set_path(r"HKCU\Environment", &long);
    // The user's settings, which neither setup nor the uninstaller may touch.
    let settings = b.host(&format!(r"{user}\AppData\Roaming\dev.debugtop.app"));
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("settings.json"),
        r#"{"version":1,"interval_ms":2500}"#,
    )
    .unwrap();
    std::fs::write(settings.join("window-state.json"), "{}").unwrap();
    let stamp = |f: &str| {
        let p = settings.join(f);
        (
            std::fs::read(&p).unwrap(),
            std::fs::metadata(&p).unwrap().modified().unwrap(),
        )
    };
    let kept = [stamp("settings.json"), stamp("window-state.json")];
    let before = b.state();

    let (code, took) = b.setup(&kit.setup_old, &["/S"]);
    eprintln!("installer: per-user install of {OLD} in {took:.1?}");
    assert_eq!(code, 0);
    let dir = format!(r"{user}\AppData\Local\Programs\debugtop");
    let shortcut =
        format!(r"{user}\AppData\Roaming\Microsoft\Windows\Start Menu\Programs\debugtop.lnk");
    assert_installed(&b, "HKCU", &dir, OLD, &shortcut);

    let (code, took) = b.setup(&kit.setup, &["/S"]);
    eprintln!("installer: upgrade to {} in {took:.1?}", version());
    assert_eq!(code, 0);
    assert_installed(&b, "HKCU", &dir, &version(), &shortcut);
    let path = b.reg(r"HKCU\Environment", "Path").unwrap().1;
    assert_eq!(
        path,
        format!(r"{long};{dir}\bin"),
        "one entry after the upgrade"
    );
    assert_eq!(
        [stamp("settings.json"), stamp("window-state.json")],
        kept,
        "the settings are untouched"
    );

    let took = uninstall(&b, "HKCU");
    eprintln!("installer: per-user uninstall (and Wine's reboot) in {took:.1?}");
    assert_as_before(&before, &b.state(), "after the uninstall");
    assert_eq!(
        [stamp("settings.json"), stamp("window-state.json")],
        kept,
        "the settings stay after the uninstall"
    );
}

#[test]
fn a_path_entry_there_before_stays_and_a_machine_wide_install_is_undone_too() {
    let _one = one_at_a_time();
    let b = Machine::new();
    let kit = kit();
    let user = user_dir(&b);
    // The folder is already on the user's PATH (a manual install once, a colleague's script).
    let dir = r"C:\Tools\debugtop";
    let with_entry = format!(r"C:\pre;{dir}\bin;C:\post");
    b.reg_set_path(r"HKCU\Environment", &with_entry);
    let before = b.state();

    let target = format!("/D={dir}");
    let (code, _) = b.setup(&kit.setup, &["/S", &target]);
    assert_eq!(code, 0);
    let shortcut =
        format!(r"{user}\AppData\Roaming\Microsoft\Windows\Start Menu\Programs\debugtop.lnk");
    assert_installed(&b, "HKCU", dir, &version(), &shortcut);
    assert_eq!(
        b.reg(r"HKCU\Environment", "Path").unwrap().1,
        with_entry,
        "an entry already there is not added again"
    );
    assert!(b
        .reg(&format!(r"HKCU\{UNINSTALL_KEY}"), "PathEntry")
        .is_none());
    uninstall(&b, "HKCU");
    assert_eq!(
        b.reg(r"HKCU\Environment", "Path").unwrap().1,
        with_entry,
        "the entry that was there before stays"
    );
    assert_as_before(&before, &b.state(), "after the /D= install's uninstall");

    // For the machine: Program Files, the common Start menu, HKLM, the machine's PATH (Wine
    // runs everything as an administrator, so no elevation is asked for).
    let machine_path = b.reg(MACHINE_ENVIRONMENT, "Path").unwrap();
    let (code, took) = b.setup(&kit.setup, &["/S", "/ALLUSERS"]);
    eprintln!("installer: /ALLUSERS silent install in {took:.1?}");
    assert_eq!(code, 0);
    let dir = r"C:\Program Files\debugtop";
    let shortcut = r"C:\ProgramData\Microsoft\Windows\Start Menu\Programs\debugtop.lnk";
    assert_installed(&b, "HKLM", dir, &version(), shortcut);
    assert!(b
        .reg(&format!(r"HKCU\{UNINSTALL_KEY}"), "DisplayName")
        .is_none());
    assert_eq!(
        b.reg(MACHINE_ENVIRONMENT, "Path").unwrap(),
        (
            machine_path.0.clone(),
            format!(r"{};{dir}\bin", machine_path.1)
        ),
        "the machine's PATH, unexpanded, with the folder appended"
    );
    assert_eq!(
        b.reg(r"HKCU\Environment", "Path").unwrap().1,
        with_entry,
        "the user's PATH is not the machine install's"
    );
    let took = uninstall(&b, "HKLM");
    eprintln!("installer: /ALLUSERS uninstall (and Wine's reboot) in {took:.1?}");
    assert_as_before(&before, &b.state(), "after the /ALLUSERS uninstall");
}
