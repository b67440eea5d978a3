//! How a scenario error reads: one line, a key path, and what is allowed.
//!
//! Every [`crate::ScenarioError`] is printed as `<key path>: <what is wrong>` on one line (the CLI
//! prefixes `error: <file>: `). Keys and values come from the user, so they may hold newlines or
//! other control characters, or be empty: [`escape`] writes control characters as `\n`, `\t`,
//! `\u{1b}`, and [`key`] quotes a key that is not a bare TOML key (`""`, `"a.b"`, `"a\nb"`), so
//! a path is never empty and never breaks the line. serde's messages name Rust types ("expected
//! struct RawGroup", "untagged enum OneOrMany", "expected u32"): [`serde_message`] says instead
//! what the scenario format allows there.

use serde_path_to_error::{Path, Segment};
use std::fmt::Write;

/// The path shown for an error that belongs to no key (e.g. the whole file).
pub const TOP_LEVEL: &str = "(top level)";

/// `s` with every control character written as an escape, so it stays on one line.
pub fn escape(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Longest word (run of non-space characters) an error line quotes whole.
const LONG_WORD: usize = 200;
/// Characters kept of a longer word.
const KEEP: usize = 60;

/// `s` with every word longer than 200 characters (a file path fits) cut to its first 60, an ellipsis, its closing
/// quote and punctuation, and its length: a value of 100,000 characters must not become an error
/// message of 100,000 characters.
pub fn elide_long_words(s: &str) -> String {
    if s.len() <= LONG_WORD {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len().min(4 * LONG_WORD));
    for piece in s.split_inclusive(char::is_whitespace) {
        let word = piece.trim_end_matches(char::is_whitespace);
        let n = word.chars().count();
        if n <= LONG_WORD {
            out.push_str(piece);
            continue;
        }
        out.extend(word.chars().take(KEEP));
        out.push('…');
        // the closing quote and punctuation (up to 3 characters), e.g. `",`
        let tail: Vec<char> = word.chars().rev().take(3).take_while(|c| c.is_ascii_punctuation()).collect();
        out.extend(tail.into_iter().rev());
        let _ = write!(out, " ({n} characters)");
        out.push_str(&piece[word.len()..]);
    }
    out
}

/// A key as it appears in a key path: bare if TOML allows it bare, else quoted and escaped.
pub fn key(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        k.to_string()
    } else {
        format!("\"{}\"", escape(&k.replace('\\', "\\\\").replace('"', "\\\"")))
    }
}

/// The key path of a serde error inside the value found at `prefix` (`""` for the whole file).
pub fn error_path(prefix: &str, path: &Path) -> String {
    let mut out = prefix.to_string();
    for seg in path {
        match seg {
            Segment::Seq { index } => {
                let _ = write!(out, "[{index}]");
            }
            Segment::Map { key: k } | Segment::Enum { variant: k } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&key(k));
            }
            Segment::Unknown => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push('?');
            }
        }
    }
    if out.is_empty() {
        TOP_LEVEL.to_string()
    } else {
        out
    }
}

/// What each table of the format is, for "expected struct Raw..." messages.
const TABLES: &[(&str, &str)] = &[
    (
        "RawGroup",
        "a flow group: a table such as { transport = \"tcp\", count = 10 } or { transport = \"udp\", rate = \"2Mb/s\" } (written [[flows]])",
    ),
    ("RawLink", "a link: a table with rate, delay, limit, queue_unit, loss_rate and aqm"),
    ("RawSimulation", "a table with duration, warmup, seed, sample_interval, queue_snapshots, flow_series_interval"),
    ("RawAccess", "a table with rate, delay and limit (the access links)"),
    ("RawTcp", "a table of TCP options such as { variant = \"sack\", mss = 1000 }"),
    ("RawScenario", "a scenario: a TOML table"),
];

/// Type names in serde's "expected ..." and what the format calls them.
const TYPES: &[(&str, &str)] = &[
    ("expected i64", "expected a whole number"),
    ("expected u64", "expected a whole number >= 0"),
    ("expected u32", "expected a whole number from 0 to 4294967295"),
    ("expected u16", "expected a whole number from 0 to 65535"),
    ("expected u8", "expected a whole number from 0 to 255"),
    ("expected f64", "expected a number"),
    ("expected a sequence", "expected a list"),
    ("expected a map", "expected a table"),
    ("expected a borrowed string", "expected a string"),
];

/// serde's message `m` (first line, no "TOML parse error" preamble) in the format's words.
pub fn serde_message(m: &str) -> String {
    let first = m.trim().lines().next().unwrap_or("").trim();
    let mut s = first.trim_start_matches("TOML parse error: ").to_string();
    if let Some(i) = s.find("expected struct ") {
        let name = s[i + "expected struct ".len()..].split(|c: char| !c.is_alphanumeric()).next().unwrap_or("");
        let what = TABLES.iter().find(|(n, _)| *n == name).map(|(_, w)| *w).unwrap_or("a table");
        s = format!("{}expected {what}", &s[..i]);
    }
    if s.contains("untagged enum OneOrMany") {
        s = "expected one value, or a list of values assigned round-robin over the group's flows".to_string();
    }
    for (from, to) in TYPES {
        if let Some(i) = s.find(from) {
            let end = i + from.len();
            // whole words only ("expected u32" but not "expected u320")
            if !s[end..].starts_with(|c: char| c.is_alphanumeric()) {
                s = format!("{}{to}{}", &s[..i], &s[end..]);
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_control_characters() {
        assert_eq!(escape("a\nb\tc\u{1b}"), "a\\nb\\tc\\u{1b}");
        assert_eq!(escape("plain"), "plain");
    }

    #[test]
    fn elides_long_words_only() {
        let long = format!("\"{}\",", "x".repeat(100_000));
        let m = elide_long_words(&format!("unknown AQM {long} see the list"));
        assert_eq!(m, format!("unknown AQM \"{}…\", (100003 characters) see the list", "x".repeat(59)));
        let short = format!("{} {}", "p/".repeat(100), "a value of 200 characters or fewer is kept whole. ".repeat(9));
        assert_eq!(elide_long_words(&short), short);
        assert_eq!(elide_long_words("ok"), "ok");
    }

    #[test]
    fn quotes_keys_that_are_not_bare() {
        assert_eq!(key("rate"), "rate");
        assert_eq!(key(""), "\"\"");
        assert_eq!(key("a.b"), "\"a.b\"");
        assert_eq!(key("a\nb"), "\"a\\nb\"");
    }

    #[test]
    fn says_what_a_table_is() {
        let m = serde_message("invalid type: integer `1`, expected struct RawGroup");
        assert!(m.starts_with("invalid type: integer `1`, expected a flow group"), "{m}");
        assert_eq!(
            serde_message("invalid type: string \"x\", expected u32"),
            "invalid type: string \"x\", expected a whole number from 0 to 4294967295"
        );
    }
}
