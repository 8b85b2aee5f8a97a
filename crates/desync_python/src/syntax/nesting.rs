//! Cheap upper bounds on what parsing a file would build, measured on the text before it is
//! parsed: how deep its syntax tree nests, and how many tokens it holds.
//!
//! Depth: Ruff's parser builds `a + a + ... + a` or `a.b.b.b...` iteratively, but the tree it
//! returns is dropped, and walked by this crate, recursively: 3·10^5 levels overflow any
//! thread's stack. `CPython` itself refuses such code ("maximum recursion depth exceeded
//! during compilation" from about 3,000 levels, "too many nested parentheses" past 200), so a
//! file past [`MAX_NESTING`] never ran and is never the source of a frame; it is not parsed.
//!
//! Tokens: the parser keeps every token, every syntax error (80 bytes each) and a node for
//! most tokens; 16 MiB of `)` or `$` is 16 million errors, over 2 GiB held at once. A file
//! past [`MAX_TOKENS`] is generated data, not training code; it is not parsed either.
//!
//! The depth bound adds up, at every point of the file: the indentation levels (blocks), one
//! per open bracket or f-string replacement field, and per open level the operator-like tokens
//! since the last separator there (`,` `;` `:` `=` or a new statement). Each of those tokens
//! can nest the tree by one (a binary or unary operator, `.name`, a call or subscript after an
//! operand, `lambda`, a conditional expression); separators start a new sibling. It counts
//! flat constructs (`a and b and c`, `a < b < c`) as nesting too, so it only errs high.
//! Strings and comments are skipped, f-strings' replacement fields are scanned as code. Lines
//! end as Python ends them (`\n`, `\r\n`, a lone `\r`); a backslash outside a string joins
//! lines only before a line end, and is otherwise a stray byte that escapes nothing.
//!
//! Ruff's error recovery can nest what the text does not (a `lambda` without its `:` takes the
//! next lines as its body; a block that never came keeps the levels open around it); the scan
//! counts those high, and the tree a parse returns is measured ([`tree_depth`]) on the large
//! stack the parse ran on, before any walk of this crate sees it.
//!
//! Length: about 560 lines of one pre-parse scanner (brackets, strings, indentation, tokens) and
//! its tests; it reads the text only and splits along no seam that would not share its state.

use ruff_python_ast::visitor::{Visitor, walk_expr, walk_pattern, walk_stmt};
use ruff_python_ast::{Expr, Pattern, Stmt};

/// Deepest nesting accepted (see the module doc for why no file that ran exceeds it).
pub const MAX_NESTING: u32 = 3_000;
/// Most tokens accepted in one file (2^22): about 16 MiB of ordinary code, where the largest
/// hand-written modules hold a few hundred thousand. Counted high (every operator byte, two
/// per line end), so the parser's own count stays below it.
pub const MAX_TOKENS: u64 = 1 << 22;
/// f-strings nested in f-strings' replacement fields: `CPython`'s tokenizer stops at 150
/// (`MAXFSTRINGLEVEL`); the scan recurses once per level, so it stops there too.
const MAX_FSTRING_NESTING: u32 = 150;

/// Which bound a file passed, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Past {
    /// Nested past the depth limit at this 1-based line, the depth reached there.
    Nesting { line: u32, depth: u32 },
    /// More tokens than the limit, the limit passed at this 1-based line.
    Tokens { line: u32 },
}

/// Where the nesting first passes `limit`: (1-based line, the depth reached there).
#[cfg(test)]
pub fn too_deep(source: &str, limit: u32) -> Option<(u32, u32)> {
    match past_limits(source, limit, u64::MAX) {
        Some(Past::Nesting { line, depth }) => Some((line, depth)),
        _ => None,
    }
}

/// The first bound `source` passes: nesting deeper than `nesting`, or more than `tokens`.
pub fn past_limits(source: &str, nesting: u32, tokens: u64) -> Option<Past> {
    let mut scan = Scan {
        bytes: source.as_bytes(),
        pos: 0,
        line: 1,
        limit: nesting,
        stack: Vec::new(),
        open: 0,
        indents: 0,
        phantom: 0,
        colon_last: false,
        fstrings: 0,
        tokens: 0,
        max_tokens: tokens,
    };
    scan.stack.push(Level::new(0));
    match scan.run() {
        Ok(()) => None,
        Err(Stop::Deep) => Some(Past::Nesting { line: scan.line, depth: scan.depth() }),
        Err(Stop::Tokens) => Some(Past::Tokens { line: scan.line }),
    }
}

