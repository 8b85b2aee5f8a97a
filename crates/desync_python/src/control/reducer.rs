//! Gradient reducers that wait for every parameter (DDP's `Reducer`; the table's `[[reducer]]`
//! rows). Such a wrapper issues its bucket collectives from inside the backward pass, as each
//! bucket's gradients are all ready: which parameters a rank's forward used decides which
//! collectives its backward issues. A rank whose forward skipped a submodule (an `if` around
//! `self.meta(x)` that reads the rank's batch) leaves a bucket unready: its backward issues
//! nothing for it while its peers wait there, and its next forward raises ("Expected to have
//! finished reduction in the prior iteration"). The `if` is on no stack — the forward returned
//! long before anyone waited — so the bridge asks for it here.
//!
//! Two questions: which project classes `module` wraps in such a reducer ([`ReducerWrap`]), and
//! where a wrapped class's forward uses one of its own submodules or parameters on one arm of an
//! `if` only, or after an early `return` that can skip it ([`ForwardSkip`]).

use ruff_python_ast::{Expr, Stmt, StmtClassDef, StmtFunctionDef};
use ruff_text_size::Ranged;

use crate::names::knowledge::knowledge;
use crate::syntax::expr;
use crate::syntax::module::Module;
use crate::syntax::tree;
use crate::values::Analysis;

/// Methods of `nn.Module` that return the module itself: `Net().to(device)` wraps a `Net`.
const RETURNS_SELF: &[&str] = &["to", "cuda", "cpu", "train", "eval", "half", "float", "bfloat16"];

/// A call of a reducer wrapper on a model the project defines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReducerWrap {
    /// 1-based line of the wrapper's call.
    pub line: u32,
    /// The wrapper, qualified (`torch.nn.parallel.DistributedDataParallel`).
    pub wrapper: String,
    /// The name of the wrapped model's class, as the call's module spells it (`TicketRouter`).
    pub class: String,
    /// The method of the model the wrapper runs each step (`forward`).
    pub method: String,
    /// The call passes the table's keyword that makes the reducer tolerate parameters without
    /// a gradient (`find_unused_parameters=True`): a skipped submodule hangs nothing.
    pub tolerates_unused: bool,
}

/// A use of one of the model's own submodules or parameters that some paths through its
/// forward do not reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardSkip {
    /// 1-based line of the use (its guards are the candidates).
    pub line: u32,
    /// The attribute used (`meta` of `self.meta(x)`).
    pub attribute: String,
}

impl Analysis<'_> {
    /// The reducer wrappers `module` calls on a model of a class it can name: the first
    /// argument a call of the class (`DDP(Net(...))`, `DDP(Net(...).to(dev))`) or a name last
    /// bound to one in the same function (`net = Net(...)`, then `DDP(net)`).
    pub fn reducer_wraps(&self, module: &Module) -> Vec<ReducerWrap> {
        let mut out = Vec::new();
        tree::walk_all(module.body(), &mut |stmt| {
            for header in tree::header_exprs(stmt) {
                expr::walk(header, &mut |e| {
                    let Expr::Call(call) = e else { return };
                    let line = module.line_of(call.start());
                    let callee = &module.source()[call.func.range()];
                    let Some(wrapper) = self.qualified_name(module, line, callee) else { return };
                    let Some(row) = knowledge().reducer(&wrapper) else { return };
                    let Some(model) = call
                        .arguments
                        .args
                        .first()
                        .or_else(|| call.arguments.find_keyword("module").map(|k| &k.value))
                    else {
                        return;
                    };
                    let Some(class) = constructed_class(module, model, line) else { return };
                    let tolerates_unused = call
                        .arguments
                        .find_keyword(&row.tolerates_keyword)
                        .is_some_and(|k| !matches!(&k.value, Expr::BooleanLiteral(b) if !b.value));
                    out.push(ReducerWrap {
                        line,
                        wrapper,
                        class,
                        method: row.method.clone(),
                        tolerates_unused,
                    });
                });
            }
        });
        out
    }

    /// The uses in `class`'s `method` (defined in `module`) of the class's own submodules and
    /// parameters — attributes its `__init__` assigns from a call — that some path through
    /// the method skips: on one arm of an `if` and not on every other (a missing `else` is an
    /// arm that uses nothing), or after an `if` whose arm returns. Empty when `module` does
    /// not define the class or the method.
    pub fn forward_skips(&self, module: &Module, class: &str, method: &str) -> Vec<ForwardSkip> {
        let Some(def) = class_def(module.body(), class) else { return Vec::new() };
        let owned = owned_attributes(def);
        let Some(forward) = method_def(def, method) else { return Vec::new() };
        let Some(this) = tree::first_parameter(forward) else { return Vec::new() };
        let mut out = Vec::new();
        skips_in(module, &forward.body, this, &owned, &mut out);
        out.sort_by_key(|s| s.line);
        out.dedup();
        out
    }
}

