//! Redaction: secrets never leave the machine by accident.
//!
//! Applied to argv wherever it leaves the core (snapshots, the UI). The debugpy debuggee carries
//! `--adapter-access-token <secret>`; other tools pass tokens and passwords the same way. A
//! bottom layer: it knows the model's shape and nothing else.

use crate::model::{NodeKind, Snapshot, TreeNode};

/// What replaces a secret.
pub const REDACTED: &str = "‹redacted›";

/// Does an option or variable name look like it carries a secret?
fn secret_name(name: &str) -> bool {
    let n = name
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace('_', "-");
    [
        "token",
        "secret",
        "password",
        "passwd",
        "api-key",
        "apikey",
        "auth",
        "credential",
        "private-key",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// Redacts secret values in a command line: `--token X`, `--token=X`, `SECRET_KEY=X`, and the
/// password part of `scheme://user:password@host`.
pub fn redact_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut hide_next = false;
    for a in argv {
        if hide_next {
            out.push(REDACTED.to_owned());
            hide_next = false;
            continue;
        }
        if let Some((name, _)) = a.split_once('=') {
            if secret_name(name) && !name.contains('/') {
                out.push(format!("{name}={REDACTED}"));
                continue;
            }
        }
        if a.starts_with('-') && secret_name(a) {
            hide_next = true;
        }
        out.push(redact_url_password(a));
    }
    out
}

/// `https://user:pw@host/…` → `https://user:‹redacted›@host/…`.
fn redact_url_password(a: &str) -> String {
    let Some(scheme_end) = a.find("://") else {
        return a.to_owned();
    };
    let rest = &a[scheme_end + 3..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return a.to_owned();
    };
    let Some(colon) = authority[..at].find(':') else {
        return a.to_owned();
    };
    format!(
        "{}{}:{REDACTED}{}",
        &a[..scheme_end + 3],
        &authority[..colon],
        &rest[at..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn debugpy_token_is_hidden() {
        let argv =
            v("python /d/debugpy --connect 127.0.0.1:5 --adapter-access-token 8f3a9c app.py");
        let r = redact_argv(&argv);
        assert!(!r.join(" ").contains("8f3a9c"));
        assert_eq!(r[5], REDACTED);
        assert_eq!(r[6], "app.py");
    }

    #[test]
    fn other_forms() {
        let r = redact_argv(&v(
            "x --api-key=abc API_TOKEN=def --password pw https://u:pw2@h/p --port 3",
        ));
        let j = r.join(" ");
        for s in ["abc", "def", " pw ", "pw2"] {
            assert!(!j.contains(s), "{s} leaked in {j}");
        }
        assert!(j.contains("--port 3") && j.contains("https://u:‹redacted›@h/p"));
    }

    #[test]
    fn ordinary_argv_untouched() {
        let argv = v("node /p/proxy-bootstrap.js --mcp-owner-pid=1 --mcp-session-id=abc");
        assert_eq!(redact_argv(&argv), argv);
    }
}

/// The user's home directory, if known (shown as `~`).
pub fn home_dir() -> Option<String> {
    std::env::var("HOME")
        .ok()
        .filter(|h| h.len() > 1 && h.starts_with('/'))
}

/// Redacts free text (a log line, a path): `key=value` / `"key":"value"` secrets, bearer
/// tokens, long token-like runs, and the home directory as `~`.
pub fn redact_text(s: &str, home: Option<&str>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(&redact_word(word));
        word.clear();
    };
    let mut hide_next = false;
    for c in s.chars() {
        if c.is_whitespace() || c == ',' || c == '"' || c == '\'' {
            if hide_next && !word.is_empty() && !word.eq_ignore_ascii_case("bearer") {
                word.clear();
                word.push_str(REDACTED);
                hide_next = false;
            } else if word.eq_ignore_ascii_case("bearer")
                || (word.ends_with(':') && secret_name(word.trim_end_matches(':')))
            {
                hide_next = true;
            }
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    if hide_next && !word.is_empty() {
        word.clear();
        word.push_str(REDACTED);
    }
    flush(&mut word, &mut out);
    match home {
        Some(h) => out.replace(&format!("{h}/"), "~/"),
        None => out,
    }
}

/// One whitespace-free word of free text.
fn redact_word(w: &str) -> String {
    if let Some((k, v)) = w.split_once('=') {
        if secret_name(k) && !v.is_empty() {
            return format!("{k}={REDACTED}");
        }
    }
    if token_like(w) {
        return REDACTED.to_owned();
    }
    redact_url_password(w)
}

/// A long run of token characters with digits and letters mixed (hex or base64 secrets),
/// that is not a path or a UUID (session ids are not secrets).
fn token_like(w: &str) -> bool {
    let w = w.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if w.len() < 32 || w.contains('/') {
        return false;
    }
    let uuid = w.len() == 36 && w.chars().filter(|c| *c == '-').count() == 4;
    let tokenish = w
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '.'));
    let digits = w.chars().any(|c| c.is_ascii_digit());
    let letters = w.chars().any(|c| c.is_ascii_alphabetic());
    tokenish && digits && letters && !uuid
}

/// Redacts a whole snapshot in place: argv, process labels, marker paths, findings, plans;
/// `home` is shown as `~`.
pub fn redact_snapshot(s: &mut Snapshot, home: Option<&str>) {
    let h = home;
    let path = |p: &str| redact_text(p, h);
    for p in &mut s.processes {
        p.argv = redact_argv(&p.argv).into_iter().map(|a| path(&a)).collect();
        if let Some(d) = &mut p.markers.debugpy_log_dir {
            *d = path(d);
        }
    }
    fn tree(nodes: &mut [TreeNode], h: Option<&str>) {
        for n in nodes {
            if n.kind == NodeKind::Process {
                let argv: Vec<String> = n.label.split(' ').map(str::to_owned).collect();
                n.label = redact_argv(&argv)
                    .into_iter()
                    .map(|a| redact_text(&a, h))
                    .collect::<Vec<_>>()
                    .join(" ");
            }
            tree(&mut n.children, h);
        }
    }
    tree(&mut s.tree, h);
    for srv in &mut s.servers {
        srv.log_file = srv.log_file.as_deref().map(path);
        srv.pkg_dir = srv.pkg_dir.as_deref().map(path);
    }
    for f in &mut s.findings {
        for e in &mut f.evidence {
            *e = path(e);
        }
        if let Some(plan) = &mut f.plan {
            for t in &mut plan.targets {
                t.argv = t.argv.iter().map(|a| path(a)).collect();
            }
        }
    }
    for x in &mut s.log_excerpts {
        x.file = path(&x.file);
        for l in &mut x.lines {
            *l = path(l);
        }
    }
    s.redacted = true;
}

#[cfg(test)]
mod text_tests {
    use super::*;

    #[test]
    fn free_text_secrets_and_home() {
        let line = r#"{"message":"connect token=abc123 Authorization: Bearer eyJhbGciOiJIUzI1NiJ9xyz api_key=k9 at /root/x/app.py","sessionId":"b85b4926-1c2d-4e5f-8a9b-0c1d2e3f4a5b"}"#;
        let r = redact_text(line, Some("/root"));
        for leaked in ["abc123", "eyJhbGciOiJIUzI1NiJ9xyz", "=k9"] {
            assert!(!r.contains(leaked), "{leaked} leaked: {r}");
        }
        assert!(r.contains("~/x/app.py"), "{r}");
        assert!(
            r.contains("b85b4926-1c2d-4e5f-8a9b-0c1d2e3f4a5b"),
            "session ids are kept: {r}"
        );
        let hex = "a".repeat(20) + &"1".repeat(20);
        assert_eq!(
            redact_text(&format!("x {hex} y"), None),
            format!("x {REDACTED} y")
        );
    }
}
