//! A linear pre-check of YAML text that bounds the YAML parser's work before it runs.
//!
//! The YAML scanner keeps one "possible simple key" per open flow collection (`[`, `{`) and walks
//! all of them for every token it reads, so its cost grows with the number of tokens times the
//! flow nesting depth: `"[" × 120000` costs about half a minute of CPU, a megabyte of it about
//! half an hour. Real OpenAPI documents nest flow collections a few levels deep at most (and
//! the deserializer refuses any nesting past 128 levels anyway). [`check`] finds the deepest
//! flow nesting in one pass over the text and refuses a document that goes past
//! [`MAX_FLOW_DEPTH`], naming the line, before the parser sees it; below the bound the parser's
//! cost is linear in the document's size.
//!
//! The scan is a small YAML lexer, not a parser: it skips comments, quoted scalars, plain
//! scalars in block context (where `[` is an ordinary character) and block scalars (`|`, `>`),
//! and counts brackets where YAML reads them as flow indicators. Where it cannot tell, it errs
//! towards counting, which only matters for a document that opens more than [`MAX_FLOW_DEPTH`]
//! brackets it never closes.

/// The deepest flow nesting (`[` and `{` inside each other) a YAML document may have.
pub const MAX_FLOW_DEPTH: usize = 64;

/// Refuses YAML text whose flow collections nest deeper than [`MAX_FLOW_DEPTH`]: the error
/// names the limit and the line (1-based) where the nesting went past it.
pub(crate) fn check(text: &[u8]) -> Result<(), String> {
    match deepest(text, MAX_FLOW_DEPTH) {
        Some(line) => Err(format!(
            "YAML flow collections ([ ] or {{ }}) nested more than {MAX_FLOW_DEPTH} levels deep at line {line}; apidrift reads documents nested at most {MAX_FLOW_DEPTH} levels deep"
        )),
        None => Ok(()),
    }
}

/// The line (1-based) where the flow nesting first goes past `max`, or `None`.
fn deepest(text: &[u8], max: usize) -> Option<usize> {
    let mut lx = Lexer {
        text,
        pos: 0,
        line: 1,
        line_start: 0,
    };
    // Block scalar content: lines indented deeper than this column (or blank) are text.
    let mut block_scalar_parent: Option<usize> = None;
    while lx.pos < text.len() {
        // At the start of a line, in block context.
        let indent = lx.count(b' ');
        if let Some(parent) = block_scalar_parent {
            let blank = lx
                .rest_of_line()
                .iter()
                .all(|b| matches!(b, b' ' | b'\t' | b'\r'));
            if blank || indent > parent {
                lx.skip_line();
                continue;
            }
            block_scalar_parent = None;
        }
        // The column of the node a block scalar on this line would belong to.
        let mut node_col = indent;
        // Each pass starts at a token: the scanner reads `[` and `{` there as flow indicators
        // (inside a plain scalar they are text).
        loop {
            lx.count(b' ');
            lx.count(b'\t');
            let Some(c) = lx.peek() else { break };
            let col = lx.pos - lx.line_start;
            match c {
                b'\n' => {
                    lx.bump();
                    break;
                }
                b'#' => lx.skip_comment(),
                b'-' | b'?' | b':' if lx.separated_after(1) => {
                    lx.bump();
                    node_col = col;
                }
                b'[' | b'{' => {
                    lx.bump();
                    if let Some(line) = lx.flow(max) {
                        return Some(line);
                    }
                }
                b'\'' | b'"' => {
                    lx.bump();
                    lx.skip_quoted(c);
                }
                b'|' | b'>' => {
                    block_scalar_parent = Some(node_col);
                    lx.skip_line();
                    break;
                }
                // An anchor, an alias or a tag.
                b'&' | b'*' | b'!' => lx.skip_word(),
                _ => {
                    // A plain scalar: to `: ` (a key, whose value may follow), ` #` or the end
                    // of the line.
                    node_col = col;
                    lx.skip_plain_in_block();
                }
            }
        }
    }
    None
}

