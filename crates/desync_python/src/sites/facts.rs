//! What a function's own tests say where it calls another function, and which branches of
//! the callee those facts rule out.
//!
//! ```python
//! if self.pp_size == 1 and self.ep_size == 1:
//!     super().save_unsharded_model(model, ...)   # the callee's pp_size > 1 branch holds
//!                                                # its barrier, never taken from here
//! ```
//!
//! A helper's summary ([`super::Reach`]) is what any call of it may issue. A call made under
//! tests of the caller's object (`self.pp_size == 1`) or of its parameters (`use_zero`) hands
//! the same values on: through the same object (`self.method(...)`, `super().method(...)`)
//! or as arguments (`shard(opt, use_zero=self.use_zero)`), so the callee's `if`s on them
//! decide the same way, and the collectives of a branch they exclude are not issued by this
//! call. The facts follow the call into the callee's own calls. Only values compared with
//! literals (`==`, `!=`, `is`, `is not`, order with integers) or tested for truth are facts,
//! and only fields and parameters neither function assigns: a fact is what the code shows,
//! not a guess about the configuration.
//!
//! The call's own arguments are facts too ([`Facts::from_arguments`]): a literal passed
//! (`write(model, path, gather=False)`) is the parameter's value, and a value the caller shows
//! is never `None` (`convert(model, state_dict=sd)`, `sd` returned by `get_model_state_dict`)
//! is not `None`, so `if gather:` and `if state_dict is None:` in the callee decide for this
//! call. Such a fact stands while the callee does not rebind the parameter, except where the
//! fact itself rules the rebinding out (`if state_dict is None: state_dict = gather(model)`).

use ruff_python_ast::{BoolOp, CmpOp, Expr, ExprCall, Number, Stmt, StmtFunctionDef, UnaryOp};
use ruff_text_size::Ranged;

use crate::syntax::expr::dotted;
use crate::syntax::tree::{self, Frame, Slot};

/// How deep into `and`/`or`/`not` a test is read (deeper parts say nothing).
const MAX_TEST_DEPTH: usize = 32;

/// A literal a value is compared with. Booleans are the integers Python makes them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Literal {
    Int(i64),
    Text(String),
    None,
}

impl Literal {
    fn of(e: &Expr) -> Option<Literal> {
        match e {
            Expr::NumberLiteral(n) => match &n.value {
                Number::Int(i) => i.as_i64().map(Literal::Int),
                _ => None,
            },
            Expr::BooleanLiteral(b) => Some(Literal::Int(i64::from(b.value))),
            Expr::NoneLiteral(_) => Some(Literal::None),
            Expr::StringLiteral(s) => Some(Literal::Text(s.value.to_str().to_owned())),
            Expr::UnaryOp(u) if u.op == UnaryOp::USub => match Literal::of(&u.operand)? {
                Literal::Int(i) => i.checked_neg().map(Literal::Int),
                _ => None,
            },
            _ => None,
        }
    }

    fn truthy(&self) -> bool {
        match self {
            Literal::Int(i) => *i != 0,
            Literal::Text(s) => !s.is_empty(),
            Literal::None => false,
        }
    }
}

/// What is known of one value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Known {
    Equals(Literal),
    Differs(Literal),
    Truth(bool),
}

/// Facts about values of one function, by their path as that function spells them
/// (`self.pp_size`, `use_zero`, `config.use_zero`), in the order found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(super) struct Facts(Vec<(String, Known)>);

/// What a test decides under the facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Truth {
    Holds,
    Fails,
    Unknown,
}

impl Truth {
    fn not(self) -> Truth {
        match self {
            Truth::Holds => Truth::Fails,
            Truth::Fails => Truth::Holds,
            Truth::Unknown => Truth::Unknown,
        }
    }
}

impl Facts {
    /// Facts the tests `known` (each with whether it holds) establish about the values of
    /// `function` (its object's fields, its parameters) that it never assigns.
    pub(super) fn from_tests(function: &StmtFunctionDef, known: &[(&Expr, bool)]) -> Facts {
        let mut facts = Facts::default();
        let roots = super::parameter_names(function);
        for (test, holds) in known {
            facts.learn(test, &roots, *holds);
        }
        facts.drop_assigned(&function.body);
        facts
    }

