//! A cheap upper bound on how deep a file's syntax tree nests, measured on the text before
//! it is parsed. Ruff's parser builds `a + a + ... + a` or `a.b.b.b...` iteratively, but the
//! tree it returns is dropped, and walked by this crate, recursively: 3·10^5 levels overflow
//! any thread's stack. `CPython` itself refuses such code ("maximum recursion depth exceeded
//! during compilation" from about 3,000 levels, "too many nested parentheses" past 200), so a
//! file past [`MAX_NESTING`] never ran and is never the source of a frame; it is not parsed.
//!
//! The bound adds up, at every point of the file: the indentation levels (blocks), one per
//! open bracket or f-string replacement field, and per open level the operator-like tokens
//! since the last separator there (`,` `;` `:` `=` or a new statement). Each of those tokens
//! can nest the tree by one (a binary or unary operator, `.name`, a call or subscript after an
//! operand, `lambda`, a conditional expression); separators start a new sibling. It counts
//! flat constructs (`a and b and c`, `a < b < c`) as nesting too, so it only errs high.
//! Strings and comments are skipped, f-strings' replacement fields are scanned as code.

/// Deepest nesting accepted (see the module doc for why no file that ran exceeds it).
pub const MAX_NESTING: u32 = 3_000;
/// f-strings nested in f-strings' replacement fields: `CPython`'s tokenizer stops at 150
/// (`MAXFSTRINGLEVEL`); the scan recurses once per level, so it stops there too.
const MAX_FSTRING_NESTING: u32 = 150;

/// Where the nesting first passes `limit`: (1-based line, the depth reached there).
pub fn too_deep(source: &str, limit: u32) -> Option<(u32, u32)> {
    let mut scan = Scan {
        bytes: source.as_bytes(),
        pos: 0,
        line: 1,
        limit,
        stack: Vec::new(),
        open: 0,
        indents: 0,
        fstrings: 0,
    };
    scan.stack.push(Level::new(0));
    match scan.run() {
        Ok(()) => None,
        Err(Deep) => Some((scan.line, scan.depth())),
    }
}

/// The limit was passed (the scan stops there).
struct Deep;

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
}

impl Level {
    fn new(close: u8) -> Self {
        Self { close, chain: 0, after_operand: false, lambdas: 0 }
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
    fstrings: u32,
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
        self.open.saturating_add(self.indents)
    }

    fn check(&self) -> Result<(), Deep> {
        if self.depth() > self.limit { Err(Deep) } else { Ok(()) }
    }

    fn top(&mut self) -> &mut Level {
        self.stack.last_mut().expect("the statements level is never popped")
    }

    fn push(&mut self, close: u8) -> Result<(), Deep> {
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
        let chain = std::mem::take(&mut top.chain);
        top.after_operand = false;
        self.open = self.open.saturating_sub(chain);
    }

    fn operator(&mut self) -> Result<(), Deep> {
        let top = self.top();
        top.chain += 1;
        top.after_operand = false;
        self.open = self.open.saturating_add(1);
        self.check()
    }

    fn operand(&mut self) {
        self.top().after_operand = true;
    }

    fn newline(&mut self) {
        self.pos += 1;
        self.line += 1;
    }

    /// A backslash: it escapes the next byte, which may be a newline.
    fn escape(&mut self) {
        if self.bytes.get(self.pos + 1) == Some(&b'\n') {
            self.line += 1;
        }
        self.pos += 2;
    }

    fn run(&mut self) -> Result<(), Deep> {
        let mut indent_widths: Vec<usize> = vec![0];
        let mut line_start = true;
        while self.pos < self.bytes.len() {
            if line_start && self.stack.len() == 1 {
                line_start = false;
                let width =
                    self.bytes[self.pos..].iter().take_while(|b| matches!(b, b' ' | b'\t')).count();
                let next = self.bytes.get(self.pos + width).copied();
                if !matches!(next, Some(b'\n' | b'\r' | b'#') | None) {
                    while indent_widths.last().is_some_and(|&w| w > width) {
                        indent_widths.pop();
                    }
                    if indent_widths.last().is_some_and(|&w| w < width) {
                        indent_widths.push(width);
                    }
                    self.indents = indent_widths.len() as u32 - 1;
                    self.check()?;
                }
                self.pos += width;
                continue;
            }
            if self.bytes[self.pos] == b'\n' {
                self.newline();
                line_start = true;
                if self.stack.len() == 1 {
                    self.separator(b'\n');
                    self.top().lambdas = 0;
                }
                continue;
            }
            self.token(1)?;
        }
        Ok(())
    }

    /// One token of code. `floor` is the stack height this code may not close below (1 for
    /// the file, the field's own level for an f-string replacement field).
    fn token(&mut self, floor: usize) -> Result<(), Deep> {
        let b = self.bytes[self.pos];
        match b {
            b'\n' => self.newline(),
            b'#' => {
                self.pos = memchr::memchr(b'\n', &self.bytes[self.pos..])
                    .map_or(self.bytes.len(), |n| self.pos + n);
            }
            b'\\' => self.escape(),
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
            b',' | b';' | b':' => {
                self.separator(b);
                self.pos += 1;
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
            b' ' | b'\t' | b'\r' => {
                self.pos += 1;
                while matches!(self.bytes.get(self.pos), Some(b' ' | b'\t' | b'\r')) {
                    self.pos += 1;
                }
            }
            _ => self.pos += 1,
        }
        Ok(())
    }

    fn number(&mut self) {
        while self.pos < self.bytes.len()
            && (self.bytes[self.pos].is_ascii_alphanumeric()
                || matches!(self.bytes[self.pos], b'.' | b'_'))
        {
            self.pos += 1;
        }
        self.operand();
    }

    fn word(&mut self) -> Result<(), Deep> {
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
    fn string(&mut self, expressions: bool) -> Result<(), Deep> {
        let quote = self.bytes[self.pos];
        let triple = self.bytes[self.pos..].starts_with(&[quote, quote, quote]);
        self.pos += if triple { 3 } else { 1 };
        while self.pos < self.bytes.len() {
            let b = self.bytes[self.pos];
            match b {
                b'\\' => self.escape(),
                // An unterminated single-quoted string ends with its line.
                b'\n' if !triple => break,
                b'\n' => self.newline(),
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
                        rest.iter().position(|&b| matches!(b, b'\\' | b'\n' | b'{') || b == quote)
                    } else {
                        memchr::memchr3(b'\\', b'\n', quote, rest)
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
    fn field(&mut self) -> Result<(), Deep> {
        self.fstrings += 1;
        if self.fstrings > MAX_FSTRING_NESTING {
            return Err(Deep);
        }
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
    fn past_the_limit_nothing_is_parsed() {
        let deep = format!("x = a{}\n", ".b".repeat(300_000));
        let m = Module::parse(&deep);
        assert!(m.refusal().unwrap().contains("past the limit"), "{:?}", m.refusal());
        assert_eq!(m.function_at(1), None);
        assert_eq!(m.line_text(1).map(str::len), Some(deep.len() - 1));
    }
}