/// The class a model expression constructs, followed through `.to(...)`-style calls and one
/// assignment in the enclosing function.
fn constructed_class(module: &Module, model: &Expr, line: u32) -> Option<String> {
    match model {
        Expr::Call(c) => match &*c.func {
            Expr::Attribute(a) if RETURNS_SELF.contains(&a.attr.id.as_str()) => {
                constructed_class(module, &a.value, line)
            }
            func => {
                let name = expr::last_segment(func)?;
                // A class by the convention the project's own code follows: `Net(...)`,
                // `models.Net(...)`; a function's result (`build_model(cfg)`) is not followed.
                name.starts_with(char::is_uppercase).then(|| name.to_owned())
            }
        },
        Expr::Name(n) => {
            let function = module.function_at(line)?;
            let mut last = None;
            let def = tree::path_to(module, function.def_line)?.leaf();
            let Stmt::FunctionDef(def) = def else { return None };
            tree::walk_all(&def.body, &mut |stmt| {
                if let Stmt::Assign(a) = stmt
                    && module.line_of(a.start()) < line
                    && a.targets.iter().any(|t| matches!(t, Expr::Name(t) if t.id == n.id))
                {
                    last = Some(&*a.value);
                }
            });
            last.and_then(|value| match value {
                Expr::Name(_) => None,
                value => constructed_class(module, value, line),
            })
        }
        _ => None,
    }
}

fn class_def<'a>(suite: &'a [Stmt], name: &str) -> Option<&'a StmtClassDef> {
    let mut found = None;
    tree::walk_all(suite, &mut |stmt| {
        if let Stmt::ClassDef(c) = stmt
            && found.is_none()
            && c.name.id.as_str() == name
        {
            found = Some(c);
        }
    });
    found
}

fn method_def<'a>(class: &'a StmtClassDef, name: &str) -> Option<&'a StmtFunctionDef> {
    class.body.iter().find_map(|s| match s {
        Stmt::FunctionDef(f) if f.name.id.as_str() == name => Some(f),
        _ => None,
    })
}

/// The attributes `__init__` assigns through its first parameter from a call (`self.meta =
/// nn.Linear(...)`, `self.scale = nn.Parameter(...)`): what may hold parameters. A plain value
/// (`self.p = p`) holds none.
fn owned_attributes(class: &StmtClassDef) -> Vec<String> {
    let Some(init) = method_def(class, "__init__") else { return Vec::new() };
    let Some(this) = tree::first_parameter(init) else { return Vec::new() };
    let mut out = Vec::new();
    tree::walk_all(&init.body, &mut |stmt| {
        let (targets, value): (Vec<&Expr>, &Expr) = match stmt {
            Stmt::Assign(a) => (a.targets.iter().collect(), &a.value),
            Stmt::AnnAssign(a) if a.value.is_some() => {
                (vec![&*a.target], a.value.as_deref().unwrap_or(&a.target))
            }
            _ => return,
        };
        if !matches!(value, Expr::Call(_)) {
            return;
        }
        for t in targets {
            if let Expr::Attribute(a) = t
                && matches!(&*a.value, Expr::Name(n) if n.id.as_str() == this)
            {
                out.push(a.attr.id.to_string());
            }
        }
    });
    out
}