/// A limit was passed (the scan stops there).
enum Stop {
    Deep,
    Tokens,
}

/// One open context: the file's statements, a bracket, or an f-string replacement field.
struct Level {
    /// The byte that closes it (`)`, `]`, `}`), or 0 for the statements.
    close: u8,
    /// Operator-like tokens since the last separator at this level.
    chain: u32,
    /// Whether the last token was an operand (a name, a literal, a closing bracket): then `(`
    /// and `[` are a call or a subscript, which nest like an operator.
    after_operand: bool,
    /// `lambda`s whose parameters are still being read: their `,` `=` and closing `:` do not
    /// separate siblings (the body nests inside the lambda).
    lambdas: u32,
    /// A `yield` was read in this statement: its value is a tuple, and Ruff's parser nests a
    /// `yield` after a comma in it (`yield a, yield b`), so commas no longer separate.
    yields: bool,
}

impl Level {
    fn new(close: u8) -> Self {
        Self { close, chain: 0, after_operand: false, lambdas: 0, yields: false }
    }
}

struct Scan<'a> {
    bytes: &'a [u8],
    pos: usize,
    line: u32,
    limit: u32,
    stack: Vec<Level>,
    /// Sum of the open levels' chains plus one per level: the depth without indentation.
    open: u32,
    indents: u32,
    /// Levels Ruff's parser may keep open past a block that never came: after a line ending
    /// in a block's `:`, a line not indented deeper is a syntax error from which the parser
    /// recovers by nesting what follows (`match x:` then `with a:` at the same column nests
    /// the `with` in the `match`); every level open there may then stay open.
    phantom: u32,
    /// Whether the last token was a `:` that opens a block (at the statements level).
    colon_last: bool,
    fstrings: u32,
    /// Tokens seen so far, and the most allowed.
    tokens: u64,
    max_tokens: u64,
}

/// Python's string prefixes (any case): r, u, b, f, t and their two-letter combinations;
/// `Some(true)` for the ones whose replacement fields are code.
fn string_prefix(word: &[u8]) -> Option<bool> {
    // Asked of every word before a quote: no allocation (a prefix is at most two bytes).
    if word.len() > 2 {
        return None;
    }
    let mut lower = [0u8; 2];
    for (l, b) in lower.iter_mut().zip(word) {
        *l = b.to_ascii_lowercase();
    }
    match &lower[..word.len()] {
        b"r" | b"u" | b"b" | b"br" | b"rb" => Some(false),
        b"f" | b"t" | b"fr" | b"rf" | b"tr" | b"rt" => Some(true),
        _ => None,
    }
}

/// Bytes an identifier or keyword is made of (letters, digits, `_`, and every byte of a
/// non-ASCII character), as a table: the scan asks it of every byte of every word.
pub(crate) const WORD_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        table[b] = byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80;
        b += 1;
    }
    table
};

fn closer(open: u8) -> u8 {
    match open {
        b'(' => b')',
        b'[' => b']',
        _ => b'}',
    }
}

