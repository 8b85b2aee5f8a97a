//! What a method's own tests say about its object where it calls another method of the same
//! object, and which branches of the callee those facts rule out.
//!
//! ```python
//! if self.pp_size == 1 and self.ep_size == 1:
//!     super().save_unsharded_model(model, ...)   # the callee's pp_size > 1 branch holds
//!                                                # its barrier, never taken from here
//! ```
//!
//! A helper's summary ([`super::Reach`]) is what any call of it may issue. A call made
//! under tests of the object's fields (`self.pp_size == 1`) passes the same object
//! (`self.method(...)`, `super().method(...)`), so the callee's `if`s on those fields decide
//! the same way and the collectives of a branch they exclude are not issued by this call.
//! Only fields compared with literals (`==`, `!=`, `is`, `is not`, order with integers) or
//! tested for truth are facts, and only fields neither method assigns: a fact is what the code
//! shows, not a guess about the configuration.

use ruff_python_ast::{BoolOp, CmpOp, Expr, Number, Stmt, StmtFunctionDef, UnaryOp};
use ruff_text_size::Ranged;

use crate::expr::dotted;
use crate::tree::{self, Frame, Slot};

/// A literal a field is compared with. Booleans are the integers Python makes them.
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

/// What is known of one field of the object.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Known {
    Equals(Literal),
    Differs(Literal),
    Truth(bool),
}

/// Facts about fields of the caller's object (field path without the receiver: `pp_size`,
/// `config.use_zero`), in the order found.
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
    /// The facts the `if`s around `stmt` (a statement of `caller`'s own scope) establish for
    /// a call made in it: the test of the clause holding it, the negation of the tests of the
    /// clauses before that one. Fields either function assigns are left out.
    pub(super) fn at(caller: &StmtFunctionDef, stmt: &Stmt, callee: &StmtFunctionDef) -> Facts {
        let mut facts = Facts::default();
        let Some(receiver) = first_parameter(caller) else { return facts };
        let Some((_, frames)) = tree::scope_path_to(&caller.body, stmt.start()) else {
            return facts;
        };
        for frame in &frames {
            let Stmt::If(s) = frame.owner else { continue };
            let tests = std::iter::once(Some(&*s.test))
                .chain(s.elif_else_clauses.iter().map(|c| c.test.as_ref()));
            let taken = match frame.slot {
                Slot::Body => 0,
                Slot::Clause(i) => i + 1,
                _ => continue,
            };
            for (i, test) in tests.enumerate().take(taken + 1) {
                if let Some(test) = test {
                    facts.learn(test, receiver, i == taken);
                }
            }
        }
        let assigned = |def: &StmtFunctionDef, field: &str| {
            first_parameter(def).is_some_and(|r| assigns(&def.body, &format!("{r}.{field}")))
        };
        facts.0.retain(|(field, _)| !assigned(caller, field) && !assigned(callee, field));
        facts
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Records what `test` holding (`holds`) or failing says about fields of `receiver`.
    fn learn(&mut self, test: &Expr, receiver: &str, holds: bool) {
        match test {
            Expr::BoolOp(b) if (b.op == BoolOp::And) == holds => {
                for v in &b.values {
                    self.learn(v, receiver, holds);
                }
            }
            Expr::UnaryOp(u) if u.op == UnaryOp::Not => self.learn(&u.operand, receiver, !holds),
            Expr::Compare(c) if c.ops.len() == 1 => {
                let Some((field, op, literal)) =
                    comparison(&c.left, c.ops[0], &c.comparators[0], receiver)
                else {
                    return;
                };
                let known = match (op, holds) {
                    (CmpOp::Eq | CmpOp::Is, true) | (CmpOp::NotEq | CmpOp::IsNot, false) => {
                        Known::Equals(literal)
                    }
                    (CmpOp::Eq | CmpOp::Is, false) | (CmpOp::NotEq | CmpOp::IsNot, true) => {
                        Known::Differs(literal)
                    }
                    _ => return,
                };
                self.0.push((field, known));
            }
            _ => {
                if let Some(field) = field_of(test, receiver) {
                    self.0.push((field, Known::Truth(holds)));
                }
            }
        }
    }

    /// Whether the statement `frames` lead to (in a callee whose object is `receiver`) can
    /// run under the facts: no `if` around it takes another clause for certain.
    pub(super) fn allow(&self, frames: &[Frame<'_>], receiver: &str) -> bool {
        frames.iter().all(|frame| {
            let Stmt::If(s) = frame.owner else { return true };
            let taken = match frame.slot {
                Slot::Body => 0,
                Slot::Clause(i) => i + 1,
                _ => return true,
            };
            let tests = std::iter::once(Some(&*s.test))
                .chain(s.elif_else_clauses.iter().map(|c| c.test.as_ref()));
            for (i, test) in tests.enumerate().take(taken + 1) {
                let truth = test.map_or(Truth::Holds, |t| self.decide(t, receiver, 0));
                match (i == taken, truth) {
                    (true, Truth::Fails) | (false, Truth::Holds) => return false,
                    _ => {}
                }
            }
            true
        })
    }

    /// What `test` decides under the facts.
    fn decide(&self, test: &Expr, receiver: &str, depth: usize) -> Truth {
        if depth > 32 {
            return Truth::Unknown;
        }
        match test {
            Expr::BoolOp(b) => {
                let (absorbing, neutral) = match b.op {
                    BoolOp::And => (Truth::Fails, Truth::Holds),
                    BoolOp::Or => (Truth::Holds, Truth::Fails),
                };
                let decided: Vec<Truth> =
                    b.values.iter().map(|v| self.decide(v, receiver, depth + 1)).collect();
                if decided.contains(&absorbing) {
                    absorbing
                } else if decided.iter().all(|t| *t == neutral) {
                    neutral
                } else {
                    Truth::Unknown
                }
            }
            Expr::UnaryOp(u) if u.op == UnaryOp::Not => {
                self.decide(&u.operand, receiver, depth + 1).not()
            }
            Expr::Compare(c) if c.ops.len() == 1 => {
                comparison(&c.left, c.ops[0], &c.comparators[0], receiver).map_or(
                    Truth::Unknown,
                    |(field, op, literal)| {
                        self.known(&field).map_or(Truth::Unknown, |k| compare(k, op, &literal))
                    },
                )
            }
            _ => {
                field_of(test, receiver).and_then(|f| self.known(&f)).map_or(Truth::Unknown, |k| {
                    match k {
                        Known::Equals(v) => truth(v.truthy()),
                        Known::Truth(b) => truth(*b),
                        Known::Differs(_) => Truth::Unknown,
                    }
                })
            }
        }
    }

    fn known(&self, field: &str) -> Option<&Known> {
        self.0.iter().find(|(f, _)| f == field).map(|(_, k)| k)
    }
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
        // A field known to be truthy is not None; one known falsy is not a non-empty text.
        Known::Truth(true) if *literal == Literal::None => match op {
            CmpOp::Is | CmpOp::Eq => Truth::Fails,
            CmpOp::IsNot | CmpOp::NotEq => Truth::Holds,
            _ => Truth::Unknown,
        },
        _ => Truth::Unknown,
    }
}

