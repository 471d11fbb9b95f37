//! Parsers for the raw bytes of `/proc/<pid>/cmdline` and `/proc/<pid>/environ`.
//!
//! Everything a process exposes is untrusted: it may be huge, not UTF-8, or shaped to confuse us.
//! These functions are pure, never panic, and bound what they keep.

use debugtop_model::{parse_pid, session_id, EnvMarkers, HostKind};

/// The most argv we keep per process. Longer command lines are cut (and marked) so one hostile
/// process cannot make every snapshot huge.
pub const MAX_ARGV_BYTES: usize = 64 * 1024;
/// The most arguments we keep per process.
pub const MAX_ARGS: usize = 1024;
/// The longest environment value we look at.
const MAX_ENV_VALUE: usize = 16 * 1024;

/// Splits a NUL-separated command line into arguments, replacing invalid UTF-8, dropping the
/// trailing empty piece, and bounding size and count. An empty or NUL-only buffer gives `[]`
/// (that is what a zombie or a kernel thread shows).
pub fn parse_cmdline(raw: &[u8]) -> Vec<String> {
    if raw.iter().all(|b| *b == 0) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut budget = MAX_ARGV_BYTES;
    let trimmed = raw.strip_suffix(&[0]).unwrap_or(raw);
    for piece in trimmed.split(|b| *b == 0) {
        if out.len() == MAX_ARGS || budget == 0 {
            out.push("…(truncated)".to_owned());
            break;
        }
        let take = piece.len().min(budget);
        let s = if take < piece.len() {
            cut_argument(piece, take)
        } else {
            String::from_utf8_lossy(piece).into_owned()
        };
        budget -= take;
        out.push(s);
    }
    out
}

/// An argument cut to `bytes`, marked: redacted first when it holds a secret, so the cut never
/// keeps part of one below what would recognise it.
fn cut_argument(piece: &[u8], bytes: usize) -> String {
    let whole = String::from_utf8_lossy(piece);
    let cut = debugtop_redact::bounded(&whole, bytes);
    let mut end = cut.len().min(bytes);
    while !cut.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…(truncated)", cut[..end].trim_end_matches('…'))
}

/// Extracts only the markers debugtop cares about from a NUL-separated environment. Entries
/// without `=`, values that do not parse, and everything else are ignored; nothing else is kept.
pub fn parse_env_markers(raw: &[u8]) -> EnvMarkers {
    let mut m = EnvMarkers::default();
    for entry in raw.split(|b| *b == 0) {
        let Some(eq) = entry.iter().position(|b| *b == b'=') else {
            continue;
        };
        let (key, value) = (&entry[..eq], &entry[eq + 1..]);
        if value.len() > MAX_ENV_VALUE {
            continue;
        }
        let value = String::from_utf8_lossy(value);
        match key {
            b"MCP_DEBUGGER_MAIN_PID" => m.main_pid = parse_pid(&value),
            b"DEBUGPY_LOG_DIR" if !value.is_empty() => m.debugpy_log_dir = Some(value.into_owned()),
            b"NODE_INSPECTOR_INFO" => m.inspector_pid = inspector_pid(&value),
            b"NODE_OPTIONS" => m.js_bootloader = value.contains("bootloader.js"),
            b"VSCODE_INSPECTOR_OPTIONS" => m.js_inspector = !value.is_empty(),
            b"OPENCODE" | b"OPENCODE_PID" => m.host = Some(HostKind::Opencode),
            b"CLAUDECODE" | b"CLAUDE_CODE_ENTRYPOINT" => m.host = Some(HostKind::ClaudeCode),
            _ => {}
        }
    }
    m
}

/// The `"pid"` field of js-debug's `NODE_INSPECTOR_INFO` JSON (a string or a number).
fn inspector_pid(json: &str) -> Option<u32> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    match v.get("pid")? {
        serde_json::Value::String(s) => parse_pid(s),
        serde_json::Value::Number(n) => n.as_u64().and_then(|n| parse_pid(&n.to_string())),
        _ => None,
    }
}