impl Scan<'_> {
    fn depth(&self) -> u32 {
        self.open.saturating_add(self.indents).saturating_add(self.phantom)
    }

    fn check(&self) -> Result<(), Stop> {
        if self.depth() > self.limit { Err(Stop::Deep) } else { Ok(()) }
    }

    /// Counts `n` tokens against the limit.
    fn count(&mut self, n: u64) -> Result<(), Stop> {
        self.tokens += n;
        if self.tokens > self.max_tokens { Err(Stop::Tokens) } else { Ok(()) }
    }

    fn top(&mut self) -> &mut Level {
        self.stack.last_mut().expect("the statements level is never popped")
    }

    fn push(&mut self, close: u8) -> Result<(), Stop> {
        self.stack.push(Level::new(close));
        self.open = self.open.saturating_add(1);
        self.check()
    }

    fn pop(&mut self) {
        if let Some(level) = self.stack.pop() {
            self.open = self.open.saturating_sub(level.chain + 1);
        }
    }

    fn separator(&mut self, byte: u8) {
        let top = self.top();
        if top.lambdas > 0 {
            if byte == b':' {
                top.lambdas -= 1;
            }
            return;
        }
        match byte {
            b',' if top.yields => return,
            b'\n' | b';' => top.yields = false,
            _ => {}
        }
        let chain = std::mem::take(&mut top.chain);
        top.after_operand = false;
        self.open = self.open.saturating_sub(chain);
    }

    fn operator(&mut self) -> Result<(), Stop> {
        let top = self.top();
        top.chain += 1;
        top.after_operand = false;
        self.open = self.open.saturating_add(1);
        self.check()
    }

    fn operand(&mut self) {
        self.top().after_operand = true;
    }

    /// The length of the line end at `at` (`\n`, `\r\n` or a lone `\r`), 0 if none is there.
    fn line_end_at(&self, at: usize) -> usize {
        match self.bytes.get(at) {
            Some(b'\r') if self.bytes.get(at + 1) == Some(&b'\n') => 2,
            Some(b'\n' | b'\r') => 1,
            _ => 0,
        }
    }

    /// Steps over the line end at the current position.
    fn newline(&mut self) {
        self.pos += self.line_end_at(self.pos).max(1);
        self.line += 1;
    }

    /// A backslash in a string: it escapes the next character, which may be a line end.
    fn escape(&mut self) {
        match self.line_end_at(self.pos + 1) {
            0 => self.pos += 2,
            n => {
                self.line += 1;
                self.pos += 1 + n;
            }
        }
    }

    /// A backslash in code joins the next line when a line end follows it; otherwise it is a
    /// stray byte (a syntax error) and what follows is code, scanned as such.
    fn continuation(&mut self) {
        match self.line_end_at(self.pos + 1) {
            0 => self.pos += 1,
            n => {
                self.line += 1;
                self.pos += 1 + n;
            }
        }
    }

    fn run(&mut self) -> Result<(), Stop> {
        let mut indent_widths: Vec<usize> = vec![0];
        let mut line_start = true;
        // The last logical line ended with a block's `:`: the next one must be indented.
        let mut expect_block = false;
        while self.pos < self.bytes.len() {
            if line_start && self.stack.len() == 1 {
                line_start = false;
                // A form feed in the indentation resets its width, as in `CPython`.
                let run = self.bytes[self.pos..]
                    .iter()
                    .take_while(|b| matches!(b, b' ' | b'\t' | b'\x0c'))
                    .count();
                let blanks = &self.bytes[self.pos..self.pos + run];
                let width = blanks.iter().rev().take_while(|&&b| b != b'\x0c').count();
                let next = self.bytes.get(self.pos + run).copied();
                if !matches!(next, Some(b'\n' | b'\r' | b'#') | None) {
                    if std::mem::take(&mut expect_block)
                        && indent_widths.last().is_some_and(|&w| width <= w)
                    {
                        self.phantom = self.phantom.saturating_add(self.indents + 1);
                    }
                    while indent_widths.last().is_some_and(|&w| w > width) {
                        indent_widths.pop();
                    }
                    if indent_widths.last().is_some_and(|&w| w < width) {
                        indent_widths.push(width);
                    }
                    self.indents = indent_widths.len() as u32 - 1;
                    self.check()?;
                }
                self.pos += run;
                continue;
            }
            if matches!(self.bytes[self.pos], b'\n' | b'\r') {
                // A line end is a token, and may close indented blocks (one more each).
                self.count(2)?;
                self.newline();
                line_start = true;
                expect_block |= self.stack.len() == 1 && self.colon_last;
                // A `lambda` still waiting for its `:` keeps its chain: Ruff's parser recovers
                // by reading the next lines as its parameters and body (nesting each).
                if self.stack.len() == 1 && self.top().lambdas == 0 {
                    self.separator(b'\n');
                }
                continue;
            }
            self.token(1)?;
        }
        Ok(())
    }

    /// One token of code. `floor` is the stack height this code may not close below (1 for
    /// the file, the field's own level for an f-string replacement field).
    fn token(&mut self, floor: usize) -> Result<(), Stop> {
        let b = self.bytes[self.pos];
        if !matches!(b, b' ' | b'\t' | b'\x0c') {
            self.count(1)?;
        }
        if !matches!(b, b' ' | b'\t' | b'\x0c' | b'#' | b'\\' | b'\n' | b'\r') {
            self.colon_last = false;
        }
        match b {
            b'\n' | b'\r' => self.newline(),
            b'#' => {
                self.pos = memchr::memchr2(b'\n', b'\r', &self.bytes[self.pos..])
                    .map_or(self.bytes.len(), |n| self.pos + n);
            }
            b'\\' => self.continuation(),
            b'\'' | b'"' => self.string(false)?,
            b'(' | b'[' | b'{' => {
                let top = self.top();
                if top.after_operand && b != b'{' {
                    self.operator()?;
                }
                self.pos += 1;
                self.push(closer(b))?;
            }
            b')' | b']' | b'}' => {
                // A stray closer (unbalanced text) closes nothing it did not open.
                if self.stack.len() > floor && self.top().close == b {
                    self.pop();
                }
                self.pos += 1;
                self.operand();
            }
            // `:=` nests its value (and is no lambda's `:`).
            b':' if self.bytes.get(self.pos + 1) == Some(&b'=') => {
                self.pos += 2;
                self.operator()?;
            }
            b',' | b';' | b':' => {
                let opens_block = b == b':' && self.stack.len() == 1 && self.top().lambdas == 0;
                self.separator(b);
                self.pos += 1;
                self.colon_last = opens_block;
            }
            b'=' if !matches!(self.bytes.get(self.pos + 1), Some(b'=')) => {
                self.separator(b);
                self.pos += 1;
            }
            b'.' if self.bytes.get(self.pos + 1).is_some_and(u8::is_ascii_digit) => self.number(),
            b'.' | b'+' | b'-' | b'*' | b'/' | b'%' | b'@' | b'&' | b'|' | b'^' | b'~' | b'<'
            | b'>' | b'!' | b'=' => {
                self.pos += 1;
                self.operator()?;
            }
            b'0'..=b'9' => self.number(),
            _ if b.is_ascii_alphabetic() || b == b'_' || b >= 0x80 => self.word()?,
            // Blanks within a line, all at once.
            b' ' | b'\t' | b'\x0c' => {
                self.pos += 1;
                while matches!(self.bytes.get(self.pos), Some(b' ' | b'\t' | b'\x0c')) {
                    self.pos += 1;
                }
            }
            _ => self.pos += 1,
        }
        Ok(())
    }

    fn number(&mut self) {
        let start = self.pos;
        while self.pos < self.bytes.len()
            && (self.bytes[self.pos].is_ascii_alphanumeric()
                || matches!(self.bytes[self.pos], b'.' | b'_'))
        {
            self.pos += 1;
        }
        // `1f"{...}"` is a number and an f-string: letters before a quote that make a string
        // prefix are scanned again as one (`0xf'...'` then counts as an f-string: errs high).
        if let Some(&(b'\'' | b'"')) = self.bytes.get(self.pos) {
            for len in [2, 1] {
                let from = self.pos.saturating_sub(len).max(start + 1);
                if self.pos - from == len && string_prefix(&self.bytes[from..self.pos]).is_some() {
                    self.pos = from;
                    break;
                }
            }
        }
        self.operand();
    }

    fn word(&mut self) -> Result<(), Stop> {
        let start = self.pos;
        self.pos +=
            self.bytes[self.pos..].iter().take_while(|&&b| WORD_BYTES[usize::from(b)]).count();
        let word = &self.bytes[start..self.pos];
        if let Some(&(b'\'' | b'"')) = self.bytes.get(self.pos)
            && let Some(expressions) = string_prefix(word)
        {
            return self.string(expressions);
        }
        if word == b"lambda" {
            self.top().lambdas += 1;
            return self.operator();
        }
        if word == b"yield" {
            self.top().yields = true;
        }
        if matches!(
            word,
            b"not" | b"and" | b"or" | b"await" | b"if" | b"else" | b"in" | b"is" | b"yield"
        ) {
            return self.operator();
        }
        self.operand();
        Ok(())
    }

    /// A string literal from its opening quote; `expressions`: an f- or t-string, whose
    /// replacement fields are code.
    fn string(&mut self, expressions: bool) -> Result<(), Stop> {
        let quote = self.bytes[self.pos];
        let triple = self.bytes[self.pos..].starts_with(&[quote, quote, quote]);
        self.pos += if triple { 3 } else { 1 };
        while self.pos < self.bytes.len() {
            let b = self.bytes[self.pos];
            match b {
                b'\\' => self.escape(),
                // An unterminated single-quoted string ends with its line.
                b'\n' | b'\r' if !triple => break,
                b'\n' | b'\r' => self.newline(),
                _ if b == quote => {
                    if !triple {
                        self.pos += 1;
                        break;
                    }
                    if self.bytes[self.pos..].starts_with(&[quote, quote, quote]) {
                        self.pos += 3;
                        break;
                    }
                    self.pos += 1;
                }
                b'{' if expressions && self.bytes.get(self.pos + 1) == Some(&b'{') => self.pos += 2,
                b'{' if expressions => self.field()?,
                // The bulk of a string: nothing to look at up to the next byte of interest (a
                // `{` matters only in an f-string).
                _ => {
                    self.pos += 1;
                    let rest = &self.bytes[self.pos..];
                    let next = if expressions {
                        rest.iter()
                            .position(|&b| matches!(b, b'\\' | b'\n' | b'\r' | b'{') || b == quote)
                    } else {
                        // A lone `\r` ends a line too (rare: looked for up to the next stop).
                        let stop = memchr::memchr3(b'\\', b'\n', quote, rest);
                        memchr::memchr(b'\r', &rest[..stop.unwrap_or(rest.len())]).or(stop)
                    };
                    self.pos = next.map_or(self.bytes.len(), |n| self.pos + n);
                }
            }
        }
        self.operand();
        Ok(())
    }

    /// An f-string replacement field from its `{`: code (strings, f-strings, brackets
    /// included) up to the `}` that closes it.
    fn field(&mut self) -> Result<(), Stop> {
        self.fstrings += 1;
        if self.fstrings > MAX_FSTRING_NESTING {
            return Err(Stop::Deep);
        }
        // Its braces, and the literal text before it.
        self.count(3)?;
        self.pos += 1;
        self.push(b'}')?;
        let base = self.stack.len();
        while self.pos < self.bytes.len() && self.stack.len() >= base {
            if self.bytes[self.pos] == b'}' && self.stack.len() == base {
                self.pop();
                self.pos += 1;
                break;
            }
            self.token(base)?;
        }
        // A field cut short by the end of the file leaves its levels open; close them.
        while self.stack.len() >= base {
            self.pop();
        }
        self.fstrings -= 1;
        Ok(())
    }
}

