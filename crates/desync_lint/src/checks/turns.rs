//! Nests of `if`s whose tests compare ranks for equality, followed path by path: whether two
//! ranks can take paths that issue different collectives.
//!
//! Rank-ordered turns are written this way, one rank the source in each iteration:
//!
//! ```python
//! for r in range(world_size):
//!     if self.rank == to:
//!         if r == self.rank: keep_own()
//!         else: broadcast_object(..., src=r)
//!     else:
//!         if r == self.rank: broadcast_object(mine, src=r)
//!         elif r != to: broadcast_object(..., src=r)      # bystanders
//! ```
//!
//! Each `if` alone issues a broadcast on some ranks only, but the nest as a whole does not:
//! in the iteration `r == to` nobody issues one, in every other iteration everybody does.
//! Each path through the nest is a conjunction of (in)equalities between terms (`r`,
//! `self.rank`, `to`) and of rank-independent tests; a term that depends on the rank (or on
//! anything else that can differ across ranks) takes its own value on each rank, the others
//! one value everywhere. Two paths with different collectives conflict when one rank can be on
//! the first while another is on the second: the two conjunctions, the first with its
//! per-rank terms renamed for rank A and the second for rank B, hold together. Equalities
//! are decided by union-find, which is exact for conjunctions of `==`/`!=`.
//!
//! Anything else keeps the finding: a rank-dependent test that is no (in)equality, a jump or
//! a loop with collectives inside the nest, a compared term assigned inside it, or more paths
//! than [`MAX_PATHS`].

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;

use desync_python::{Conditional, Conjunct};

use crate::context::{Context, Site};

/// Above this many paths the nest is left to the clause-by-clause comparison.
const MAX_PATHS: usize = 256;

/// What one check already knows: each nest's answer (by its `if` line), whether a term or
/// test can differ across ranks (by line and text), and the file's `if`s, jumps and loops
/// indexed by line, so that a file of thousands of `if`s stays linear.
#[derive(Default)]
pub(super) struct Memo {
    agrees: RefCell<HashMap<u32, bool>>,
    differs: RefCell<HashMap<(u32, String), bool>>,
    index: OnceCell<Index>,
}

/// The file's `if`s as a tree, and the lines of its jumps and loops, sorted.
struct Index {
    /// `if` line → its position in the outline.
    at: HashMap<u32, usize>,
    /// The `if` whose clause body holds each `if` (same function).
    parent: Vec<Option<usize>>,
    /// The `if`s directly in each `if`'s clause bodies, in line order.
    children: Vec<Vec<usize>>,
    /// Lines of the jumps and of the loops (with the loop's position in the outline).
    jumps: Vec<u32>,
    loops: Vec<(u32, usize)>,
}

impl Index {
    fn new(ctx: &Context<'_>) -> Index {
        let conds = &ctx.outline.conditionals;
        let mut order: Vec<usize> = (0..conds.len()).collect();
        order.sort_by_key(|&i| conds[i].line);
        let mut parent = vec![None; conds.len()];
        let mut children = vec![Vec::new(); conds.len()];
        let mut open: Vec<usize> = Vec::new();
        for &i in &order {
            let c = &conds[i];
            while open.last().is_some_and(|&t| conds[t].last_line() < c.line) {
                open.pop();
            }
            if let Some(&t) = open.last()
                && conds[t].function == c.function
                && conds[t].clauses.iter().any(|k| k.body.contains(c.line))
            {
                parent[i] = Some(t);
                children[t].push(i);
            }
            open.push(i);
        }
        let mut jumps: Vec<u32> = ctx.outline.jumps.iter().map(|j| j.line).collect();
        jumps.sort_unstable();
        let mut loops: Vec<(u32, usize)> =
            ctx.outline.loops.iter().enumerate().map(|(i, l)| (l.line, i)).collect();
        loops.sort_unstable();
        let at = conds.iter().enumerate().map(|(i, c)| (c.line, i)).collect();
        Index { at, parent, children, jumps, loops }
    }
}

/// The entries of a list sorted by line whose line is in `first..=last`.
fn between<T>(sorted: &[T], line: impl Fn(&T) -> u32, first: u32, last: u32) -> &[T] {
    let from = sorted.partition_point(|x| line(x) < first);
    let to = sorted.partition_point(|x| line(x) <= last);
    &sorted[from..to.max(from)]
}

impl Memo {
    fn index(&self, ctx: &Context<'_>) -> &Index {
        self.index.get_or_init(|| Index::new(ctx))
    }

    /// Whether `text` at `line` can differ across ranks (it has any dependence).
    fn differs(&self, ctx: &Context<'_>, line: u32, text: &str) -> bool {
        let key = (line, text.to_owned());
        if let Some(&known) = self.differs.borrow().get(&key) {
            return known;
        }
        let differs = !ctx.dependence(line, text).is_empty();
        self.differs.borrow_mut().insert(key, differs);
        differs
    }
}

