//! A small, exact JSON parser into the borrowed [`Json`] document: number tokens are kept as
//! text (integers of any size stay exact, `1.0` stays a `number`), strings without escapes are
//! borrowed, nesting is limited to [`MAX_DEPTH`] levels so that no input can overflow the stack.
//!
//! Built for speed without `unsafe`:
//! * strings are scanned eight bytes at a time (SWAR) for the three bytes that end the fast path
//!   (`"`, `\` and control characters), in one pass;
//! * a container's children are collected on a shared stack and moved into one exactly sized
//!   allocation when it closes;
//! * duplicate object keys are looked for only when a 64-bit filter of the keys seen so far says
//!   the key may have been seen (a hash index takes over past 16 keys);
//! * a failure travels up as a zero-sized marker; its message and position wait in the parser
//!   until the top turns them into a [`ParseError`].

use crate::node::Json;
use std::borrow::Cow;

#[cfg(test)]
mod reference;

/// Deepest nesting of arrays and objects the parser and the engine accept.
pub const MAX_DEPTH: usize = 256;
const TOO_DEEP: &str = "nesting deeper than 256 levels";

/// Why a text is not acceptable JSON, with the 1-based line and column of the problem.
///
/// ```
/// let err = apidrift_diff::parse("{\"a\": tru}").unwrap_err();
/// assert_eq!((err.line, err.column), (1, 7));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at line {line} column {column}")]
#[non_exhaustive]
pub struct ParseError {
    /// What is wrong, e.g. `expected a value`.
    pub message: String,
    /// 1-based line of the problem.
    pub line: usize,
    /// 1-based column of the problem, in characters.
    pub column: usize,
}

/// Parses one JSON document (RFC 8259; surrounding whitespace allowed, nothing else) into the
/// exact [`Json`] document, borrowing from `text`.
///
/// ```
/// use apidrift_diff::{DiffMode, Options, diff_bodies, parse};
/// let before = parse(r#"{"total": 1.0}"#)?;
/// let after = parse(r#"{"total": 1.00}"#)?;
/// let report = diff_bodies(&before, &after, &Options::with_mode(DiffMode::Full)).unwrap();
/// assert!(report.changes.is_empty()); // numbers compare numerically
/// # Ok::<(), apidrift_diff::ParseError>(())
/// ```
pub fn parse(text: &str) -> Result<Json<'_>, ParseError> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        failure: "",
        values: Vec::new(),
        members: Vec::new(),
    };
    match p.document() {
        Ok(value) => Ok(value),
        Err(Failed) => Err(p.error()),
    }
}

/// A failure on its way up; the message and position are in the [`Parser`].
struct Failed;

type Step<T> = Result<T, Failed>;

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// The message of the failure, reported at `pos`.
    failure: &'static str,
    /// Scratch stacks for the elements and members of the containers being parsed.
    values: Vec<Json<'a>>,
    members: Vec<(Cow<'a, str>, Json<'a>)>,
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// The bytes of `word` that end a plain run of string text: `"`, `\` or a control character
/// (below 0x20), as the high bit of each such byte. Exact for the lowest flagged byte (higher
/// ones may be false positives), which is all the scan uses.
#[inline]
fn string_stops(word: u64) -> u64 {
    let quote = word ^ (LO * u64::from(b'"'));
    let backslash = word ^ (LO * u64::from(b'\\'));
    let zero_quote = quote.wrapping_sub(LO) & !quote;
    let zero_backslash = backslash.wrapping_sub(LO) & !backslash;
    let control = word.wrapping_sub(LO * 0x20) & !word;
    (zero_quote | zero_backslash | control) & HI
}