/// The deepest point of a walk over a tree.
#[derive(Default)]
struct Depth {
    now: u32,
    max: u32,
}

impl Depth {
    fn enter(&mut self) {
        self.now += 1;
        self.max = self.max.max(self.now);
    }
}

impl<'a> Visitor<'a> for Depth {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        self.enter();
        walk_stmt(self, stmt);
        self.now -= 1;
    }
    fn visit_expr(&mut self, expr: &'a Expr) {
        self.enter();
        walk_expr(self, expr);
        self.now -= 1;
    }
    fn visit_pattern(&mut self, pattern: &'a Pattern) {
        self.enter();
        walk_pattern(self, pattern);
        self.now -= 1;
    }
}

/// How deep statements, expressions and patterns nest in a parsed tree (a walk as deep as
/// the tree: run it where the parse ran).
pub(crate) fn tree_depth(suite: &[Stmt]) -> u32 {
    let mut depth = Depth::default();
    for stmt in suite {
        depth.visit_stmt(stmt);
    }
    depth.max
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(source: &str, limit: u32) -> bool {
        too_deep(source, limit).is_none()
    }

    #[test]
    fn ordinary_code_is_shallow() {
        let src = "def f(x, rank):\n    if rank == 0:\n        y = [a.b(c) for c in x]\n    return {'k': (1, 2)}\n";
        assert!(depth_ok(src, 12));
        let many = format!("x = [{}]\n", vec!["a.b.c(d)"; 10_000].join(", "));
        assert!(depth_ok(&many, 20), "siblings do not add up");
        let strings = "s = '((((((((((' + \"]]]]]]]]\" + '''\n((((\n'''  # ((((((((\n";
        assert!(depth_ok(strings, 8));
    }

    #[test]
    fn every_kind_of_chain_counts() {
        let n = 500;
        let kinds = [
            format!("x = {}1{}\n", "(".repeat(n), ")".repeat(n)),
            format!("x = a{}\n", ".b".repeat(n)),
            format!("x = {}\n", vec!["a"; n].join(" + ")),
            format!("x = f{}\n", "()".repeat(n)),
            format!("x = a{}\n", "[0]".repeat(n)),
            format!("x = {}a\n", "-".repeat(n)),
            format!("x = {}a\n", "not ".repeat(n)),
            format!("x = {}a\n", "lambda: ".repeat(n)),
            format!("x = {}\n", vec!["a if b else"; n].join(" ") + " c"),
            (0..n).map(|d| format!("{}if x:\n", " ".repeat(d))).collect::<String>(),
            format!("x = f'{{{}}}'\n", "(".repeat(n) + "1" + &")".repeat(n)),
            format!("x = f'{{ \"a\" + {}1{} }}'\n", "(".repeat(n), ")".repeat(n)),
        ];
        for src in &kinds {
            let (line, depth) =
                too_deep(src, 400).unwrap_or_else(|| panic!("not caught: {}", &src[..40]));
            assert!(depth > 400 && line >= 1);
            assert!(too_deep(src, 2 * n as u32 + 10).is_none(), "over-counted: {}", &src[..40]);
        }
    }
}

