//! Property tests: no input text and no line number makes any public entry point panic. Half
//! the inputs are arbitrary text, half are Python-shaped lines at random indentation, which
//! reach the deeper paths (nested blocks, jumps, handlers) that arbitrary text rarely does.

use std::fmt::Write as _;

use proptest::prelude::*;

use crate::{ClassifyOptions, Module, classify_expression, classify_expression_with};

const FRAGMENTS: &[&str] = &[
    "def f(rank, loader):",
    "async def g(*a, **k):",
    "class T:",
    "for batch in loader:",
    "for i, b in enumerate(loader):",
    "while step < n:",
    "if rank == 0:",
    "elif not torch.isfinite(loss):",
    "else:",
    "try:",
    "except RuntimeError as e:",
    "except:",
    "finally:",
    "with torch.no_grad():",
    "with suppress(Exception):",
    "match x:",
    "case 1:",
    "continue",
    "break",
    "return",
    "raise",
    "pass",
    "dist.all_reduce(x)",
    "loss = model(batch)",
    "x += loss.item()",
    "if (n := len(batch)) > 0: continue",
    "dist.all_gather_into_tensor(out, buf, async_op=True)",
    "a, b = b, a",
    "@decorator",
    "lambda: (yield)",
    "(((",
    "'''",
    "\\",
    "",
];

fn python_lines() -> impl Strategy<Value = String> {
    prop::collection::vec((0usize..6, prop::sample::select(FRAGMENTS)), 0..40).prop_map(|lines| {
        let mut out = String::new();
        for (indent, text) in lines {
            out.push_str(&"    ".repeat(indent));
            out.push_str(text);
            out.push('\n');
        }
        out
    })
}

fn source() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[ -~\\n\\t\\r]{0,300}", python_lines()]
}

fn exercise(src: &str, a: u32, b: u32, expr: &str) {
    let m = Module::parse(src);
    let _ = m.syntax_errors();
    let lines = src.lines().count() as u32 + 2;
    for line in [0, a, b, u32::MAX, lines] {
        let _ = m.line_text(line);
        let _ = m.function_at(line);
        let _ = m.explain_call(line);
        let _ = m.find_branch(line, None);
        let _ = m.find_branch(line, Some(a));
        let _ = m.find_branch(line, Some(line));
        let _ = classify_expression(&m, line, expr);
        let uniform = ClassifyOptions { uniform_config: true };
        let _ = classify_expression_with(&m, line, expr, uniform);
        let _ = m.find_order_branch(line);
        let _ = m.trace_value(line, expr);
    }
    let _ = m.outline();
    // Every pair of real lines, for the small sources.
    if lines < 25 {
        for x in 1..lines {
            for y in 1..lines {
                let _ = m.find_branch(x, Some(y));
            }
            let _ = m.explain_call(x);
            let _ = m.find_order_branch(x);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn never_panics(src in source(), a in 0u32..60, b in any::<u32>(), expr in "[ -~]{0,40}") {
        exercise(&src, a, b, &expr);
    }
}

#[test]
fn deep_nesting_is_bounded() {
    let mut src = String::from("def f(x):\n");
    for depth in 1..400 {
        let _ = writeln!(src, "{}if x{depth}:", "    ".repeat(depth));
    }
    let _ = writeln!(src, "{}dist.all_reduce(x)", "    ".repeat(400));
    let expr = format!("{}x{}", "(".repeat(300), ")".repeat(300));
    let sum = format!("y = {}\n", vec!["x"; 3000].join(" + "));
    src.push_str(&sum);
    exercise(&src, 401, 2, &expr);
}