/// `receiver.field op literal` (or `literal op receiver.field`, the order flipped).
fn comparison(
    left: &Expr,
    op: CmpOp,
    right: &Expr,
    receiver: &str,
) -> Option<(String, CmpOp, Literal)> {
    if let (Some(field), Some(literal)) = (field_of(left, receiver), Literal::of(right)) {
        return Some((field, op, literal));
    }
    let (field, literal) = (field_of(right, receiver)?, Literal::of(left)?);
    Some((field, crate::flow::condition::flip(op), literal))
}

/// `pp_size` for `self.pp_size` when `receiver` is `self`.
fn field_of(e: &Expr, receiver: &str) -> Option<String> {
    if !matches!(e, Expr::Attribute(_)) {
        return None;
    }
    let path = dotted(e)?;
    let field = path.strip_prefix(receiver)?.strip_prefix('.')?;
    (!field.is_empty()).then(|| field.to_owned())
}

pub(super) fn first_parameter(def: &StmtFunctionDef) -> Option<&str> {
    def.parameters.iter_non_variadic_params().next().map(|p| p.parameter.name.id.as_str())
}

/// Whether `body` (nested blocks included) assigns `path` (`self.pp_size`).
fn assigns(body: &[Stmt], path: &str) -> bool {
    let mut found = false;
    tree::walk_all(body, &mut |stmt| {
        let targets: Vec<&Expr> = match stmt {
            Stmt::Assign(a) => a.targets.iter().collect(),
            Stmt::AugAssign(a) => vec![&*a.target],
            Stmt::AnnAssign(a) => vec![&*a.target],
            _ => return,
        };
        found |= targets.iter().any(|t| dotted(t).is_some_and(|d| d == path));
    });
    found
}