#[cfg(test)]
mod against_the_parser {
    //! The scan is a bound only if no text nests Ruff's tree deeper than the scan says: random
    //! soups of tokens (stray backslashes, lone `\r`, form feeds, strings and comments cut
    //! short, every bracket and operator) are parsed, and the tree's real depth is compared
    //! with the scan's.

    /// The smallest limit the scan accepts `source` under.
    fn scan_depth(source: &str) -> u32 {
        let (mut low, mut high) = (0u32, 1u32 << 16);
        while low < high {
            let mid = low.midpoint(high);
            if super::too_deep(source, mid).is_none() { high = mid } else { low = mid + 1 }
        }
        low
    }

    const PIECES: &[&str] = &[
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "\\",
        "\r",
        "\n",
        "\r\n",
        "\x0c",
        " ",
        "    ",
        "\t",
        "a",
        "1",
        ".",
        "+",
        "-",
        "~",
        "not ",
        "lambda ",
        ":",
        ",",
        "=",
        "if ",
        "else ",
        "'",
        "\"",
        "f'",
        "f\"{",
        "'''",
        "#",
        "yield ",
        "await ",
        "*",
        "**",
        "@",
        "\\\n",
        ":=",
        ";",
        "in ",
        "and ",
        "class A",
        "def f()",
        "return ",
        "for x in y",
        "with a as b",
        "match x:\n",
        "case ",
        "|",
        "$",
        "?",
        "\u{20ac}",
        "1e-",
        "x[",
        "f(",
        "a=",
        "async ",
        "del ",
        "try:",
    ];

