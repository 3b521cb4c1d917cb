//! Monitored text and JSON kept faithfully on PostgreSQL (the rule of `apidrift_store::text`).
//!
//! PostgreSQL cannot hold U+0000 (NUL) in `text`, nor in a `jsonb` string or key ("unsupported
//! Unicode escape sequence"). So every monitored `text` column and every string of a `jsonb`
//! column, keys included, is stored escaped and restored on read:
//! * NUL is stored as [`ESC`] followed by `0`;
//! * [`ESC`] itself is stored doubled, so text that already holds `ESC 0` reads back as written;
//! * any other character is stored as it is; a string without NUL or [`ESC`] is unchanged, so
//!   what other tools read from the database stays readable.
//!
//! [`ESC`] is U+10FFFF, the last noncharacter: Unicode reserves noncharacters for a program's
//! internal use, so real content almost never holds one and the escape almost never costs a
//! byte. Migration `2026-11-22-100000_escape_nul` doubled the [`ESC`] stored before this rule.
//! User input (names, URLs, e-mails, …) is not escaped: a NUL there is refused before any
//! statement.

use serde_json::Value;
use std::borrow::Cow;

/// The escape character (U+10FFFF).
pub const ESC: char = '\u{10FFFF}';

/// The stored form of `text`.
pub fn store_text(text: &str) -> Cow<'_, str> {
    if !text.contains(['\0', ESC]) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\0' => {
                out.push(ESC);
                out.push('0');
            }
            ESC => {
                out.push(ESC);
                out.push(ESC);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`store_text`] of an optional value, owned (for binding).
pub fn store_opt(text: Option<&str>) -> Option<String> {
    text.map(|t| store_text(t).into_owned())
}

/// The text [`store_text`] stored. An [`ESC`] followed by anything else than `0` or [`ESC`]
/// (which this rule never writes) is kept as it is.
pub fn read_text(stored: String) -> String {
    if !stored.contains(ESC) {
        return stored;
    }
    let mut out = String::with_capacity(stored.len());
    let mut chars = stored.chars().peekable();
    while let Some(c) = chars.next() {
        if c != ESC {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('0') => {
                chars.next();
                out.push('\0');
            }
            Some(&ESC) => {
                chars.next();
                out.push(ESC);
            }
            _ => out.push(ESC),
        }
    }
    out
}

/// [`read_text`] of an optional value.
pub fn read_opt(stored: Option<String>) -> Option<String> {
    stored.map(read_text)
}

/// Applies `f` to every string of `value`, object keys included; `f` answers `None` for a
/// string it leaves unchanged, so an object is rebuilt only when one of its keys changes.
fn walk(value: &mut Value, f: &dyn Fn(&str) -> Option<String>) {
    match value {
        Value::String(s) => {
            if let Some(new) = f(s) {
                *s = new;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| walk(v, f)),
        Value::Object(map) => {
            if map.keys().any(|k| f(k).is_some()) {
                let old = std::mem::take(map);
                *map = old
                    .into_iter()
                    .map(|(k, mut v)| {
                        walk(&mut v, f);
                        (f(&k).unwrap_or(k), v)
                    })
                    .collect();
            } else {
                map.values_mut().for_each(|v| walk(v, f));
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The stored form of a JSON document: [`store_text`] on every string and key.
pub fn store_json(mut value: Value) -> Value {
    walk(&mut value, &|s| match store_text(s) {
        Cow::Borrowed(_) => None,
        Cow::Owned(o) => Some(o),
    });
    value
}

/// The document [`store_json`] stored.
pub fn read_json(mut value: Value) -> Value {
    walk(&mut value, &|s| {
        s.contains(ESC).then(|| read_text(s.to_owned()))
    });
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CASES: &[&str] = &[
        "",
        "plain",
        "\0",
        "a\0b\0",
        "\u{10FFFF}",
        "\u{10FFFF}0",
        "\u{10FFFF}\u{10FFFF}",
        "\0\u{10FFFF}0\u{10FFFF}",
        "\u{1}\u{b}\u{7f}",
    ];

    #[test]
    fn text_round_trips_and_holds_no_nul() {
        for case in CASES {
            let stored = store_text(case);
            assert!(!stored.contains('\0'), "{case:?}");
            assert_eq!(read_text(stored.into_owned()), *case);
        }
        // Untouched text is borrowed, not copied.
        assert!(matches!(store_text("plain"), Cow::Borrowed(_)));
        // Distinct texts stay distinct once stored.
        let stored: std::collections::BTreeSet<String> =
            CASES.iter().map(|c| store_text(c).into_owned()).collect();
        assert_eq!(stored.len(), CASES.len());
        assert_eq!(store_opt(None), None);
        assert_eq!(read_opt(store_opt(Some("x\0"))), Some("x\0".to_owned()));
    }

    #[test]
    fn a_lone_escape_is_kept() {
        assert_eq!(read_text("a\u{10FFFF}b".into()), "a\u{10FFFF}b");
        assert_eq!(read_text("a\u{10FFFF}".into()), "a\u{10FFFF}");
    }

    #[test]
    fn json_keys_and_values_round_trip() {
        let doc = json!({
            "a\0": ["\0", {"\u{10FFFF}0": "\u{10FFFF}"}, 1, null, true],
            "plain": {"k": "v"},
        });
        let stored = store_json(doc.clone());
        assert!(!stored.to_string().contains("\\u0000"));
        assert_eq!(read_json(stored), doc);
        let plain = json!({"k": ["v", 1]});
        assert_eq!(store_json(plain.clone()), plain);
    }
}