    /// The facts that hold in `callee` at the call `call`, written in `stmt` of `caller`:
    /// `inherited` (what held when `caller` was entered), plus the tests of the `if`s around
    /// `stmt` (the clause holding it held, the clauses before it failed), handed on through
    /// the caller's object when `own_object` (`self.f()`, `super().f()`) and through the
    /// arguments the call passes (`use_zero=self.use_zero`). Values either function assigns
    /// are left out.
    pub(super) fn at_call(
        caller: &StmtFunctionDef,
        stmt: &Stmt,
        inherited: Option<&Facts>,
        callee: &StmtFunctionDef,
        call: &ExprCall,
        own_object: bool,
        through_instance: bool,
    ) -> Facts {
        let mut here = inherited.cloned().unwrap_or_default();
        let roots = super::parameter_names(caller);
        if let Some((_, frames)) = tree::scope_path_to(&caller.body, stmt.start()) {
            for frame in &frames {
                let Stmt::If(s) = frame.owner else { continue };
                let Some(taken) = clause_index(frame.slot) else { continue };
                for (i, test) in clause_tests(s).enumerate().take(taken + 1) {
                    if let Some(test) = test {
                        here.learn(test, &roots, i == taken);
                    }
                }
            }
        }
        if here.is_empty() {
            return here;
        }
        here.drop_assigned(&caller.body);
        let mut there = Facts::default();
        let parameters = super::parameter_names(callee);
        // (parameter, the dotted value the call passes for it).
        let passed: Vec<(&String, String)> = parameters
            .iter()
            .filter_map(|p| {
                let arg =
                    crate::values::value::argument_for(&parameters, through_instance, call, p)?;
                Some((p, dotted(arg)?))
            })
            .collect();
        let receivers =
            own_object.then(|| tree::first_parameter(caller).zip(tree::first_parameter(callee)));
        for (path, known) in here.0 {
            if let Some(Some((from, to))) = receivers
                && let Some(rest) = path.strip_prefix(from).filter(|r| r.starts_with('.'))
            {
                there.0.push((format!("{to}{rest}"), known.clone()));
            }
            for (p, value) in &passed {
                if let Some(rest) = path.strip_prefix(value.as_str())
                    && (rest.is_empty() || rest.starts_with('.'))
                {
                    there.0.push((format!("{p}{rest}"), known.clone()));
                }
            }
        }
        there.drop_assigned(&callee.body);
        there
    }

    /// Facts the arguments of `call` establish about the parameters of `callee` that its own
    /// `if`s test: a literal passed is the parameter's value (`save(sd, full=True)`), and a
    /// value the caller shows is never `None` (`not_none`) is not `None`
    /// (`convert(model_state_dict=sd)`, `sd` gathered by a call that returns a dict), so the
    /// callee's `if full:` and `if model_state_dict is None:` decide as this call makes them.
    /// Parameters the callee assigns are left out.
    pub(super) fn from_arguments(
        callee: &StmtFunctionDef,
        call: &ExprCall,
        through_instance: bool,
        not_none: &mut dyn FnMut(&Expr) -> bool,
    ) -> Facts {
        let tested = tested_names(&callee.body);
        let parameters = super::parameter_names(callee);
        let mut facts = Facts::default();
        for p in parameters.iter().filter(|p| tested.contains(p.as_str())) {
            let Some(arg) =
                crate::values::value::argument_for(&parameters, through_instance, call, p)
            else {
                continue;
            };
            if let Some(literal) = Literal::of(arg) {
                facts.0.push((p.clone(), Known::Equals(literal)));
            } else if not_none(arg) {
                facts.0.push((p.clone(), Known::Differs(Literal::None)));
            }
        }
        facts.drop_reassigned(&callee.body);
        facts
    }

    /// Leaves out the facts about values `body` assigns, unless the fact itself rules every
    /// such assignment out: `if sd is None: sd = gather()` keeps "`sd` is not `None`".
    fn drop_reassigned(&mut self, body: &[Stmt]) {
        let facts = std::mem::take(&mut self.0);
        self.0 = facts
            .into_iter()
            .filter(|(path, known)| {
                let alone = Facts(vec![(path.clone(), known.clone())]);
                let mut kept = true;
                tree::walk_scope(body, &mut |stmt, frames| {
                    kept = kept && !(own_bindings(stmt).contains(path) && alone.allow(frames));
                });
                kept
            })
            .collect();
    }

    /// These facts, then `more`'s about values these say nothing of.
    pub(super) fn extend(&mut self, more: Facts) {
        for (path, known) in more.0 {
            if self.known(&path).is_none() {
                self.0.push((path, known));
            }
        }
    }