    #[test]
    fn no_soup_nests_deeper_than_the_scan_says() {
        let mut seed: u64 = 0x5eed;
        let mut next = move |n: usize| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize % n
        };
        let run = std::thread::Builder::new().stack_size(256 << 20).spawn(move || {
            for case in 0..3_000 {
                let mut source = String::new();
                for _ in 0..next(6) {
                    source.push_str(PIECES[next(PIECES.len())]);
                }
                let motif: Vec<&str> = (0..=next(4)).map(|_| PIECES[next(PIECES.len())]).collect();
                for _ in 0..next(300) {
                    for piece in &motif {
                        source.push_str(piece);
                    }
                }
                for _ in 0..next(6) {
                    source.push_str(PIECES[next(PIECES.len())]);
                }
                let parsed = ruff_python_parser::parse_unchecked_source(
                    &source,
                    ruff_python_ast::PySourceType::Python,
                );
                let (tree, scan) = (super::tree_depth(parsed.suite()), scan_depth(&source));
                // Up to two levels of tree per level counted (`yield a, yield b` nests a tuple
                // and a yield per comma), and a few the scan does not count (a statement, an
                // expression statement around its value). Twice the limit is what the parse's
                // stack must hold, and holds eight times over; the tree is then measured.
                assert!(
                    tree <= 2 * scan + 6,
                    "case {case}: tree {tree} deep, scan {scan}: {source:?}"
                );
            }
        });
        run.unwrap().join().unwrap();
    }
}

