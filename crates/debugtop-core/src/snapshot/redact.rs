//! Redaction: secrets never leave the machine by accident.
//!
//! Applied to argv wherever it leaves the core (snapshots, the UI). The debugpy debuggee carries
//! `--adapter-access-token <secret>`; other tools pass tokens and passwords the same way.

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