/// The session id inside a `…/sessions/<id>/run-…` path (debugpy's `DEBUGPY_LOG_DIR`).
pub fn session_from_run_dir(path: &str) -> Option<String> {
    let mut parts = path.split('/');
    while let Some(p) = parts.next() {
        if p == "sessions" {
            return parts.next().and_then(session_id);
        }
    }
    None
}

/// The value of a `--name=value` or `--name value` option, first occurrence.
pub fn option_value<'a>(args: &'a [String], names: &[&str]) -> Option<&'a str> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        for name in names {
            if a == name {
                return it.next().map(String::as_str);
            }
            if let Some(rest) = a.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
                return Some(rest);
            }
        }
    }
    None
}

/// The last path component of an argument (`/usr/bin/node` → `node`; `C:\\x\\node.exe` →
/// `node.exe`).
pub fn basename(s: &str) -> &str {
    s.rsplit(['/', '\\']).next().unwrap_or(s)
}

/// The (port, owning pid) rows of a Windows `MIB_TCPTABLE_OWNER_PID` or
/// `MIB_TCP6TABLE_OWNER_PID` as `GetExtendedTcpTable` fills it: a little-endian row count,
/// then rows of `row` bytes with the local port (network order) at `port_at` and the pid
/// (little-endian) at `pid_at`. A count past the buffer stops at the last whole row.
pub fn tcp_owner_table(bytes: &[u8], row: usize, port_at: usize, pid_at: usize) -> Vec<(u16, u32)> {
    let n = bytes
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, |b| u32::from_le_bytes(b) as usize);
    let mut out = Vec::new();
    for i in 0..n {
        let at = 4 + i * row;
        let (Some(p), Some(o)) = (
            bytes.get(at + port_at..at + port_at + 2),
            bytes.get(at + pid_at..at + pid_at + 4),
        ) else {
            break;
        };
        out.push((
            u16::from_be_bytes([p[0], p[1]]),
            u32::from_le_bytes([o[0], o[1], o[2], o[3]]),
        ));
    }
    out
}

/// The fields of `/proc/<pid>/stat` the collector needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatFields {
    /// Field 1.
    pub pid: u32,
    /// Field 3.
    pub state: char,
    /// Field 4.
    pub ppid: u32,
    /// Field 5.
    pub pgrp: u32,
    /// Field 6.
    pub session: u32,
    /// Field 14.
    pub utime: u64,
    /// Field 15.
    pub stime: u64,
    /// Field 22.
    pub starttime: u64,
    /// Field 24 (pages).
    pub rss: u64,
}