#[cfg(test)]
mod at_the_limit {
    use crate::{Module, classify_expression};

    /// Sources nested just under the limit, of every kind the scan counts.
    fn sources(depth: usize) -> Vec<String> {
        let n = depth - 4;
        let body = |expr: String| {
            format!("def f(x, rank):\n    y = {expr}\n    if y:\n        dist.all_reduce(x)\n")
        };
        vec![
            body(format!("{}1{}", "(".repeat(n), ")".repeat(n))),
            body(format!("a{}", ".b".repeat(n))),
            body(vec!["a"; n].join(" + ")),
            body(format!("a{}", " ** a".repeat(n / 2))),
            body(format!("f{}", "()".repeat(n))),
            body(format!("a{}", "[0]".repeat(n))),
            body(format!("{}a", "-".repeat(n))),
            body(format!("{}a", "not ".repeat(n))),
            body(format!("{}a", "lambda: ".repeat(n))),
            body(vec!["a if b else"; n / 2].join(" ") + " c"),
            body(format!("{}1{}", "[".repeat(n), "]".repeat(n))),
            body(format!("{}1{}", "{1: ".repeat(n), "}".repeat(n))),
            (0..n).map(|d| format!("{}if x:\n", " ".repeat(d))).collect::<String>()
                + &" ".repeat(n)
                + "dist.all_reduce(x)\n",
        ]
    }

    /// What passes the scan must be safe for every walk of the tree, on the smallest stack
    /// a walk runs on (rayon's and the test harness's threads: 2 MiB), unoptimized.
    #[test]
    fn every_walk_fits_a_small_stack_at_the_limit() {
        for src in sources(crate::MAX_NESTING as usize) {
            assert!(
                super::too_deep(&src, crate::MAX_NESTING).is_none(),
                "refused: {:?}",
                &src[..90]
            );
            let run = std::thread::Builder::new().stack_size(2 << 20).spawn(move || {
                let m = Module::parse(&src);
                assert!(m.refusal().is_none());
                let lines = m.line_count();
                for line in [1, 2, 3, 4, lines] {
                    let _ = m.function_at(line);
                    let _ = m.explain_call(line);
                    let _ = m.find_branch(line, Some(2));
                    let _ = m.find_order_branch(line);
                    let _ = m.guards(line);
                    let _ = classify_expression(&m, line, "y");
                    let _ = m.trace_value(line, "y");
                }
                let _ = m.outline();
                let _ = m.collective_calls();
            });
            run.unwrap().join().unwrap();
        }
    }

    #[test]
    fn a_tree_deeper_than_its_text_shows_is_refused_once_parsed() {
        // Error recovery nests a yield and a tuple per comma: 2,000 counted, 4,000 built.
        let src = format!("def f():\n    yield 's'{}\n", ",$yield 's'".repeat(2_000));
        assert!(super::too_deep(&src, crate::MAX_NESTING).is_none());
        let m = Module::parse(&src);
        let why = m.refusal().unwrap_or_else(|| panic!("parsed: {:?}", m.syntax_errors()));
        assert!(why.contains("once parsed"), "{why}");
    }

    #[test]
    fn past_the_limit_nothing_is_parsed() {
        let deep = format!("x = a{}\n", ".b".repeat(300_000));
        let m = Module::parse(&deep);
        assert!(m.refusal().unwrap().contains("past the limit"), "{:?}", m.refusal());
        assert_eq!(m.function_at(1), None);
        assert_eq!(m.line_text(1).map(str::len), Some(deep.len() - 1));
    }
}