    /// Leaves out the facts about values `body` (nested blocks included) assigns.
    fn drop_assigned(&mut self, body: &[Stmt]) {
        if self.0.is_empty() {
            return;
        }
        let assigned = crate::names::bindings::bound_paths(body);
        self.0.retain(|(path, _)| !assigned.contains(path.as_str()));
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Records what `test` holding (`holds`) or failing says about values rooted at `roots`.
    fn learn(&mut self, test: &Expr, roots: &[String], holds: bool) {
        self.learn_at(test, roots, holds, 0);
    }

    fn learn_at(&mut self, test: &Expr, roots: &[String], holds: bool, depth: usize) {
        if depth > MAX_TEST_DEPTH {
            return;
        }
        match test {
            Expr::BoolOp(b) if (b.op == BoolOp::And) == holds => {
                for v in &b.values {
                    self.learn_at(v, roots, holds, depth + 1);
                }
            }
            Expr::UnaryOp(u) if u.op == UnaryOp::Not => {
                self.learn_at(&u.operand, roots, !holds, depth + 1);
            }
            Expr::Compare(c) if c.ops.len() == 1 => {
                let Some((path, op, literal)) = comparison(&c.left, c.ops[0], &c.comparators[0])
                else {
                    return;
                };
                if !rooted(&path, roots) {
                    return;
                }
                let known = match (op, holds) {
                    (CmpOp::Eq | CmpOp::Is, true) | (CmpOp::NotEq | CmpOp::IsNot, false) => {
                        Known::Equals(literal)
                    }
                    (CmpOp::Eq | CmpOp::Is, false) | (CmpOp::NotEq | CmpOp::IsNot, true) => {
                        Known::Differs(literal)
                    }
                    _ => return,
                };
                self.0.push((path, known));
            }
            _ => {
                if let Some(path) = dotted(test).filter(|p| rooted(p, roots)) {
                    self.0.push((path, Known::Truth(holds)));
                }
            }
        }
    }

    /// Whether the statement `frames` lead to can run under the facts: no `if` around it
    /// takes another clause for certain.
    pub(super) fn allow(&self, frames: &[Frame<'_>]) -> bool {
        frames.iter().all(|frame| {
            let Stmt::If(s) = frame.owner else { return true };
            let Some(taken) = clause_index(frame.slot) else { return true };
            for (i, test) in clause_tests(s).enumerate().take(taken + 1) {
                let truth = test.map_or(Truth::Holds, |t| self.decide(t, 0));
                match (i == taken, truth) {
                    (true, Truth::Fails) | (false, Truth::Holds) => return false,
                    _ => {}
                }
            }
            true
        })
    }

    /// What `test` decides under the facts.
    fn decide(&self, test: &Expr, depth: usize) -> Truth {
        if depth > MAX_TEST_DEPTH {
            return Truth::Unknown;
        }
        match test {
            Expr::BoolOp(b) => {
                let (absorbing, neutral) = match b.op {
                    BoolOp::And => (Truth::Fails, Truth::Holds),
                    BoolOp::Or => (Truth::Holds, Truth::Fails),
                };
                let decided: Vec<Truth> =
                    b.values.iter().map(|v| self.decide(v, depth + 1)).collect();
                if decided.contains(&absorbing) {
                    absorbing
                } else if decided.iter().all(|t| *t == neutral) {
                    neutral
                } else {
                    Truth::Unknown
                }
            }
            Expr::UnaryOp(u) if u.op == UnaryOp::Not => self.decide(&u.operand, depth + 1).not(),
            Expr::Compare(c) if c.ops.len() == 1 => {
                comparison(&c.left, c.ops[0], &c.comparators[0]).map_or(
                    Truth::Unknown,
                    |(path, op, literal)| {
                        self.known(&path).map_or(Truth::Unknown, |k| compare(k, op, &literal))
                    },
                )
            }
            _ => dotted(test).and_then(|p| self.known(&p)).map_or(Truth::Unknown, |k| match k {
                Known::Equals(v) => truth(v.truthy()),
                Known::Truth(b) => truth(*b),
                Known::Differs(_) => Truth::Unknown,
            }),
        }
    }

    fn known(&self, path: &str) -> Option<&Known> {
        self.0.iter().find(|(p, _)| p == path).map(|(_, k)| k)
    }
}

/// The names the tests of `body`'s `if`s and `elif`s read (nested blocks included).
fn tested_names(body: &[Stmt]) -> std::collections::HashSet<&str> {
    let mut names = std::collections::HashSet::new();
    tree::walk_scope(body, &mut |stmt, _| {
        let Stmt::If(s) = stmt else { return };
        for test in clause_tests(s).flatten() {
            crate::syntax::expr::walk(test, &mut |e| {
                if let Expr::Name(n) = e {
                    names.insert(n.id.as_str());
                }
            });
        }
    });
    names
}

/// The dotted names `stmt` rebinds itself, its nested blocks left out (they are visited as
/// statements of their own): assignment, `for` and `with ... as` targets, `del`; an `if`,
/// `while`, `try` or `match` header none. An item store (`sd[k] = v`) changes what a value
/// holds, not which value it is (`None` or a literal stays one), so it is not counted.
fn own_bindings(stmt: &Stmt) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    match stmt {
        Stmt::If(_) | Stmt::While(_) | Stmt::Try(_) | Stmt::Match(_) => {}
        Stmt::Assign(a) => a.targets.iter().for_each(|t| rebound(t, &mut out)),
        Stmt::AnnAssign(a) => rebound(&a.target, &mut out),
        Stmt::AugAssign(a) => rebound(&a.target, &mut out),
        Stmt::Delete(d) => d.targets.iter().for_each(|t| rebound(t, &mut out)),
        Stmt::For(f) => rebound(&f.target, &mut out),
        Stmt::With(w) => {
            for item in &w.items {
                if let Some(vars) = &item.optional_vars {
                    rebound(vars, &mut out);
                }
            }
        }
        _ => return crate::names::bindings::bound_paths(std::slice::from_ref(stmt)),
    }
    out
}

/// The dotted names the target `t` rebinds (an item store rebinds none).
fn rebound(t: &Expr, out: &mut std::collections::HashSet<String>) {
    match t {
        Expr::Tuple(x) => x.elts.iter().for_each(|e| rebound(e, out)),
        Expr::List(x) => x.elts.iter().for_each(|e| rebound(e, out)),
        Expr::Starred(x) => rebound(&x.value, out),
        Expr::Subscript(_) => {}
        _ => out.extend(dotted(t)),
    }
}

/// The clause of an `if` a block of it is: 0 for the body, `i + 1` for `elif`/`else` `i`.
fn clause_index(slot: Slot) -> Option<usize> {
    match slot {
        Slot::Body => Some(0),
        Slot::Clause(i) => Some(i + 1),
        _ => None,
    }
}

/// The tests of an `if`'s clauses in order (`None` for an `else`).
fn clause_tests(s: &ruff_python_ast::StmtIf) -> impl Iterator<Item = Option<&Expr>> {
    std::iter::once(Some(&*s.test)).chain(s.elif_else_clauses.iter().map(|c| c.test.as_ref()))
}

/// Whether `path` starts at one of `roots`: the function's parameters (its object first, for a
/// method), the only values its facts can be about.
fn rooted(path: &str, roots: &[String]) -> bool {
    let root = path.split('.').next().unwrap_or(path);
    roots.iter().any(|r| r == root)
}

fn truth(b: bool) -> Truth {
    if b { Truth::Holds } else { Truth::Fails }
}

/// `field op literal` under what is known of the field.
fn compare(known: &Known, op: CmpOp, literal: &Literal) -> Truth {
    match known {
        Known::Equals(v) => match op {
            CmpOp::Eq | CmpOp::Is => truth(v == literal),
            CmpOp::NotEq | CmpOp::IsNot => truth(v != literal),
            CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE => match (v, literal) {
                (Literal::Int(a), Literal::Int(b)) => truth(match op {
                    CmpOp::Lt => a < b,
                    CmpOp::LtE => a <= b,
                    CmpOp::Gt => a > b,
                    _ => a >= b,
                }),
                _ => Truth::Unknown,
            },
            _ => Truth::Unknown,
        },
        Known::Differs(v) if v == literal => match op {
            CmpOp::Eq | CmpOp::Is => Truth::Fails,
            CmpOp::NotEq | CmpOp::IsNot => Truth::Holds,
            _ => Truth::Unknown,
        },
        // A value known to be truthy is not None.
        Known::Truth(true) if *literal == Literal::None => match op {
            CmpOp::Is | CmpOp::Eq => Truth::Fails,
            CmpOp::IsNot | CmpOp::NotEq => Truth::Holds,
            _ => Truth::Unknown,
        },
        _ => Truth::Unknown,
    }
}

/// `path op literal` (or `literal op path`, the order flipped), `path` a dotted name.
fn comparison(left: &Expr, op: CmpOp, right: &Expr) -> Option<(String, CmpOp, Literal)> {
    if let (Some(path), Some(literal)) = (dotted(left), Literal::of(right)) {
        return Some((path, op, literal));
    }
    let (path, literal) = (dotted(right)?, Literal::of(left)?);
    Some((path, crate::values::condition::flip(op), literal))
}
