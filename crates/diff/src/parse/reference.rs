//! The parser as it was before the fast one (byte by byte, with a `Result` carrying the whole
//! error through every level): kept as the oracle of the differential tests, which require the
//! fast parser to give the same document, or the same error at the same line and column, for
//! every input.

use super::{MAX_DEPTH, ParseError};
use crate::node::Json;
use std::borrow::Cow;

/// Parses one JSON document (RFC 8259; surrounding whitespace allowed, nothing else).
pub fn parse(text: &str) -> Result<Json<'_>, ParseError> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        values: Vec::new(),
        members: Vec::new(),
    };
    p.skip_ws();
    let value = p.value(0)?;
    p.skip_ws();
    if p.pos < p.bytes.len() {
        return Err(p.error("trailing characters after the JSON value"));
    }
    Ok(value)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// Scratch stacks for the elements and members of the containers being parsed.
    values: Vec<Json<'a>>,
    members: Vec<(Cow<'a, str>, Json<'a>)>,
}

impl<'a> Parser<'a> {
    fn error(&self, message: &str) -> ParseError {
        let upto = &self.bytes[..self.pos.min(self.bytes.len())];
        let line = memchr::memchr_iter(b'\n', upto).count() + 1;
        let line_start = memchr::memrchr(b'\n', upto).map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&upto[line_start..]).chars().count() + 1;
        ParseError {
            message: message.to_owned(),
            line,
            column,
        }
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(&b) = self.bytes.get(self.pos) {
            if matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json<'a>, ParseError> {
        match self.bytes.get(self.pos) {
            None => Err(self.error("unexpected end of input, expected a value")),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("expected a value")),
        }
    }

    fn literal(&mut self, word: &str, value: Json<'a>) -> Result<Json<'a>, ParseError> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error("expected a value"))
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Json<'a>, ParseError> {
        let start = self.pos;
        if self.bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match self.bytes.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.error("invalid number")),
        }
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.error("invalid number: expected a digit after the decimal point"));
            }
        }
        if matches!(self.bytes.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.bytes.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("invalid number: expected a digit in the exponent"));
            }
        }
        Ok(Json::Number(&self.text[start..self.pos]))
    }

    /// Parses a string starting at the opening quote.
    fn string(&mut self) -> Result<Cow<'a, str>, ParseError> {
        self.pos += 1;
        let start = self.pos;
        let rest = &self.bytes[start..];
        let Some(end) = memchr::memchr2(b'"', b'\\', rest) else {
            self.pos = self.bytes.len();
            return Err(self.error("unterminated string"));
        };
        if let Some(bad) = rest[..end].iter().position(|&b| b < 0x20) {
            self.pos = start + bad;
            return Err(self.error("control character in string"));
        }
        if rest[end] == b'"' {
            self.pos = start + end + 1;
            return Ok(Cow::Borrowed(&self.text[start..start + end]));
        }
        // Escapes: decode into an owned string.
        let mut out = String::with_capacity(end + 16);
        out.push_str(&self.text[start..start + end]);
        self.pos = start + end;
        loop {
            match self.bytes.get(self.pos) {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(Cow::Owned(out));
                }
                Some(b'\\') => {
                    self.pos += 1;
                    self.escape(&mut out)?;
                }
                Some(_) => {
                    let run_start = self.pos;
                    let run = &self.bytes[run_start..];
                    let len = memchr::memchr2(b'"', b'\\', run).unwrap_or(run.len());
                    if let Some(bad) = run[..len].iter().position(|&b| b < 0x20) {
                        self.pos = run_start + bad;
                        return Err(self.error("control character in string"));
                    }
                    out.push_str(&self.text[run_start..run_start + len]);
                    self.pos = run_start + len;
                }
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), ParseError> {
        let Some(&c) = self.bytes.get(self.pos) else {
            return Err(self.error("unterminated string"));
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
                            return Err(self.error("invalid low surrogate in \\u escape"));
                        }
                        0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                    } else {
                        return Err(self.error("lone surrogate in \\u escape"));
                    }
                } else if (0xDC00..0xE000).contains(&first) {
                    return Err(self.error("lone surrogate in \\u escape"));
                } else {
                    first
                };
                match char::from_u32(code) {
                    Some(ch) => out.push(ch),
                    None => return Err(self.error("invalid \\u escape")),
                }
            }
            _ => {
                self.pos -= 1;
                return Err(self.error("invalid escape in string"));
            }
        }
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let mut value = 0u32;
        for _ in 0..4 {
            let digit = self
                .bytes
                .get(self.pos)
                .and_then(|&b| (b as char).to_digit(16));
            match digit {
                Some(d) => value = value * 16 + d,
                None => return Err(self.error("invalid \\u escape")),
            }
            self.pos += 1;
        }
        Ok(value)
    }

    fn too_deep(&self, depth: usize) -> Result<(), ParseError> {
        if depth > MAX_DEPTH {
            Err(self.error(&format!("nesting deeper than {MAX_DEPTH} levels")))
        } else {
            Ok(())
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json<'a>, ParseError> {
        self.too_deep(depth)?;
        self.pos += 1;
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(Json::Array(Box::default()));
        }
        // Elements go on a shared stack and are moved into an exactly sized vector at the end.
        let start = self.values.len();
        loop {
            self.skip_ws();
            let value = self.value(depth)?;
            self.values.push(value);
            self.skip_ws();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Json::Array(self.values.drain(start..).collect()));
                }
                None => return Err(self.error("unexpected end of input in an array")),
                Some(_) => return Err(self.error("expected `,` or `]`")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json<'a>, ParseError> {
        self.too_deep(depth)?;
        self.pos += 1;
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(Json::Object(Box::default()));
        }
        let start = self.members.len();
        let mut index: Option<std::collections::HashMap<Cow<'a, str>, usize>> = None;
        loop {
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b'"') {
                return Err(self.error(if self.pos >= self.bytes.len() {
                    "unexpected end of input in an object"
                } else {
                    "expected a string key"
                }));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b':') {
                return Err(self.error("expected `:`"));
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value(depth)?;
            // Duplicate keys: the last value wins, at the first position (as serde_json).
            let members = &mut self.members[start..];
            let existing = match &index {
                Some(map) => map.get(&key).copied(),
                None => members
                    .iter()
                    .position(|(k, _)| k.len() == key.len() && *k == key),
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
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Json::Object(self.members.drain(start..).collect()));
                }
                None => return Err(self.error("unexpected end of input in an object")),
                Some(_) => return Err(self.error("expected `,` or `}`")),
            }
        }
    }
}
