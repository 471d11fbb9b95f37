//! Text from outside — a process's argv, a log line, a server's answer, a remote host's name —
//! made safe to put in front of a person on a terminal. Printed as it came, `ESC]52;…` writes
//! the clipboard, `ESC]0;…` the window title, and `ESC[2K` with a carriage return erases the
//! line before it: enough to hide a line of a kill plan someone is asked to confirm. Every
//! readable report goes through here; JSON escapes on its own.

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
}