/// True when `cond`, or a nest of `if`s around it in the same function, issues the same
/// collectives on every rank whatever the values its tests compare.
pub(super) fn same_on_every_rank(ctx: &Context<'_>, cond: &Conditional, memo: &Memo) -> bool {
    let mut nest = Some(cond);
    while let Some(c) = nest {
        let known = memo.agrees.borrow().get(&c.line).copied();
        let agrees = known.unwrap_or_else(|| {
            let agrees = Nest::new(ctx, c, memo).is_some_and(|n| n.agrees());
            memo.agrees.borrow_mut().insert(c.line, agrees);
            agrees
        });
        if agrees {
            return true;
        }
        let index = memo.index(ctx);
        nest = index
            .at
            .get(&c.line)
            .and_then(|&i| index.parent[i])
            .map(|p| &ctx.outline.conditionals[p]);
    }
    false
}

/// A term of an (in)equality: its text, and whether each rank has its own value of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Term {
    text: String,
    per_rank: bool,
}

/// One fact a path assumes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Literal {
    Equal(Term, Term, bool),
    /// A rank-independent test (its line and text), true or false. Tests with the same text
    /// on other lines are not assumed to agree (a name can be rebound in between).
    Uniform(u32, String, bool),
}

/// A way through the nest: what it assumes, what it issues (op and group, in order).
#[derive(Debug, Clone)]
struct Path {
    assumes: Vec<Literal>,
    issues: Vec<(String, Option<String>)>,
}

struct Nest {
    paths: Vec<Path>,
}

impl Nest {
    fn new(ctx: &Context<'_>, cond: &Conditional, memo: &Memo) -> Option<Nest> {
        let last = cond.clauses.last()?.body.last;
        let index = memo.index(ctx);
        // Any jump in the span (one of a nested function too: rare, and only more cautious).
        let has_jump = !between(&index.jumps, |l| *l, cond.line, last).is_empty();
        let loop_with_sites =
            between(&index.loops, |l| l.0, cond.line, last).iter().any(|&(_, i)| {
                let l = &ctx.outline.loops[i];
                l.function == cond.function
                    && ctx
                        .sites_in(cond.function, l.body.first, l.body.last)
                        .any(|s| !s.is_point_to_point())
            });
        if has_jump || loop_with_sites {
            return None;
        }
        let paths = paths_of(ctx, cond, memo)?;
        // A term is one value throughout the nest: neither it nor the object it is read from
        // may be rebound inside it (`to = 0`, `for src in ...`, `self.rank = r`, `self = s`).
        let bound = ctx.module.bound_in(cond.line, last);
        let rebound_term = |term: &str| {
            bound.iter().any(|b| {
                term.strip_prefix(b).is_some_and(|rest| {
                    rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')
                })
            })
        };
        let rebound = paths.iter().flat_map(|p| &p.assumes).any(|l| match l {
            Literal::Equal(a, b, _) => rebound_term(&a.text) || rebound_term(&b.text),
            Literal::Uniform(..) => false,
        });
        (!rebound).then_some(Nest { paths })
    }

    /// No two paths with different collectives can be taken by two ranks at once.
    fn agrees(&self) -> bool {
        self.paths.iter().enumerate().all(|(i, a)| {
            self.paths[i + 1..]
                .iter()
                .all(|b| a.issues == b.issues || !together(&a.assumes, &b.assumes))
        })
    }
}

/// The paths through `cond`: each clause entered when the tests before it fail and its own
/// holds, then the collectives and nested `if`s of its body in order.
fn paths_of(ctx: &Context<'_>, cond: &Conditional, memo: &Memo) -> Option<Vec<Path>> {
    let mut out = Vec::new();
    // The ways the earlier clauses' tests can all fail.
    let mut failed_before: Vec<Vec<Literal>> = vec![Vec::new()];
    for clause in &cond.clauses {
        let line = clause.test_line.unwrap_or(clause.line);
        let holds: Vec<Literal> = match &clause.test {
            Some(_) => clause
                .conjuncts
                .iter()
                .map(|c| literal(ctx, memo, line, c, true))
                .collect::<Option<_>>()?,
            None => Vec::new(),
        };
        let entry: Vec<Vec<Literal>> = failed_before
            .iter()
            .map(|before| before.iter().cloned().chain(holds.iter().cloned()).collect())
            .collect();
        for assumes in entry {
            for body in body_paths(ctx, memo, cond, clause.body.first, clause.body.last)? {
                let mut assumes = assumes.clone();
                assumes.extend(body.assumes);
                out.push(Path { assumes, issues: body.issues });
            }
        }
        if clause.test.is_some() {
            // `not (a and b)`: `not a`, or `a and not b`.
            let fails: Vec<Literal> = clause
                .conjuncts
                .iter()
                .map(|c| literal(ctx, memo, line, c, false))
                .collect::<Option<_>>()?;
            let mut next = Vec::new();
            for before in &failed_before {
                for k in 0..fails.len() {
                    let mut way = before.clone();
                    way.extend(holds[..k].iter().cloned());
                    way.push(fails[k].clone());
                    next.push(way);
                }
            }
            failed_before = next;
        }
        if out.len() + failed_before.len() > MAX_PATHS {
            return None;
        }
    }
    if !cond.has_else() {
        for assumes in failed_before {
            out.push(Path { assumes, issues: Vec::new() });
        }
    }
    (out.len() <= MAX_PATHS).then_some(out)
}