/// The owned attributes a suite reads through `this` (`self.meta(x)`, `self.scale * h`), with
/// the line of each first read; nested `def`s are not entered (they run when called).
fn uses(module: &Module, suite: &[Stmt], this: &str, owned: &[String]) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = Vec::new();
    tree::walk_all(suite, &mut |stmt| {
        if matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
            return;
        }
        for header in tree::header_exprs(stmt) {
            expr::walk(header, &mut |e| {
                if let Expr::Attribute(a) = e
                    && matches!(&*a.value, Expr::Name(n) if n.id.as_str() == this)
                    && owned.iter().any(|o| o == a.attr.id.as_str())
                    && !out.iter().any(|(name, _)| name == a.attr.id.as_str())
                {
                    out.push((a.attr.id.to_string(), module.line_of(e.start())));
                }
            });
        }
    });
    out
}

/// Whether a suite always leaves the function (its last statement returns or raises).
fn leaves(suite: &[Stmt]) -> bool {
    matches!(suite.last(), Some(Stmt::Return(_) | Stmt::Raise(_)))
}

fn skips_in(
    module: &Module,
    suite: &[Stmt],
    this: &str,
    owned: &[String],
    out: &mut Vec<ForwardSkip>,
) {
    for (i, stmt) in suite.iter().enumerate() {
        if let Stmt::If(s) = stmt {
            let mut arms: Vec<&[Stmt]> = vec![&s.body];
            arms.extend(s.elif_else_clauses.iter().map(|c| &c.body[..]));
            let has_else = s.elif_else_clauses.last().is_some_and(|c| c.test.is_none());
            let arm_uses: Vec<Vec<(String, u32)>> =
                arms.iter().map(|arm| uses(module, arm, this, owned)).collect();
            for (k, used) in arm_uses.iter().enumerate() {
                for (name, line) in used {
                    let everywhere = has_else
                        && arm_uses
                            .iter()
                            .enumerate()
                            .all(|(j, u)| j == k || u.iter().any(|(n, _)| n == name));
                    if !everywhere {
                        out.push(ForwardSkip { line: *line, attribute: name.clone() });
                    }
                }
            }
            // An arm that returns skips what the rest of the method uses.
            if arms.iter().any(|arm| leaves(arm)) {
                for (name, line) in uses(module, &suite[i + 1..], this, owned) {
                    out.push(ForwardSkip { line, attribute: name });
                }
            }
        }
        for block in tree::blocks(stmt) {
            if !matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                skips_in(module, block.suite, this, owned, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Analysis, Module};

    const SRC: &str = "\
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

class Router(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.body = nn.Linear(d, d)
        self.extra = nn.Linear(d, d)
        self.head = nn.Linear(d, 2)
        self.gate = nn.Linear(d, 1)
        self.temperature = 2.0

    def forward(self, x, flags):
        h = self.body(x) / self.temperature
        if flags.any():
            h = h + self.extra(x)
        if x.shape[0] > 4:
            h = self.gate(h) * h
        else:
            h = h * self.gate(h)
        if flags.all():
            return h
        return self.head(h)

def build(d, rank):
    net = Router(d).to('cpu')
    model = DDP(net)
    other = DDP(Router(d), find_unused_parameters=True)
    return model, other
";

    #[test]
    fn reducer_wraps_name_the_class_and_whether_unused_parameters_are_tolerated() {
        let module = Module::parse(SRC);
        let wraps: Vec<(u32, String, bool)> = Analysis::default()
            .reducer_wraps(&module)
            .into_iter()
            .map(|w| (w.line, w.class, w.tolerates_unused))
            .collect();
        assert_eq!(wraps, vec![(28, "Router".to_owned(), false), (29, "Router".to_owned(), true)]);
    }

    #[test]
    fn forward_skips_are_uses_some_path_does_not_reach() {
        let module = Module::parse(SRC);
        let skips: Vec<(u32, String)> = Analysis::default()
            .forward_skips(&module, "Router", "forward")
            .into_iter()
            .map(|s| (s.line, s.attribute))
            .collect();
        // `self.extra` under an `if` without `else`; `self.head` after an arm that returns;
        // `self.gate` is used on both arms, `self.temperature` holds no parameters.
        assert_eq!(skips, vec![(17, "extra".to_owned()), (24, "head".to_owned())]);
    }
}
