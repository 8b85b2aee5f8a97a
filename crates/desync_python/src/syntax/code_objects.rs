//! Which code objects `CPython` runs at a line, by the names frames give them: `<module>` for
//! module-level statements, `<lambda>`, `<genexpr>` and the comprehensions (`<listcomp>`,
//! `<setcomp>`, `<dictcomp>`: Python 3.11 and older; 3.12 inlines them, PEP 709). The code
//! bridge asks before it trusts a local file for a frame: a frame's file and line are text
//! from a dump, and a file that has no such code at that line is not what ran (nor, when a
//! dump is crafted, any Python file at all).

use ruff_python_ast::visitor::{Visitor, walk_expr, walk_stmt};
use ruff_python_ast::{Expr, ExprContext, Stmt};
use ruff_text_size::{Ranged, TextRange};

use crate::syntax::module::Module;
use crate::syntax::tree::MAX_DEPTH;

impl Module {
    /// Whether `line` belongs to a statement the module's own code runs: inside a statement,
    /// and neither in a `def` (decorators aside) nor in a class body. `if __name__ ==
    /// "__main__":` blocks and top-level loops are module code.
    pub fn runs_at_module_level(&self, line: u32) -> bool {
        self.path(line).is_some()
            && self.function_at(line).is_none()
            && self.class_at(line).is_none()
    }

    /// The names of the expression code objects (`<lambda>`, `<genexpr>`, `<listcomp>`,
    /// `<setcomp>`, `<dictcomp>`) whose source spans `line`, outermost first.
    pub fn expression_code_at(&self, line: u32) -> Vec<&'static str> {
        let (Some(path), Some(span)) = (self.path(line), self.line_range(line)) else {
            return Vec::new();
        };
        let mut finder = Finder { span, depth: 0, found: Vec::new() };
        finder.visit_stmt(path.leaf());
        finder.found
    }
}

/// Walks only the statements and expressions that overlap one line.
struct Finder {
    span: TextRange,
    depth: usize,
    found: Vec<&'static str>,
}

impl Finder {
    fn overlaps(&self, node: &impl Ranged) -> bool {
        node.start() <= self.span.end() && node.end() > self.span.start()
    }
}

impl<'a> Visitor<'a> for Finder {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        // Deeper than real code goes: stop rather than risk the stack (see `tree::MAX_DEPTH`).
        if self.overlaps(stmt) && self.depth < MAX_DEPTH {
            self.depth += 1;
            walk_stmt(self, stmt);
            self.depth -= 1;
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if !self.overlaps(expr) || self.depth >= MAX_DEPTH {
            return;
        }
        let name = match expr {
            Expr::Lambda(_) => Some("<lambda>"),
            Expr::Generator(_) => Some("<genexpr>"),
            Expr::ListComp(_) => Some("<listcomp>"),
            Expr::SetComp(_) => Some("<setcomp>"),
            Expr::DictComp(_) => Some("<dictcomp>"),
            _ => None,
        };
        self.found.extend(name);
        self.depth += 1;
        walk_expr(self, expr);
        self.depth -= 1;
    }

    fn visit_expr_context(&mut self, _: &'a ExprContext) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expression_code_is_found_on_the_lines_it_spans() {
        let m = Module::parse(
            "key = lambda x: (\n    x + 1)\nsquares = [i * i for i in range(3)]\nif True:\n    total = sum(\n        i for i in range(3))\nplain = 1\n",
        );
        assert_eq!(m.expression_code_at(1), ["<lambda>"]);
        assert_eq!(m.expression_code_at(2), ["<lambda>"], "a lambda's later line");
        assert_eq!(m.expression_code_at(3), ["<listcomp>"]);
        assert_eq!(m.expression_code_at(6), ["<genexpr>"]);
        assert!(m.expression_code_at(5).is_empty(), "the call's first line holds no genexpr");
        assert!(m.expression_code_at(7).is_empty());
        assert!(m.expression_code_at(99).is_empty());
    }

    #[test]
    fn module_level_is_code_outside_defs_and_classes() {
        let m = Module::parse(
            "import os\n# a comment\n\n@decorate\ndef f():\n    return 1\n\nclass C:\n    x = 1\n\nif __name__ == \"__main__\":\n    f()\n",
        );
        assert!(m.runs_at_module_level(1));
        assert!(m.runs_at_module_level(4), "a decorator runs in the enclosing scope");
        assert!(!m.runs_at_module_level(6));
        assert!(!m.runs_at_module_level(9), "a class body is the class's code object");
        assert!(m.runs_at_module_level(12));
        assert!(!m.runs_at_module_level(2), "a comment holds no statement");
        assert!(!m.runs_at_module_level(40));
    }
}