/// The paths through the lines `first..=last` of `cond`'s function: its collectives, and the
/// `if`s directly in it.
fn body_paths(
    ctx: &Context<'_>,
    memo: &Memo,
    cond: &Conditional,
    first: u32,
    last: u32,
) -> Option<Vec<Path>> {
    let index = memo.index(ctx);
    let conds = &ctx.outline.conditionals;
    let direct: Vec<&Conditional> = index
        .at
        .get(&cond.line)
        .map(|&i| &index.children[i][..])
        .unwrap_or_default()
        .iter()
        .map(|&k| &conds[k])
        .filter(|c| (first..=last).contains(&c.line))
        .collect();
    let mut steps: Vec<(u32, Step<'_, '_>)> = ctx
        .sites_in(cond.function, first, last)
        .filter(|s| !s.is_point_to_point())
        .filter(|s| !direct.iter().any(|c| (c.line..=c.last_line()).contains(&s.line())))
        .map(|s| (s.line(), Step::Site(s)))
        .chain(direct.iter().map(|c| (c.line, Step::If(c))))
        .collect();
    steps.sort_by_key(|(line, _)| *line);
    let mut paths = vec![Path { assumes: Vec::new(), issues: Vec::new() }];
    for (_, step) in steps {
        match step {
            Step::Site(s) => {
                for p in &mut paths {
                    p.issues.push((s.op.clone(), s.group().map(str::to_owned)));
                }
            }
            Step::If(c) => {
                let inner = paths_of(ctx, c, memo)?;
                if paths.len() * inner.len() > MAX_PATHS {
                    return None;
                }
                paths = paths
                    .iter()
                    .flat_map(|p| {
                        inner.iter().map(move |q| Path {
                            assumes: p.assumes.iter().chain(&q.assumes).cloned().collect(),
                            issues: p.issues.iter().chain(&q.issues).cloned().collect(),
                        })
                    })
                    .collect();
            }
        }
    }
    Some(paths)
}

