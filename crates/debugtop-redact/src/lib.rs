//! Redaction: secrets never leave the machine by accident.
//!
//! One redaction for everything that leaves the core (snapshots, exports, the window, the CLI's
//! JSON): a command line argument by argument ([`redact_argv`]: which words were one argument
//! is known), anything else as free text ([`redact_text`]), a whole document through its
//! serialised form ([`redact_snapshot`], [`redact_serde`]). Text made *from* a command line
//! (a tree label, a finding's sentence) is made by [`CommandLines::text`], which hides the
//! command line's secrets before its words are joined — joined, which words were one argument
//! is lost.
//! Nothing in the data can turn redaction off: a string that cannot be redacted in place keeps
//! its shape through a keyed digest, or its element is dropped — never passed through.
//! A bottom layer: it knows the model's shape and nothing else.

pub mod argv;
pub mod document;
pub mod live;
pub mod text;
mod words;

pub use argv::redact_argv;
pub use document::{redact_serde, redact_snapshot};
pub use live::LiveRedaction;
pub use text::redact_text;

/// What replaces a secret.
pub const REDACTED: &str = "‹redacted›";

/// What marks text cut short.
pub const CUT: &str = "…";

/// The user's home directory, if known (shown as `~`).
pub fn home_dir() -> Option<String> {
    std::env::var("HOME")
        .ok()
        .filter(|h| h.len() > 1 && h.starts_with('/'))
}

/// How text made from a command line is written (a tree label, a sentence of evidence, a
/// timeline line): its secrets hidden as a command line's before its words are joined — once
/// joined, which words were one argument is lost, and no later redaction could tell — or, for
/// a state that publishes everything raw (`--no-redact`), as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommandLines {
    /// Hidden argument by argument, then joined.
    #[default]
    Hidden,
    /// Joined as they are.
    Raw,
}

impl CommandLines {
    /// Hidden when what is published is redacted.
    pub fn when_redacting(redact: bool) -> Self {
        if redact {
            Self::Hidden
        } else {
            Self::Raw
        }
    }

    /// `argv` as one text, cut at `max` characters on a word's boundary — redacted first, cut
    /// after, so a cut never leaves part of a secret below what would recognise it.
    pub fn text(self, argv: &[String], max: usize) -> String {
        let joined = match self {
            Self::Hidden => redact_argv(argv).join(" "),
            Self::Raw => argv.join(" "),
        };
        cut_at_word(&joined, max)
    }
}

/// At most `max` characters of `s`, cut after its last whole word that fits (a word is never
/// cut in half), with [`CUT`] at the end when anything was cut.
pub fn cut_at_word(s: &str, max: usize) -> String {
    let Some((end, _)) = s.char_indices().nth(max) else {
        return s.to_owned();
    };
    let head = &s[..end];
    // The next character is a space: the last word is whole.
    let whole = s[end..].starts_with(char::is_whitespace);
    let keep = if whole {
        head
    } else {
        head.rfind(char::is_whitespace).map_or("", |i| &head[..i])
    };
    format!("{}{CUT}", keep.trim_end())
}

/// At most `max` characters of text from outside (a name or a message from a log, a command
/// line's argument cut to a budget), never part of a secret: text holding a secret is redacted
/// first and cut after; text holding none is cut as it is.
pub fn bounded(s: &str, max: usize) -> String {
    if s.chars().nth(max).is_none() {
        return s.to_owned();
    }
    let redacted = redact_text(s, None);
    let text = if redacted == s { s } else { &redacted };
    let cut: String = text.chars().take(max).collect();
    // A redaction mark cut in half is still a mark; a secret is never half there.
    format!("{cut}{CUT}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn command_text_hides_before_it_joins_and_cuts_on_a_word() {
        let argv = vec![
            "node".to_owned(),
            "x.js".to_owned(),
            "--token".to_owned(),
            "x Zq1SECRET".to_owned(),
            "--password=alpha Zq2SECRET".to_owned(),
        ];
        let t = CommandLines::Hidden.text(&argv, 200);
        assert!(!t.contains("Zq1SECRET") && !t.contains("Zq2SECRET"), "{t}");
        assert_eq!(
            CommandLines::Raw.text(&argv, 200),
            argv.join(" "),
            "raw is raw"
        );
        let long = words("node a-long-word another-long-word third-one");
        let raw = CommandLines::Raw;
        assert_eq!(raw.text(&long, 20), "node a-long-word…");
        assert_eq!(raw.text(&long, 16), "node a-long-word…");
        assert_eq!(raw.text(&long, 200), long.join(" "));
    }

    #[test]
    fn bounded_text_never_keeps_part_of_a_secret() {
        let token = "ghp_0123456789abcdefABCDEF0123456789abcd";
        let s = format!("{} {token}", "x".repeat(20));
        let cut = bounded(&s, 30);
        assert!(!cut.contains("ghp_0123"), "{cut}");
        assert!(cut.ends_with(CUT));
        // Near miss: plain text is cut as it is.
        assert_eq!(bounded("abcdefghij", 4), "abcd…");
        assert_eq!(bounded("short", 10), "short");
    }
}
