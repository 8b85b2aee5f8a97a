//! Small expression helpers: direct children, a depth-capped pre-order walk, dotted names
//! (`torch.distributed.get_rank`), root names (`buf` in `buf[:n].view(-1)`) and the short source
//! snippets used in evidence strings.

use ruff_python_ast::visitor::{Visitor, walk_expr};
use ruff_python_ast::{Expr, ExprContext};

use crate::syntax::tree::MAX_DEPTH;

/// The direct sub-expressions of `expr`, in source order.
pub(crate) fn children(expr: &Expr) -> Vec<&Expr> {
    struct Collect<'a>(Vec<&'a Expr>);
    impl<'a> Visitor<'a> for Collect<'a> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            self.0.push(expr);
        }
        // Annotations of lambda parameters are not evaluated with the lambda's value.
        fn visit_annotation(&mut self, _: &'a Expr) {}
        fn visit_expr_context(&mut self, _: &'a ExprContext) {}
    }
    let mut collect = Collect(Vec::new());
    walk_expr(&mut collect, expr);
    collect.0
}

/// Pre-order walk of `expr` and its sub-expressions, stopping at [`MAX_DEPTH`] levels: the
/// sub-expressions [`children`] gives, visited as Ruff's visitor reaches them (no list is
/// built per node: walks run over every expression of every file).
pub(crate) fn walk<'a>(expr: &'a Expr, visit: &mut dyn FnMut(&'a Expr)) {
    struct Walk<'v, 'a> {
        depth: usize,
        visit: &'v mut dyn FnMut(&'a Expr),
    }
    impl<'a> Visitor<'a> for Walk<'_, 'a> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            (self.visit)(expr);
            if self.depth < MAX_DEPTH {
                self.depth += 1;
                walk_expr(self, expr);
                self.depth -= 1;
            }
        }
        fn visit_annotation(&mut self, _: &'a Expr) {}
        fn visit_expr_context(&mut self, _: &'a ExprContext) {}
    }
    Walk { depth: 0, visit }.visit_expr(expr);
}

/// `a.b.c` for a chain of names and attributes; `None` for anything else.
pub(crate) fn dotted(expr: &Expr) -> Option<String> {
    let mut parts = Vec::new();
    let mut cur = expr;
    loop {
        match cur {
            Expr::Name(n) => {
                parts.push(n.id.as_str());
                break;
            }
            Expr::Attribute(a) if parts.len() < MAX_DEPTH => {
                parts.push(a.attr.id.as_str());
                cur = &a.value;
            }
            _ => return None,
        }
    }
    parts.reverse();
    Some(parts.join("."))
}

/// The value of a non-negative integer literal (`1`, `2`); `None` for anything else.
pub(crate) fn int_literal(expr: &Expr) -> Option<u64> {
    match expr {
        Expr::NumberLiteral(n) => n.value.as_int().and_then(ruff_python_ast::Int::as_u64),
        _ => None,
    }
}

/// Last segment of a callee: `get_rank` for `dist.get_rank`, `item` for `loss.detach().item`.
pub(crate) fn last_segment(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => Some(a.attr.id.as_str()),
        _ => None,
    }
}

/// The variable an expression starts from: `buf` for `buf[:n].view(-1)` or `buf.shape[0]`.
pub(crate) fn root_name(expr: &Expr) -> Option<&str> {
    let mut cur = expr;
    for _ in 0..MAX_DEPTH {
        match cur {
            Expr::Name(n) => return Some(n.id.as_str()),
            Expr::Attribute(a) => cur = &a.value,
            Expr::Subscript(s) => cur = &s.value,
            Expr::Call(c) => match &*c.func {
                // A method call continues from its receiver; a plain call starts a new value.
                Expr::Attribute(a) => cur = &a.value,
                _ => return None,
            },
            Expr::Starred(s) => cur = &s.value,
            _ => return None,
        }
    }
    None
}

/// `x.dtype`, `comm_dtype`, `torch.bfloat16`: expressions that name a dtype.
pub(crate) fn names_dtype(e: &Expr) -> bool {
    use crate::syntax::patterns::{TORCH_DTYPES, has_word};
    let Some(path) = dotted(e) else { return false };
    let last = path.rsplit('.').next().unwrap_or_default();
    has_word(last, &["dtype", "dtypes"])
        || (path.starts_with("torch.")
            && path.matches('.').count() == 1
            && TORCH_DTYPES.contains(&last))
}

/// `text` on one line with runs of whitespace collapsed, cut at 60 characters.
pub(crate) fn snippet(text: &str) -> String {
    const MAX_CHARS: usize = 60;
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= MAX_CHARS {
        return flat;
    }
    let mut cut: String = flat.chars().take(MAX_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// Whether `word` occurs in `text` as a whole identifier-like word (the words
/// [`crate::Module::word_count`] counts).
pub fn has_word(text: &str, word: &str) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    // A vectorised search first (most files lack the word), then the boundaries of each match.
    memchr::memmem::find(text.as_bytes(), word.as_bytes()).is_some()
        && text.match_indices(word).any(|(i, w)| {
            !text[..i].chars().next_back().is_some_and(is_word)
                && !text[i + w.len()..].chars().next().is_some_and(is_word)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruff_python_parser::{Mode, ParseOptions, parse_unchecked};

    fn parse(src: &str) -> Expr {
        match parse_unchecked(src, ParseOptions::from(Mode::Expression)).into_syntax() {
            ruff_python_ast::Mod::Expression(e) => *e.body,
            ruff_python_ast::Mod::Module(_) => unreachable!(),
        }
    }

    #[test]
    fn names() {
        assert_eq!(
            dotted(&parse("torch.distributed.get_rank")).unwrap(),
            "torch.distributed.get_rank"
        );
        assert_eq!(dotted(&parse("f().x")), None);
        assert_eq!(root_name(&parse("buf[:n].view(-1)")), Some("buf"));
        assert_eq!(root_name(&parse("torch.zeros(n)")), Some("torch"));
        assert_eq!(root_name(&parse("zeros(n)")), None);
        let Expr::Call(call) = parse("loss.detach().item()") else { panic!() };
        assert_eq!(last_segment(&call.func), Some("item"));
    }

    #[test]
    fn has_word_needs_a_whole_word() {
        assert!(has_word("model.join()", "join"));
        assert!(has_word("join", "join"));
        assert!(!has_word("joined = rejoin_x + é_join", "join"));
        assert!(has_word("x = 'joinα'; y.join(z)", "join"));
    }

    #[test]
    fn snippets_are_short_and_flat() {
        assert_eq!(snippet("a +\n    b"), "a + b");
        let long = snippet(&"x".repeat(100));
        assert_eq!(long.chars().count(), 60);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn children_and_walk() {
        let e = parse("f(a, b=c) and not d");
        let mut names = Vec::new();
        walk(&e, &mut |x| {
            if let Expr::Name(n) = x {
                names.push(n.id.to_string());
            }
        });
        assert_eq!(names, ["f", "a", "c", "d"]);
        assert_eq!(children(&e).len(), 2);
    }
}
