//! What a JSON document from elsewhere — an imported snapshot, a far side's answer or stream
//! line — may cost to parse. Size alone does not bound memory: `"",` is three bytes of text
//! and a 24-byte `String` in the model (a 60 MB answer of empty strings took 955 MB). Counting
//! the document's values first, in one pass over its bytes with nothing allocated, bounds the
//! model it becomes: at most [`MAX_JSON_VALUES`] values, each at most a few dozen bytes beyond
//! its own text. Measured (`measure_import*` in `actions::export`): the worst document within
//! the budget, six million empty strings where the model keeps them, costs 138 MB over its
//! text; a real-shaped 86 MB snapshot of 92,000 processes (6.4 million values), 53 MB. A
//! snapshot of 5,000 processes holds well under a million values. Documents are also capped in
//! size: 64 MiB for a file or a far side's answer or stream line.

/// The most values (strings, numbers, literals, arrays, objects) a document may hold.
pub const MAX_JSON_VALUES: u64 = 6_000_000;

/// How many values `text` holds, counted as a JSON parser would meet them: each string (keys
/// included), each array and object, and each number or literal. Text that is not JSON gives
/// some count; the parser says what is wrong with it.
pub fn json_values(text: &[u8]) -> u64 {
    let (mut n, mut in_string, mut escaped) = (0u64, false, false);
    // The last byte outside strings that was not white space: a scalar starts a value only
    // right after an opening bracket, a comma or a colon (or at the start).
    let mut prev = b'[';
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            b'"' => {
                in_string = true;
                n += 1;
            }
            b'[' | b'{' => n += 1,
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n' if matches!(prev, b'[' | b',' | b':') => n += 1,
            _ => {}
        }
        prev = b;
    }
    n
}

/// `Err(count)` when `text` holds more than [`MAX_JSON_VALUES`] values.
pub fn within_budget(text: &[u8]) -> Result<(), u64> {
    match json_values(text) {
        n if n > MAX_JSON_VALUES => Err(n),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_counted_as_a_parser_meets_them_and_strings_hide_nothing() {
        // { "a" [ 1 2 "x,y{[" "b" "\"[,"  (keys are strings the parser meets too)
        assert_eq!(json_values(br#"{"a":[1,2,"x,y{["],"b":"\"[,"}"#), 8);
        assert_eq!(json_values(b"[true, -1.5e3, null, {\"k\": false}]"), 7);
        assert_eq!(json_values(b""), 0);
        let flood = format!("[{}\"\"]", "\"\",".repeat(6_100_000));
        assert!(within_budget(flood.as_bytes()).is_err());
        // Near miss: a document of ordinary size passes.
        assert!(within_budget(br#"{"schema":"debugtop.snapshot/1"}"#).is_ok());
    }
}
