//! A command line's secrets, argument by argument: the value after a secret flag
//! (`--token X`, even `X Y` as one argument), `--token=X`, `SECRET_KEY=X`, `-pX`,
//! `-u user:password`, and a URL's password; every argument then as free text.

use super::text::redact_text;
use super::words::{
    attached_p_secret, attached_user, hide_password_of_user, port_like, secret_name, user_flag,
};
use super::REDACTED;

/// Redacts secret values in a command line: `--token X` (the whole next argument, whatever
/// it holds, even a value that starts with `-`; a long option after a secret flag is an option,
/// not its value), `--token=X`, `SECRET_KEY=X`, `-pX` and `-p X` unless a port, `-u user:pw`
/// and `-uuser:pw`, and the password part of `scheme://user:password@host`; then every
/// argument as free text.
pub fn redact_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut next = Next::default();
    for a in argv {
        let long_option = a.starts_with("--") && a.len() > 2;
        let expected = std::mem::take(&mut next);
        if (expected.hide || (expected.port && !port_like(a))) && !long_option {
            out.push(REDACTED.to_owned());
            // A short option taken as a value still says what comes after it.
            next = Next::after_option(a);
            continue;
        }
        if expected.user && !a.starts_with('-') {
            if let Some(hidden) = hide_password_of_user(a) {
                out.push(hidden);
                continue;
            }
        }
        if let Some(hidden) = hidden_in_word(a) {
            out.push(hidden);
            continue;
        }
        next = Next::after_option(a);
        // `--token --verbose X`: which of them is the token cannot be told; X is hidden.
        next.hide |= expected.hide && long_option;
        out.push(redact_text(a, None));
    }
    out
}

/// What an argument says of the one after it.
#[derive(Debug, Default, Clone, Copy)]
struct Next {
    /// A secret flag: hide it.
    hide: bool,
    /// `-p`: hide it unless a port.
    port: bool,
    /// `-u`: hide the password of `user:password`.
    user: bool,
}

impl Next {
    fn after_option(a: &str) -> Self {
        let option = a.starts_with('-') && a.len() > 1 && !a.contains('=');
        Self {
            hide: option && a != "-p" && secret_name(a),
            port: a == "-p",
            user: user_flag(a),
        }
    }
}

/// An argument whose own text holds its secret: `--token=X`, `API_KEY=X`, `-pX`, `-uuser:pw`,
/// `--user=user:pw`.
fn hidden_in_word(a: &str) -> Option<String> {
    if let Some((name, value)) = a.split_once('=') {
        if secret_name(name) && !name.contains('/') {
            return Some(format!("{name}={REDACTED}"));
        }
        if user_flag(name) {
            return hide_password_of_user(value).map(|v| format!("{name}={v}"));
        }
    }
    if let Some(opt) = attached_p_secret(a) {
        return Some(format!("{opt}{REDACTED}"));
    }
    attached_user(a)
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
        assert!(
            j.contains("--port 3") && j.contains("https://‹redacted›@h/p"),
            "{j}"
        );
    }

    #[test]
    fn forms_the_review_of_stop_40_found_are_hidden_argument_by_argument() {
        let cases: [&[&str]; 10] = [
            &["curl", "-ualice:Zqa1", "h"],
            &["redis-server", "--requirepass", "Zqa2"],
            &["x", "--accessKey", "Zqa3", "--privateKey", "Zqa4"],
            &["curl", "-H", "X-Auth-Token:Zqa5"],
            &["x", r#"{\"token\":\"Zqa6\"}"#],
            &["x", "password:Zqa7"],
            &["x", "{'password': 'Zqa8'}"],
            &["x", "--password", "-Zqa9"],
            &["x", "--password=alpha Zqb1", "--token", "x Zqb2"],
            &["x", "--password", "alpha Zqb3", "--user=bob:Zqb4"],
        ];
        for argv in cases {
            let argv: Vec<String> = argv.iter().map(|s| (*s).to_owned()).collect();
            let r = redact_argv(&argv).join(" ");
            assert!(!r.contains("Zq"), "{r} (from {argv:?})");
        }
    }

    #[test]
    fn ordinary_argv_untouched() {
        for line in [
            "node /p/proxy-bootstrap.js --mcp-owner-pid=1 --mcp-session-id=abc",
            "node cli.mjs http -p 3001 --log-file /tmp/s.log",
            "python -u server.py --bypass-cache --keyboard us",
            "ssh -u 1 -p 22 host:/srv",
        ] {
            let argv = v(line);
            assert_eq!(redact_argv(&argv), argv);
        }
    }
}