struct Lexer<'a> {
    text: &'a [u8],
    pos: usize,
    /// The line (1-based) and the offset where it starts.
    line: usize,
    line_start: usize,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn bump(&mut self) {
        if self.text.get(self.pos) == Some(&b'\n') {
            self.line += 1;
            self.line_start = self.pos + 1;
        }
        self.pos += 1;
    }

    /// Reads a flow collection whose opening bracket was read, across lines, to its end.
    /// Returns the line where the nesting went past `max`.
    fn flow(&mut self, max: usize) -> Option<usize> {
        let mut depth = 1usize;
        if depth > max {
            return Some(self.line);
        }
        while depth > 0 {
            let c = self.peek()?;
            match c {
                b'[' | b'{' => {
                    self.bump();
                    depth += 1;
                    if depth > max {
                        return Some(self.line);
                    }
                }
                b']' | b'}' => {
                    self.bump();
                    depth -= 1;
                }
                // A quote opens a scalar only at a token's start (inside a plain scalar, as in
                // `it's`, it is text).
                b'\'' | b'"'
                    if self.pos == 0
                        || matches!(
                            self.text[self.pos - 1],
                            b' ' | b'\t' | b'\n' | b'\r' | b'[' | b'{' | b',' | b':'
                        ) =>
                {
                    self.bump();
                    self.skip_quoted(c);
                }
                b'#' if self.pos == 0
                    || matches!(self.text[self.pos - 1], b' ' | b'\t' | b'\n') =>
                {
                    self.skip_comment();
                }
                _ => self.bump(),
            }
        }
        None
    }

    /// Skips a run of `byte`, returning its length.
    fn count(&mut self, byte: u8) -> usize {
        let start = self.pos;
        while self.peek() == Some(byte) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn rest_of_line(&self) -> &[u8] {
        let rest = &self.text[self.pos..];
        let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        &rest[..end]
    }

    /// Whether the byte `ahead` positions on is a space, a tab, a line end or the end.
    fn separated_after(&self, ahead: usize) -> bool {
        matches!(
            self.text.get(self.pos + ahead),
            None | Some(b' ' | b'\t' | b'\n' | b'\r')
        )
    }

    /// Skips past the next line end (or to the end).
    fn skip_line(&mut self) {
        match self.text[self.pos..].iter().position(|&b| b == b'\n') {
            Some(i) => {
                self.pos += i + 1;
                self.line += 1;
                self.line_start = self.pos;
            }
            None => self.pos = self.text.len(),
        }
    }

    /// Skips to the line end, leaving it for the caller.
    fn skip_comment(&mut self) {
        match self.text[self.pos..].iter().position(|&b| b == b'\n') {
            Some(i) => self.pos += i,
            None => self.pos = self.text.len(),
        }
    }

    fn skip_word(&mut self) {
        while let Some(c) = self.peek() {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            self.pos += 1;
        }
    }

    /// Skips a quoted scalar whose opening quote was read: `''` escapes a single quote, `\`
    /// escapes in double quotes; it may span lines.
    fn skip_quoted(&mut self, quote: u8) {
        while let Some(c) = self.peek() {
            self.bump();
            if quote == b'"' && c == b'\\' {
                if self.peek().is_some() {
                    self.bump();
                }
            } else if c == quote {
                if quote == b'\'' && self.peek() == Some(b'\'') {
                    self.bump();
                } else {
                    return;
                }
            }
        }
    }

    /// Skips a plain scalar in block context: to a `: ` (read, so that a value may follow), or
    /// to a comment or a line end (left for the caller).
    fn skip_plain_in_block(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                b'\n' => return,
                b':' if self.separated_after(1) => {
                    self.pos += 1;
                    return;
                }
                b'#' if self.pos > 0 && matches!(self.text[self.pos - 1], b' ' | b'\t') => {
                    return;
                }
                _ => self.pos += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(text: &str, max: usize) -> bool {
        deepest(text.as_bytes(), max).is_none()
    }

    #[test]
    fn deep_flow_nesting_is_refused_with_its_line() {
        let text = format!("openapi: 3.1.0\ninfo:\n  x: {}", "[".repeat(120_000));
        let started = std::time::Instant::now();
        let err = check(text.as_bytes()).err();
        assert!(started.elapsed().as_secs() < 1);
        let err = err.unwrap_or_default();
        assert!(err.contains("64 levels"), "{err}");
        assert!(err.contains("line 3"), "{err}");
        assert!(check("[".repeat(65).as_bytes()).is_err());
        assert!(check("[".repeat(64).as_bytes()).is_ok());
        assert!(check(format!("a: {}", "{\"k\": ".repeat(65)).as_bytes()).is_err());
    }

    #[test]
    fn depth_counts_only_flow_indicators() {
        // Brackets in plain and quoted scalars, comments and block scalars are text.
        let text = "\
description: see [the docs] and [[[[[ more
title: '[[[[[[ quoted ]'
other: \"{{{{{ \\\" {{{\"
# [[[[[[[[ a comment
summary: |
  [[[[[[[[[ literal
  {{{{{{{{{
list:
  - [a, [b, c], {d: [e]}]
  - key: >
      [[[[[[[[[[[[
    sibling: x
";
        assert!(depth_ok(text, 3));
        assert!(!depth_ok(text, 2));
        // A sibling key of a block scalar's key is read again, so it cannot hide nesting.
        let hidden = "- k: |\n    text\n  j: [[[[\n";
        assert!(!depth_ok(hidden, 3));
        assert!(depth_ok(hidden, 4));
    }

    #[test]
    fn flow_collections_span_lines_and_skip_comments_and_quotes() {
        let text = "a: [\n  1, # ]]]] not closing\n  '[', \"]\",\n  [2, [3]]\n]\nb: [[x]]\nc: [it's, [a]]\n";
        assert!(depth_ok(text, 3));
        assert!(!depth_ok(text, 2));
    }

    #[test]
    fn a_plain_scalar_key_then_a_flow_value() {
        assert!(!depth_ok("key: [[[x]]]\n", 2));
        assert!(depth_ok("key[0]: [x]\n", 1));
        assert!(depth_ok("url: http://example.com/{a}\n", 0));
        assert!(depth_ok("- &anchor [x]\n", 1));
        assert!(!depth_ok("- !!seq [[x]]\n", 1));
    }
}
