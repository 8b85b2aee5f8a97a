//! The crate's public answer types: functions, control-flow constructs, branches, call origins
//! and rank-dependence. They are plain owned data with no parser types inside, so the parser
//! behind them (Ruff's, pinned) can change without touching callers.

use std::fmt;

/// A `def` (or `async def`) found around a line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Function {
    /// The bare name, as `CPython`'s `co_name` and Flight Recorder frames spell it (no class prefix).
    pub name: String,
    /// 1-based line of the `def` keyword (decorators sit above it).
    pub def_line: u32,
    /// 1-based last line of the body.
    pub end_line: u32,
    /// Parameter names in declaration order (`self` included, `*args`/`**kwargs` last), to map a
    /// caller's arguments onto [`ArgOrigin::parameters`] and [`Branch::parameters`].
    pub parameters: Vec<String>,
}

/// The kind of control-flow construct that sends ranks different ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Construct {
    If,
    Elif,
    Else,
    While,
    For,
    Try,
    Except,
    Continue,
    Break,
    Return,
    Raise,
    With,
}

impl Construct {
    /// The Python keyword, as shown to users and written in JSON (`code.branch.construct`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::If => "if",
            Self::Elif => "elif",
            Self::Else => "else",
            Self::While => "while",
            Self::For => "for",
            Self::Try => "try",
            Self::Except => "except",
            Self::Continue => "continue",
            Self::Break => "break",
            Self::Return => "return",
            Self::Raise => "raise",
            Self::With => "with",
        }
    }
}

impl fmt::Display for Construct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a value can differ from one rank to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DependenceKind {
    /// The rank's own id (`dist.get_rank()`, `local_rank`, `os.environ["RANK"]`).
    RankId,
    /// Data that lives on one rank: loss values, metrics, batches, loader lengths.
    LocalData,
    /// A caught exception (only the ranks that raised take the path).
    Exception,
    /// Environment variables, host names, the file system, configuration files.
    Environment,
    /// Wall-clock or monotonic time.
    Time,
    /// Random numbers that are not seeded identically on every rank.
    Randomness,
    /// Something the analysis cannot see through (a parameter, a call into other code).
    Unknown,
}

impl DependenceKind {
    /// Phrase used in sentences such as "`x` depends on rank-local data".
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RankId => "rank id",
            Self::LocalData => "rank-local data",
            Self::Exception => "a caught exception",
            Self::Environment => "environment/host config",
            Self::Time => "time",
            Self::Randomness => "randomness",
            Self::Unknown => "unknown",
        }
    }
}

impl fmt::Display for DependenceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One reason a value can differ across ranks, with the source text that shows it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Dependence {
    pub kind: DependenceKind,
    /// Markdown-ish evidence, e.g. "`dist.get_rank()`" or
    /// "`loss` (assigned from `model(batch)` at line 18)".
    pub evidence: String,
    /// For a rank id: the process groups it is a rank within, as written in the source
    /// (`dist.get_rank(self.dp_group)` → `self.dp_group`); empty for the world rank.
    pub groups: Vec<String>,
    /// Shown to reach what the value is built from, not the value itself: through what is
    /// written into a container in place, a field of an object whose fields could not be kept
    /// apart, or what is read of an item picked by the source (`groups[rank].size()`).
    pub indirect: bool,
    /// Assumed rather than shown: a parameter no call in view passes, taken as the rank's own
    /// data because its function iterates it (the lint's last resort for entry points).
    pub guessed: bool,
}

impl Dependence {
    /// A dependence that is not a rank within a named group (any kind, or the world rank).
    pub fn new(kind: DependenceKind, evidence: String) -> Self {
        Dependence { kind, evidence, groups: Vec::new(), indirect: false, guessed: false }
    }
}

/// A jump that follows the construct, e.g. the `continue` at the end of an `except` body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Jump {
    pub construct: Construct,
    pub line: u32,
}

/// The control-flow construct between two groups of ranks.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Branch {
    /// 1-based line of the construct (the `if`/`elif`/`for`/`while` header, the `except`
    /// clause, or the jump statement).
    pub line: u32,
    pub construct: Construct,
    /// Innermost enclosing function, `None` at module level.
    pub function: Option<String>,
    /// The text of `line`, trimmed.
    pub source: String,
    /// Source text of the deciding condition: the `if`/`elif`/`while` test, the `for` iterable,
    /// the guarding `if` of a jump, or the exception type of an `except`.
    pub condition: Option<String>,
    /// Line where `condition` starts.
    pub condition_line: Option<u32>,
    /// Why the condition can differ across ranks; empty when it looks rank-invariant.
    pub dependence: Vec<Dependence>,
    /// The line the departing group skipped, when known.
    pub skipped_line: Option<u32>,
    /// For an `except`: the jump in its body (`continue`, `break`, `return`, `raise`), if any.
    pub jump: Option<Jump>,
    /// Parameters of the enclosing function the condition flows from: what the caller passed
    /// for them decides too (see [`Module::explain_call`](crate::Module::explain_call)).
    pub parameters: Vec<String>,
    /// Parameters whose *length* decides (a loop over a parameter's items).
    pub length_parameters: Vec<String>,
    /// The `parameters` read only by plain attributes, with those attributes
    /// (`engine.global_rank` in `def save(engine)`): a caller decides through those
    /// attributes of what it passes.
    pub member_reads: Vec<(String, Vec<String>)>,
    /// Consensus the condition went through: evidence that every rank decides alike.
    pub agreed: Vec<String>,
    /// Configuration reads in the condition (assumed the same on every rank).
    pub configuration: Vec<String>,
    /// Every part of the condition was followed to its end: an empty `dependence` then means
    /// the decision is the same on every rank.
    pub complete: bool,
    /// A `continue` that explains the other group being past the loop only indirectly: the
    /// skipped pass shifted this group's collectives, so it ran out of the loop's collectives
    /// one pass early although the loop ran as often on every rank.
    pub indirect: bool,
}

/// A call (normally a collective) and where its arguments come from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallOrigin {
    /// 1-based line where the call starts.
    pub line: u32,
    /// Source text of the callee, e.g. `dist.all_reduce`.
    pub callee: String,
    /// Positional arguments, then keyword arguments, in source order.
    pub arguments: Vec<ArgOrigin>,
}

/// A collective call found in the source.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallSite {
    /// 1-based line where the call starts.
    pub line: u32,
    /// Source text of the callee, e.g. `dist.all_reduce`.
    pub callee: String,
    /// True for calls that issue collectives through hooks (`loss.backward()` under DDP).
    pub implicit: bool,
}

/// One argument of a [`CallOrigin`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ArgOrigin {
    /// Source text of the argument, keyword included (`op=dist.ReduceOp.MAX`).
    pub text: String,
    /// Line of the latest assignment in the same function to the argument's root name.
    pub defined_at: Option<u32>,
    /// That assignment's line, trimmed, e.g. `buf = torch.zeros(n_local)`.
    pub assignment: Option<String>,
    /// Why the argument's value can differ across ranks.
    pub dependence: Vec<Dependence>,
    /// Parameters of the enclosing function the value flows from (`comm_dtype` in
    /// `flat = grads.to(comm_dtype)`): explain the caller's call to follow them.
    pub parameters: Vec<String>,
}