/// Parses `/proc/<pid>/stat` without allocating. The command name (field 2) may hold spaces and
/// parentheses, so fields are counted from the *last* `)` (proc(5)). `None` for anything that
/// does not have the shape.
pub fn parse_stat(raw: &[u8]) -> Option<StatFields> {
    let open = raw.iter().position(|b| *b == b'(')?;
    let close = raw.iter().rposition(|b| *b == b')')?;
    let pid = std::str::from_utf8(raw.get(..open)?)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let rest = std::str::from_utf8(raw.get(close + 2..)?).ok()?;
    let mut f = rest.split(' ');
    let state = f.next()?.chars().next()?;
    let mut nth = |skip: usize| -> Option<u64> {
        for _ in 0..skip {
            f.next()?;
        }
        let v = f.next()?;
        // Signed kernel fields (ppid of pid 0…) never go negative for real processes.
        v.trim_end().parse::<i64>().ok().map(|x| x.max(0) as u64)
    };
    // After the state: ppid(1) pgrp(2) session(3) … utime(11) stime(12) … starttime(19) … rss(21).
    let ppid = nth(0)?;
    let pgrp = nth(0)?;
    let session = nth(0)?;
    let utime = nth(7)?;
    let stime = nth(0)?;
    let starttime = nth(6)?;
    let rss = nth(1)?;
    Some(StatFields {
        pid,
        state,
        ppid: u32::try_from(ppid).ok()?,
        pgrp: u32::try_from(pgrp).ok()?,
        session: u32::try_from(session).ok()?,
        utime,
        stime,
        starttime,
        rss,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_splits_on_nul_and_drops_trailing() {
        assert_eq!(
            parse_cmdline(b"node\0a.js\0--x=1\0"),
            ["node", "a.js", "--x=1"]
        );
        assert_eq!(parse_cmdline(b"node\0\0a\0"), ["node", "", "a"]);
        assert_eq!(parse_cmdline(b"no-trailing-nul"), ["no-trailing-nul"]);
    }

    #[test]
    fn cmdline_empty_and_nul_only_give_nothing() {
        assert!(parse_cmdline(b"").is_empty());
        assert!(parse_cmdline(b"\0").is_empty());
        assert!(parse_cmdline(&[0u8; 4096]).is_empty());
    }

    #[test]
    fn cmdline_invalid_utf8_is_replaced_not_fatal() {
        let argv = parse_cmdline(b"node\0\xff\xfe\x80bad\0ok\0");
        assert_eq!(argv.len(), 3);
        assert_eq!(argv[1], "\u{fffd}\u{fffd}\u{fffd}bad");
        assert_eq!(argv[2], "ok");
    }

    #[test]
    fn cmdline_100kb_argv_is_bounded() {
        let mut raw = b"node\0".to_vec();
        raw.extend(std::iter::repeat_n(b'a', 100 * 1024));
        raw.push(0);
        raw.extend_from_slice(b"tail\0");
        let argv = parse_cmdline(&raw);
        let total: usize = argv.iter().map(String::len).sum();
        assert!(total <= MAX_ARGV_BYTES + 64, "kept {total} bytes");
        assert!(argv[1].ends_with("…(truncated)"));
    }

    #[test]
    fn cmdline_many_args_is_bounded() {
        let raw = "x\0".repeat(10_000);
        let argv = parse_cmdline(raw.as_bytes());
        assert_eq!(argv.len(), MAX_ARGS + 1);
    }

    #[test]
    fn env_markers_are_the_only_thing_kept() {
        let raw = b"PATH=/bin\0MCP_DEBUGGER_MAIN_PID=4242\0SECRET=hunter2\0\
DEBUGPY_LOG_DIR=/tmp/x/sessions/b85b4926-aa/run-1\0NODE_OPTIONS=--require /x/js-debug/src/bootloader.js\0\
NODE_INSPECTOR_INFO={\"ipcAddress\":\"/tmp/s\",\"pid\":\"777\"}\0";
        let m = parse_env_markers(raw);
        assert_eq!(m.main_pid, Some(4242));
        assert_eq!(
            m.debugpy_log_dir.as_deref(),
            Some("/tmp/x/sessions/b85b4926-aa/run-1")
        );
        assert_eq!(m.inspector_pid, Some(777));
        assert!(m.js_bootloader);
        assert!(!format!("{m:?}").contains("hunter2"));
    }

    #[test]
    fn env_hostile_entries_are_ignored() {
        let m = parse_env_markers(b"MCP_DEBUGGER_MAIN_PID\0=\0MCP_DEBUGGER_MAIN_PID=-5\0");
        assert_eq!(m.main_pid, None);
        let m = parse_env_markers(b"MCP_DEBUGGER_MAIN_PID=12abc\0NODE_INSPECTOR_INFO={not json\0");
        assert_eq!(m, EnvMarkers::default());
        let m = parse_env_markers(b"\xff\xfe=1\0MCP_DEBUGGER_MAIN_PID=\xff\0");
        assert_eq!(m, EnvMarkers::default());
        let m = parse_env_markers(b"NODE_INSPECTOR_INFO={\"pid\":12}\0");
        assert_eq!(m.inspector_pid, Some(12));
    }

    #[test]
    fn pid_parsing_rejects_everything_odd() {
        for bad in [
            "",
            "-1",
            "+1",
            "0",
            "1.5",
            "abc",
            "99999999999",
            "4294967296",
            "5000000",
            " ",
        ] {
            assert_eq!(parse_pid(bad), None, "{bad:?}");
        }
        assert_eq!(parse_pid("1"), Some(1));
        assert_eq!(parse_pid(" 4242 "), Some(4242));
    }

    #[test]
    fn session_ids_are_validated() {
        assert_eq!(session_id("b85b4926-aa"), Some("b85b4926-aa".into()));
        assert_eq!(session_id(""), None);
        assert_eq!(session_id("../../etc"), None);
        assert_eq!(session_id("<img>"), None);
        assert_eq!(session_id(&"a".repeat(129)), None);
        assert_eq!(
            session_from_run_dir("/l/sessions/abc-1/run-17"),
            Some("abc-1".into())
        );
        assert_eq!(session_from_run_dir("/l/sessions"), None);
        assert_eq!(session_from_run_dir("/nothing/here"), None);
    }

    #[test]
    fn options_both_forms() {
        let a: Vec<String> = ["x", "-p", "3901", "--log-file=/l/s.log"]
            .map(String::from)
            .into();
        assert_eq!(option_value(&a, &["-p", "--port"]), Some("3901"));
        assert_eq!(option_value(&a, &["--log-file"]), Some("/l/s.log"));
        assert_eq!(option_value(&a, &["--missing"]), None);
        let dangling: Vec<String> = ["x", "--port"].map(String::from).into();
        assert_eq!(option_value(&dangling, &["--port"]), None);
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(raw in proptest::collection::vec(proptest::num::u8::ANY, 0..2048)) {
            let _ = parse_cmdline(&raw);
            let _ = parse_env_markers(&raw);
            let _ = session_from_run_dir(&String::from_utf8_lossy(&raw));
        }
    }

    #[test]
    fn stat_of_a_real_process_parses() {
        let raw = std::fs::read("/proc/self/stat").unwrap_or_default();
        let s = parse_stat(&raw).expect("own stat");
        assert_eq!(s.pid, std::process::id());
        assert!(s.starttime > 0);
    }

    #[test]
    fn hostile_comm_with_spaces_and_parens() {
        let raw = b"4242 (evil) ) R 1 (x) 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22) S 100 4242 4242 34816 4242 4194560 100 0 0 0 7 3 0 0 20 0 1 0 5555 1000000 250 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        let s = parse_stat(raw).expect("parsed from the last paren");
        assert_eq!(
            (s.pid, s.state, s.ppid, s.pgrp, s.session),
            (4242, 'S', 100, 4242, 4242)
        );
        assert_eq!((s.utime, s.stime, s.starttime, s.rss), (7, 3, 5555, 250));
    }

    #[test]
    fn malformed_stat_is_none() {
        for raw in [
            &b""[..],
            b"12",
            b"12 (x",
            b"12 (x) ",
            b"abc (x) S 1 2 3",
            b"12 (x) S 1 2",
            b"\xff (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22",
        ] {
            assert_eq!(parse_stat(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn a_windows_tcp_owner_table_gives_ports_and_pids_and_stops_at_its_end() {
        // Two IPv4 rows (24 bytes: state, local addr, local port, remote addr, remote port,
        // pid), listening on 39778 (pid 32) and 443 (pid 4); the count says three.
        let mut t = 3u32.to_le_bytes().to_vec();
        for (port, pid) in [(39778u16, 32u32), (443, 4)] {
            let mut row = vec![0u8; 24];
            row[8..10].copy_from_slice(&port.to_be_bytes());
            row[20..24].copy_from_slice(&pid.to_le_bytes());
            t.extend(row);
        }
        assert_eq!(tcp_owner_table(&t, 24, 8, 20), vec![(39778, 32), (443, 4)]);
        assert!(tcp_owner_table(&[], 24, 8, 20).is_empty());
        assert!(tcp_owner_table(&[1, 0], 24, 8, 20).is_empty());
    }
}
