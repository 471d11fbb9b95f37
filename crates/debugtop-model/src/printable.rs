//! Text from outside — a process's argv, a log line, a server's answer, a remote host's name —
//! made safe to put in front of a person on a terminal. Printed as it came, `ESC]52;…` writes
//! the clipboard, `ESC]0;…` the window title, and `ESC[2K` with a carriage return erases the
//! line before it: enough to hide a line of a kill plan someone is asked to confirm. Every
//! readable report goes through here; so does every JSON document debugtop prints or writes
//! ([`json`]): serde escapes C0 controls but leaves C1 controls (`U+009B` is a CSI to many
//! terminals) and bidirectional overrides as they are.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not reach a terminal as itself: C0 and C1 controls, DEL, and the
/// bidirectional overrides and isolates (which reorder what is shown).
fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escaped(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| unsafe_char(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !unsafe_char(c) || keep(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// A document for the terminal (a report of many lines): every control character but the
/// newline and the tab shown as an escape (`\x1b`, `\x0d`, `\u{9b}`, `\u{202e}`).
pub fn for_terminal(s: &str) -> Cow<'_, str> {
    escaped(s, |c| c == '\n' || c == '\t')
}

/// One item of a report (an argv word, a piece of evidence, a host name): every control
/// character shown as an escape, newlines too, so an item can never pass for a line of its own.
pub fn one_line(s: &str) -> Cow<'_, str> {
    escaped(s, |_| false)
}

/// `x` as JSON (pretty or on one line) with every character [`unsafe_char`] would refuse
/// written as a `\uXXXX` escape: the same JSON to a parser, inert on a terminal (`jq` and
/// `cat` of an export). Outside its strings JSON is ASCII, so every such character is inside a
/// string, where an escape is valid.
pub fn json<T: serde::Serialize + ?Sized>(x: &T, pretty: bool) -> serde_json::Result<String> {
    let text = if pretty {
        serde_json::to_string_pretty(x)?
    } else {
        serde_json::to_string(x)?
    };
    Ok(json_escaped(text))
}

/// JSON text with every unsafe character escaped (see [`json`]).
fn json_escaped(text: String) -> String {
    let risky = |c: char| unsafe_char(c) || matches!(c, '\u{2028}' | '\u{2029}');
    if !text.chars().any(risky) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if risky(c) && c != '\n' && c != '\t' && c != '\r' {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_are_shown_never_sent() {
        let hostile = "a\x1b]52;c;ZXZpbA==\x07b\x1b]0;title\x07\x1b[2K\rc\u{9b}31m\u{202e}d\x7f";
        let shown = for_terminal(hostile);
        assert_eq!(
            shown,
            "a\\x1b]52;c;ZXZpbA==\\x07b\\x1b]0;title\\x07\\x1b[2K\\x0dc\\u{9b}31m\\u{202e}d\\x7f"
        );
        assert!(!shown.chars().any(unsafe_char));
        assert_eq!(for_terminal("line 1\n\tline 2"), "line 1\n\tline 2");
        assert_eq!(one_line("x\nrefuse 1: y"), "x\\x0arefuse 1: y");
        // Near miss: ordinary text, accents and emoji pass unchanged and unallocated.
        assert!(matches!(
            for_terminal("node café.js — ✓"),
            Cow::Borrowed("node café.js — ✓")
        ));
    }

    #[test]
    fn json_escapes_c1_controls_and_bidi_overrides_and_reads_the_same() {
        let hostile = vec![
            "a\u{9b}31m\u{202e}b\u{2066}c\u{7f}d\u{2028}".to_owned(),
            "x\ny".to_owned(),
        ];
        for pretty in [false, true] {
            let j = json(&hostile, pretty).unwrap();
            assert!(
                !j.chars().any(|c| unsafe_char(c) && c != '\n' && c != ' '),
                "{j:?}"
            );
            assert!(j.contains("\\u009b") && j.contains("\\u202e"), "{j}");
            let back: Vec<String> = serde_json::from_str(&j).unwrap();
            assert_eq!(back, hostile);
        }
        // Near miss: ordinary text is left as serde writes it.
        assert_eq!(json(&"café ✓", false).unwrap(), "\"café ✓\"");
    }
}
