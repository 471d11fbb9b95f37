//! What a word or an option's name says: whether it names a secret (`--token`, `API_KEY`,
//! `--accessKey`), whether it is a port, a user:password pair, or mysql's `-pSECRET`. Shared by
//! the command-line and the free-text redaction.

use super::REDACTED;

/// Does an option or variable name look like it carries a secret? By its words (split on `-`,
/// `_` and `.`, and where a lower-case letter meets an upper-case one: `accessKey`), any case,
/// so `--adapter-access-token`, `API_KEY`, `--accessKey`, `--privateKey`, `X-Auth-Token`,
/// `--pass`, `-pw` and `--requirepass` count and `--bypass-cache`, `--keyboard`, `--hotkeys` or
/// `--keep-alive` do not.
pub(super) fn secret_name(name: &str) -> bool {
    const WORDS: [&str; 19] = [
        "token",
        "passphrase",
        "bearer",
        "secret",
        "password",
        "passwd",
        "pass",
        "pw",
        "pwd",
        "key",
        "apikey",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "sig",
        "signature",
        "pat",
    ];
    const INSIDE: [&str; 5] = ["token", "secret", "password", "apikey", "credential"];
    name_words(name.trim_start_matches('-')).any(|w| {
        WORDS.contains(&w.as_str()) || INSIDE.iter().any(|i| w.contains(i)) || ends_in_pass(&w)
    })
}

/// A name's words, lower-case: split on `-`, `_`, `.` and at each lower-to-upper case change.
fn name_words(name: &str) -> impl Iterator<Item = String> + '_ {
    name.split(['-', '_', '.']).flat_map(|part| {
        let mut words = Vec::new();
        let mut word = String::new();
        let mut lower_before = false;
        for c in part.chars() {
            if c.is_uppercase() && lower_before && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            lower_before = c.is_lowercase() || c.is_ascii_digit();
            word.extend(c.to_lowercase());
        }
        words.push(word);
        words
    })
}

/// A word that ends in a password's name (`requirepass`, `masterpass`, `dbpasswd`,
/// `adminpwd`) but is not one of the ordinary words that end so.
fn ends_in_pass(w: &str) -> bool {
    const ORDINARY: [&str; 8] = [
        "bypass",
        "compass",
        "encompass",
        "overpass",
        "underpass",
        "surpass",
        "trespass",
        "impass",
    ];
    ["pass", "passwd", "pwd"]
        .iter()
        .any(|end| w.len() > end.len() && w.ends_with(end))
        && !ORDINARY.iter().any(|o| w.ends_with(o))
}

/// `-pVALUE` (mysql's password form) and `-PVALUE`: the option (`-p` or `-P`) when the rest is
/// to be hidden — not a port, nor (after `-p`) a short all-letters option such as find's
/// `-print`.
pub(super) fn attached_p_secret(w: &str) -> Option<&'static str> {
    let value = |v: &str| !v.is_empty() && !v.starts_with('-') && !v.contains('=') && !port_like(v);
    if let Some(v) = w.strip_prefix("-p") {
        let letters = v.len() < 8 && v.chars().all(|c| c.is_ascii_alphabetic());
        return (value(v) && !letters).then_some("-p");
    }
    w.strip_prefix("-P").filter(|v| value(v)).map(|_| "-P")
}

/// Options whose value is `user:password` (curl's `-u`, `--user`): the part after the colon
/// is hidden.
pub(super) fn user_flag(w: &str) -> bool {
    matches!(w, "-u" | "--user" | "--proxy-user" | "-U")
}

/// `alice:SECRET` → `alice:‹redacted›`, when the value has a colon.
pub(super) fn hide_password_of_user(w: &str) -> Option<String> {
    let (user, _) = w.split_once(':')?;
    Some(format!("{user}:{REDACTED}"))
}

/// `-p` is a port for mcp-debugger (`http -p 3001`) and a password for others (`mysql -pX`):
/// a value of at most five digits is a port; anything else is hidden.
pub(super) fn port_like(v: &str) -> bool {
    !v.is_empty() && v.len() <= 5 && v.bytes().all(|b| b.is_ascii_digit())
}

/// `https://user:pw@host/…` → `https://user:‹redacted›@host/…`.
pub(super) fn redact_url_password(a: &str) -> String {
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

/// `-uuser:password` (curl's `-u` with its value attached): the password hidden.
pub(super) fn attached_user(a: &str) -> Option<String> {
    let rest = a.strip_prefix("-u").or_else(|| a.strip_prefix("-U"))?;
    let (user, pw) = rest.split_once(':')?;
    (!user.is_empty() && !pw.is_empty()).then(|| format!("{}{user}:{REDACTED}", &a[..2]))
}