/// The index of the first `"`, `\` or control character at or after `from`, or `bytes.len()`.
#[inline]
fn plain_run_end(bytes: &[u8], from: usize) -> usize {
    let mut i = from;
    while let Some(chunk) = bytes.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let stops = string_stops(u64::from_le_bytes(*chunk));
        if stops != 0 {
            return i + (stops.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&b) = bytes.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

/// One bit of a 64-bit filter of object keys: equal keys always set the same bit.
#[inline]
fn key_bit(key: &str) -> u64 {
    let b = key.as_bytes();
    let (first, last) = match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => (u32::from(f), u32::from(l)),
        _ => (0, 0),
    };
    // The length wraps at 2^32: any value is fine, equal keys give equal bits.
    let len = b.len() as u32;
    let h = len.wrapping_mul(0x9E37_79B9)
        ^ first.wrapping_mul(0x85EB_CA6B)
        ^ last.wrapping_mul(0xC2B2_AE35);
    1u64 << (h >> 26)
}

impl<'a> Parser<'a> {
    /// Records a failure at the current position.
    #[cold]
    fn fail<T>(&mut self, message: &'static str) -> Step<T> {
        self.failure = message;
        Err(Failed)
    }

    /// Records a failure at `at`.
    #[cold]
    fn fail_at<T>(&mut self, at: usize, message: &'static str) -> Step<T> {
        self.pos = at;
        self.fail(message)
    }

    #[cold]
    fn error(&self) -> ParseError {
        let upto = &self.bytes[..self.pos.min(self.bytes.len())];
        let line = memchr::memchr_iter(b'\n', upto).count() + 1;
        let line_start = memchr::memrchr(b'\n', upto).map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&upto[line_start..]).chars().count() + 1;
        ParseError {
            message: self.failure.to_owned(),
            line,
            column,
        }
    }

    fn document(&mut self) -> Step<Json<'a>> {
        self.skip_ws();
        let value = self.value(0)?;
        self.skip_ws();
        if self.pos < self.bytes.len() {
            return self.fail("trailing characters after the JSON value");
        }
        Ok(value)
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Step<Json<'a>> {
        match self.peek() {
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b't') => self.literal(b"true", Json::Bool(true)),
            Some(b'f') => self.literal(b"false", Json::Bool(false)),
            Some(b'n') => self.literal(b"null", Json::Null),
            None => self.fail("unexpected end of input, expected a value"),
            Some(_) => self.fail("expected a value"),
        }
    }

    #[inline]
    fn literal(&mut self, word: &[u8], value: Json<'a>) -> Step<Json<'a>> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(value)
        } else {
            self.fail("expected a value")
        }
    }

    /// The end of the run of ASCII digits starting at `from`.
    #[inline]
    fn digits_end(&self, from: usize) -> usize {
        let mut i = from;
        while self.bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    }

    fn number(&mut self) -> Step<Json<'a>> {
        let start = self.pos;
        let mut i = start;
        if self.bytes.get(i) == Some(&b'-') {
            i += 1;
        }
        match self.bytes.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = self.digits_end(i + 1),
            _ => return self.fail_at(i, "invalid number"),
        }
        if self.bytes.get(i) == Some(&b'.') {
            let end = self.digits_end(i + 1);
            if end == i + 1 {
                return self.fail_at(
                    end,
                    "invalid number: expected a digit after the decimal point",
                );
            }
            i = end;
        }
        if let Some(b'e' | b'E') = self.bytes.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = self.bytes.get(i) {
                i += 1;
            }
            let end = self.digits_end(i);
            if end == i {
                return self.fail_at(end, "invalid number: expected a digit in the exponent");
            }
            i = end;
        }
        self.pos = i;
        Ok(Json::Number(&self.text[start..i]))
    }

    /// Parses a string starting at the opening quote.
    fn string(&mut self) -> Step<Cow<'a, str>> {
        let start = self.pos + 1;
        let stop = plain_run_end(self.bytes, start);
        match self.bytes.get(stop) {
            Some(b'"') => {
                self.pos = stop + 1;
                Ok(Cow::Borrowed(&self.text[start..stop]))
            }
            Some(b'\\') => self.escaped(start, stop),
            // A control character: reported as such when the string goes on, as unterminated
            // when no quote or backslash follows.
            Some(_) if memchr::memchr2(b'"', b'\\', &self.bytes[stop..]).is_some() => {
                self.fail_at(stop, "control character in string")
            }
            _ => self.fail_at(self.bytes.len(), "unterminated string"),
        }
    }

    /// The rest of a string whose plain text runs from `start` to the backslash at `at`:
    /// decoded into an owned string.
    #[cold]
    fn escaped(&mut self, start: usize, at: usize) -> Step<Cow<'a, str>> {
        let mut out = String::with_capacity(at - start + 16);
        out.push_str(&self.text[start..at]);
        self.pos = at;
        loop {
            match self.peek() {
                None => return self.fail("unterminated string"),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(Cow::Owned(out));
                }
                Some(b'\\') => {
                    self.pos += 1;
                    self.escape(&mut out)?;
                }
                Some(b) if b < 0x20 => return self.fail("control character in string"),
                Some(_) => {
                    let run_start = self.pos;
                    let end = plain_run_end(self.bytes, run_start);
                    out.push_str(&self.text[run_start..end]);
                    self.pos = end;
                }
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Step<()> {
        let Some(c) = self.peek() else {
            return self.fail("unterminated string");
        };
        self.pos += 1;
        match c {
            b'"' => out.push('"'),
            b'\\' => out.push('\\'),
            b'/' => out.push('/'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'u' => {
                let first = self.hex4()?;
                let code = if (0xD800..0xDC00).contains(&first) {
                    if self.bytes.get(self.pos) == Some(&b'\\')
                        && self.bytes.get(self.pos + 1) == Some(&b'u')
                    {
                        self.pos += 2;
                        let second = self.hex4()?;
                        if !(0xDC00..0xE000).contains(&second) {
                            return self.fail("invalid low surrogate in \\u escape");
                        }
                        0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                    } else {
                        return self.fail("lone surrogate in \\u escape");
                    }
                } else if (0xDC00..0xE000).contains(&first) {
                    return self.fail("lone surrogate in \\u escape");
                } else {
                    first
                };
                match char::from_u32(code) {
                    Some(ch) => out.push(ch),
                    None => return self.fail("invalid \\u escape"),
                }
            }
            _ => return self.fail_at(self.pos - 1, "invalid escape in string"),
        }
        Ok(())
    }

    fn hex4(&mut self) -> Step<u32> {
        let mut value = 0u32;
        for _ in 0..4 {
            let digit = self.peek().and_then(|b| (b as char).to_digit(16));
            match digit {
                Some(d) => value = value * 16 + d,
                None => return self.fail("invalid \\u escape"),
            }
            self.pos += 1;
        }
        Ok(value)
    }

    fn array(&mut self, depth: usize) -> Step<Json<'a>> {
        if depth > MAX_DEPTH {
            return self.fail(TOO_DEEP);
        }
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Json::Array(Box::default()));
        }
        // Elements go on the shared stack and move into an exactly sized slice at the end.
        let start = self.values.len();
        loop {
            self.skip_ws();
            let value = self.value(depth)?;
            self.values.push(value);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    let items = self.values.split_off(start).into_boxed_slice();
                    return Ok(Json::Array(items));
                }
                None => return self.fail("unexpected end of input in an array"),
                Some(_) => return self.fail("expected `,` or `]`"),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Step<Json<'a>> {
        if depth > MAX_DEPTH {
            return self.fail(TOO_DEEP);
        }
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Json::Object(Box::default()));
        }
        let start = self.members.len();
        // Keys seen so far: a filter while the object is small, an index once it is not.
        let mut seen = 0u64;
        let mut index: Option<foldhash::HashMap<Cow<'a, str>, usize>> = None;
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return self.fail(if self.pos >= self.bytes.len() {
                    "unexpected end of input in an object"
                } else {
                    "expected a string key"
                });
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return self.fail("expected `:`");
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value(depth)?;
            // Duplicate keys: the last value wins, at the first position (as serde_json).
            let members = &mut self.members[start..];
            let existing = match &index {
                Some(map) => map.get(&key).copied(),
                None => {
                    let bit = key_bit(&key);
                    let maybe = seen & bit != 0;
                    seen |= bit;
                    if maybe {
                        members.iter().position(|(k, _)| *k == key)
                    } else {
                        None
                    }
                }
            };
            match existing {
                Some(at) => members[at].1 = value,
                None => {
                    let at = members.len();
                    if let Some(map) = &mut index {
                        map.insert(key.clone(), at);
                    }
                    self.members.push((key, value));
                    if index.is_none() && at >= 16 {
                        index = Some(
                            self.members[start..]
                                .iter()
                                .enumerate()
                                .map(|(i, (k, _))| (k.clone(), i))
                                .collect(),
                        );
                    }
                }
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    let members = self.members.split_off(start).into_boxed_slice();
                    return Ok(Json::Object(members));
                }
                None => return self.fail("unexpected end of input in an object"),
                Some(_) => return self.fail("expected `,` or `}`"),
            }
        }
    }
}

#[cfg(test)]
mod tests;
