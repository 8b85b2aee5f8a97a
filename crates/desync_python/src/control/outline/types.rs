//! The plain-data facts of an [`Outline`]: imports, functions, calls and the compound
//! statements a linter reasons about. Positions are 1-based lines and 1-based character
//! columns, as Ruff and editors show them.

use crate::syntax::types::{Construct, Function, Jump};

/// Every fact the linter needs from one file, gathered in one walk over all scopes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outline {
    /// Imports of every scope, in source order.
    pub imports: Vec<Import>,
    /// Every `def` (methods and nested functions included), in source order.
    pub functions: Vec<Function>,
    /// Every call expression, in source order (lambdas and comprehensions included).
    pub calls: Vec<Call>,
    pub conditionals: Vec<Conditional>,
    pub loops: Vec<Loop>,
    pub tries: Vec<TryBlock>,
    /// Every `continue`, `break` and `return`, in source order.
    pub jumps: Vec<JumpStmt>,
}

/// A `continue`, `break` or `return` statement.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JumpStmt {
    pub line: u32,
    pub column: u32,
    pub construct: Construct,
    pub function: Option<u32>,
}

/// Lines `first..=last` of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LineRange {
    pub first: u32,
    pub last: u32,
}

impl LineRange {
    pub fn contains(self, line: u32) -> bool {
        self.first <= line && line <= self.last
    }
}

/// One imported name. `import torch.distributed as dist` → module `torch.distributed`,
/// `name: None`, alias `dist`; `import torch.distributed` binds `torch` (module `torch`);
/// `from torch.distributed import all_reduce as ar` → module `torch.distributed`,
/// `name: Some("all_reduce")`, alias `ar`. Relative modules keep their dots (`.c10d`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Import {
    pub line: u32,
    pub module: String,
    pub name: Option<String>,
    pub alias: String,
}

/// A call expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Call {
    pub line: u32,
    pub column: u32,
    /// The callee as a dotted path (`torch.distributed.all_reduce`, `self.sync`), or its
    /// source text when it is not a chain of names (`get_pg().barrier`: `get_pg().barrier`).
    pub callee: String,
    /// `def` line of the innermost function around the call; `None` at module level.
    pub function: Option<u32>,
    /// Source text of the positional arguments (`*args` keeps its star).
    pub arguments: Vec<String>,
    /// Keyword arguments as (name, value text); `**kwargs` has the name `**`.
    pub keywords: Vec<(String, String)>,
    /// Targets of the assignment whose whole value is this call (`model = DDP(model)`).
    pub assigned_to: Vec<String>,
}

impl Call {
    /// The last segment of the callee (`all_reduce` for `dist.all_reduce`).
    pub fn name(&self) -> &str {
        self.callee.rsplit('.').next().unwrap_or(&self.callee)
    }

    /// The value passed for keyword `name`.
    pub fn keyword(&self, name: &str) -> Option<&str> {
        self.keywords.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// An `if` statement with its `elif`/`else` clauses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Conditional {
    pub line: u32,
    pub column: u32,
    pub function: Option<u32>,
    /// The `if` body first, then each `elif`/`else` in order.
    pub clauses: Vec<Clause>,
}

impl Conditional {
    /// True when the last clause is an `else` (some clause always runs).
    pub fn has_else(&self) -> bool {
        self.clauses.len() > 1 && self.clauses.last().is_some_and(|c| c.test.is_none())
    }

    /// The last line of the statement (its last clause's body).
    pub fn last_line(&self) -> u32 {
        self.clauses.last().map_or(self.line, |c| c.body.last)
    }
}

/// One clause of a [`Conditional`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Clause {
    /// Line of the `if`/`elif`/`else` keyword.
    pub line: u32,
    /// Source text of the test; `None` for `else`.
    pub test: Option<String>,
    /// Line where the test starts.
    pub test_line: Option<u32>,
    pub body: LineRange,
    /// The test is (or, joined by `and`, includes) a membership test `x in c` / `x not in c`.
    pub membership: Option<Membership>,
    /// The operands of the test's top-level `and` (the whole test when it is no `and`), each
    /// with its `not` taken off: `not in_order and self._should_log(m)` is
    /// `[(in_order, negated), (self._should_log(m), plain)]`.
    pub conjuncts: Vec<Conjunct>,
}

/// One operand of a test's top-level `and`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Conjunct {
    /// Source text, without a leading `not`.
    pub text: String,
    /// Written with a leading `not`.
    pub negated: bool,
}

impl Conjunct {
    /// Whether `self` holds exactly when `other` does not (`x` and `not x`).
    pub fn contradicts(&self, other: &Conjunct) -> bool {
        self.text == other.text && self.negated != other.negated
    }
}

/// A membership test in a clause's test: `rank in ranks`, `rank not in group_ranks`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Membership {
    /// Source text of the tested member (`dist.get_rank()`).
    pub member: String,
    /// `not in`: the clause runs on the non-members.
    pub negated: bool,
}

/// A `for` or `while` loop.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Loop {
    pub line: u32,
    pub column: u32,
    pub function: Option<u32>,
    /// `true` for `while`.
    pub is_while: bool,
    /// The iterable of a `for`, the test of a `while`.
    pub header: String,
    pub header_line: u32,
    pub body: LineRange,
}

/// A `try` statement with handlers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TryBlock {
    pub line: u32,
    pub function: Option<u32>,
    pub body: LineRange,
    pub handlers: Vec<Handler>,
    /// Last line of the whole statement (`else`/`finally` included).
    pub end_line: u32,
}

/// One `except` clause.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Handler {
    pub line: u32,
    pub column: u32,
    /// Source text of the exception type; `None` for a bare `except:`.
    pub exception: Option<String>,
    /// The dotted names of the classes it catches (`except (ValueError, json.JSONDecodeError)`);
    /// `None` for a bare `except:` or a type that is not written as names.
    pub caught: Option<Vec<String>>,
    pub body: LineRange,
    /// The first `continue`/`break`/`return`/`raise` directly in the body (not in a loop of
    /// its own).
    pub jump: Option<Jump>,
    /// Every path through the handler passes the error on: it raises or ends the process
    /// (`sys.exit`, `os._exit`, `os.abort`) on every branch (`else: raise` alone does not).
    pub propagates: bool,
}