enum Step<'s, 'a> {
    Site(&'s Site<'a>),
    If(&'s Conditional),
}

/// The fact that `conjunct` holds (`holds`) or fails; `None` when it depends on the rank but
/// is no (in)equality.
fn literal(
    ctx: &Context<'_>,
    memo: &Memo,
    line: u32,
    conjunct: &Conjunct,
    holds: bool,
) -> Option<Literal> {
    let holds = holds != conjunct.negated;
    if let Some((left, right, equal)) = comparison(&conjunct.text) {
        let term = |text: &str| Term {
            text: text.to_owned(),
            per_rank: literal_value(text).is_none() && memo.differs(ctx, line, text),
        };
        return Some(Literal::Equal(term(left), term(right), equal == holds));
    }
    (!memo.differs(ctx, line, &conjunct.text))
        .then(|| Literal::Uniform(line, conjunct.text.clone(), holds))
}

/// `a == b` → (a, b, true), `a != b` → (a, b, false); one comparison of two plain operands.
fn comparison(text: &str) -> Option<(&str, &str, bool)> {
    let (op, equal) = if text.contains("==") { ("==", true) } else { ("!=", false) };
    let (left, right) = text.split_once(op)?;
    let plain = |s: &str| {
        !s.is_empty()
            && !s.contains(['<', '>', '=', '!'])
            && ![" and ", " or ", " not ", " in ", " is ", " if "].iter().any(|w| s.contains(w))
    };
    let (left, right) = (left.trim(), right.trim());
    (plain(left) && plain(right)).then_some((left, right, equal))
}

/// Whether rank A can assume `a` while rank B assumes `b`.
fn together(a: &[Literal], b: &[Literal]) -> bool {
    let mut classes = Classes::default();
    let mut apart = Vec::new();
    let mut uniform: HashMap<(u32, &str), bool> = HashMap::new();
    for (rank, literals) in [(0u8, a), (1u8, b)] {
        for literal in literals {
            match literal {
                Literal::Uniform(line, text, value) => {
                    if *uniform.entry((*line, text)).or_insert(*value) != *value {
                        return false;
                    }
                }
                Literal::Equal(x, y, equal) => {
                    let (x, y) = (classes.id(x, rank), classes.id(y, rank));
                    if *equal {
                        classes.join(x, y);
                    } else {
                        apart.push((x, y));
                    }
                }
            }
        }
    }
    !classes.constants_clash() && apart.iter().all(|&(x, y)| classes.find(x) != classes.find(y))
}

/// Union-find over terms; a per-rank term is one variable per rank.
#[derive(Default)]
struct Classes {
    ids: HashMap<(String, Option<u8>), usize>,
    parent: Vec<usize>,
    constant: Vec<Option<String>>,
}

impl Classes {
    fn id(&mut self, term: &Term, rank: u8) -> usize {
        let key = (term.text.clone(), term.per_rank.then_some(rank));
        let next = self.parent.len();
        let id = *self.ids.entry(key).or_insert(next);
        if id == next {
            self.parent.push(id);
            self.constant.push(literal_value(&term.text));
        }
        id
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    fn join(&mut self, x: usize, y: usize) {
        let (x, y) = (self.find(x), self.find(y));
        self.parent[x] = y;
    }

    /// Two different literals (`0`, `1`) ended in one class.
    fn constants_clash(&mut self) -> bool {
        let mut seen: HashMap<usize, String> = HashMap::new();
        for i in 0..self.parent.len() {
            if let Some(c) = self.constant[i].clone() {
                let root = self.find(i);
                if seen.entry(root).or_insert_with(|| c.clone()) != &c {
                    return true;
                }
            }
        }
        false
    }
}

/// The value of a number or string literal, written one way (`0` and `0.0`, `'a'` and `"a"`
/// are one value each).
fn literal_value(text: &str) -> Option<String> {
    if let Ok(n) = text.parse::<f64>() {
        return Some(format!("number {n}"));
    }
    ['"', '\'']
        .iter()
        .find_map(|q| text.strip_prefix(*q).and_then(|t| t.strip_suffix(*q)))
        .map(|s| format!("string {s}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(text: &str, per_rank: bool) -> Term {
        Term { text: text.into(), per_rank }
    }

    fn eq(a: Term, b: Term, equal: bool) -> Literal {
        Literal::Equal(a, b, equal)
    }

    #[test]
    fn a_rank_alone_cannot_be_two_values() {
        let me = term("self.rank", true);
        let r = term("r", false);
        // A: r == me; B: r != me. Two ranks: A's me = r, B's me != r: both hold.
        assert!(together(&[eq(r.clone(), me.clone(), true)], &[eq(r.clone(), me.clone(), false)]));
        // A shared value cannot equal and differ from a constant at once.
        let to = term("to", false);
        assert!(!together(&[eq(r.clone(), to.clone(), true)], &[eq(r, to, false)]));
    }

    #[test]
    fn constants_stay_apart() {
        let me = term("rank", true);
        let k = term("k", false);
        // A: k == 0 and B: k == 1 cannot hold at once, k being the same everywhere.
        assert!(!together(
            &[eq(k.clone(), term("0", false), true)],
            &[eq(k.clone(), term("1", false), true)],
        ));
        // A per-rank value can be 0 on one rank and 1 on another.
        assert!(together(
            &[eq(me.clone(), term("0", false), true)],
            &[eq(me, term("1", false), true)],
        ));
    }

    #[test]
    fn one_value_written_two_ways_is_one_constant() {
        let k = term("k", false);
        assert!(together(
            &[eq(k.clone(), term("0", false), true)],
            &[eq(k.clone(), term("0.0", false), true)],
        ));
        assert!(together(
            &[eq(k.clone(), term("'dp'", false), true)],
            &[eq(k, term("\"dp\"", false), true)],
        ));
    }

    #[test]
    fn uniform_tests_hold_alike() {
        let a = [Literal::Uniform(3, "args.sharded".into(), true)];
        let b = [Literal::Uniform(3, "args.sharded".into(), false)];
        assert!(!together(&a, &b));
        assert!(together(&a, &a));
        // The same text tested on another line may have another value there.
        let c = [Literal::Uniform(9, "args.sharded".into(), false)];
        assert!(together(&a, &c));
    }

    #[test]
    fn comparisons_of_plain_operands_only() {
        assert_eq!(comparison("r == self.rank"), Some(("r", "self.rank", true)));
        assert_eq!(comparison("rank != to"), Some(("rank", "to", false)));
        assert_eq!(comparison("a <= b"), None);
        assert_eq!(comparison("a == b == c"), None);
        assert_eq!(comparison("x in ranks"), None);
    }
}
