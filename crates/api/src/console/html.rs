//! URL helpers shared by the console and the OpenAPI import. The markup itself is in
//! [`super::views`].

use std::fmt::Write as _;

/// Percent-encodes a query-string value.
pub fn url_param(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_query_values() {
        assert_eq!(url_param("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
