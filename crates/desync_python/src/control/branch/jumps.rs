//! Guarded jumps that can make a rank skip a line: `continue`/`break` in a loop around it, and
//! `return`/`raise` in its function. Only jumps under an `if` or inside an `except` body count:
//! an unconditional jump is taken by every rank alike.
//!
//! Where the jump lands must fit where the other group is: after a `continue` a rank is in the
//! same loop (next iteration); after a `break` it is past the loop; after `return`/`raise` it is
//! in a caller (no line here) or back in this function on its next call.

use ruff_python_ast::{ExceptHandler, Stmt};
use ruff_text_size::Ranged;

use super::{Candidate, Guard, Target};
use crate::syntax::module::Module;
use crate::syntax::tree::{self, Frame, Path, Slot, is_loop};
use crate::syntax::types::Construct;

/// A jump statement in the scope being searched.
pub(super) struct Site<'a> {
    stmt: &'a Stmt,
    construct: Construct,
    line: u32,
    /// Loops whose body holds the jump, outermost first.
    loops: Vec<&'a Stmt>,
    guard: Option<Guard<'a>>,
    /// The blocks around the jump in its function, outermost first.
    frames: Vec<Frame<'a>>,
}

/// Every jump statement of `suite` (a function body), nested `def`s excluded.
pub(super) fn sites<'a>(module: &Module, suite: &'a [Stmt]) -> Vec<Site<'a>> {
    // The scope's jumps come from its index: walking the scope per question made a function
    // with many collectives quadratic.
    let index = module.scope_index(suite);
    let mut out = Vec::new();
    for &at in &index.jumps {
        let Some((stmt, frames)) = tree::scope_path_to(suite, at) else { continue };
        let construct = match stmt {
            Stmt::Continue(_) => Construct::Continue,
            Stmt::Break(_) => Construct::Break,
            Stmt::Return(_) => Construct::Return,
            Stmt::Raise(_) => Construct::Raise,
            _ => continue,
        };
        let loops: Vec<&Stmt> = frames
            .iter()
            .filter(|f| is_loop(f.owner) && f.slot == Slot::Body)
            .map(|f| f.owner)
            .collect();
        let guard = guard_of(&frames);
        let line = module.line_of(stmt.start());
        out.push(Site { stmt, construct, line, loops, guard, frames });
    }
    out
}

/// The innermost `if` clause or `except` body around a jump, inside its innermost loop body
/// (an `if` outside the loop decides whether the loop runs, not whether the jump does).
fn guard_of<'a>(frames: &[Frame<'a>]) -> Option<Guard<'a>> {
    for frame in frames.iter().rev() {
        match (frame.owner, frame.slot) {
            (owner, Slot::Body) if is_loop(owner) => return None,
            (Stmt::If(s), Slot::Body) => return Some(Guard::If { stmt: s, clause: None }),
            (Stmt::If(s), Slot::Clause(i)) => return Some(Guard::If { stmt: s, clause: Some(i) }),
            (Stmt::Try(s), Slot::Handler(i)) => return Some(Guard::Handler { stmt: s, index: i }),
            _ => {}
        }
    }
    None
}

/// Jumps that can make the ranks at `skipped`'s line skip it while the other group ends up at
/// `other` (`None`: outside this function), best first: landing fits exactly, the jump comes
/// before the line, nearest.
pub(super) fn skipping<'a>(
    sites: &[Site<'a>],
    skipped: &Path<'a>,
    other: Option<&Path<'a>>,
) -> Vec<Candidate<'a>> {
    let around = loops_around(skipped);
    let mut ranked: Vec<_> =
        sites.iter().filter_map(|site| ranked(site, skipped, other, &around)).collect();
    ranked.sort_by_key(|(key, _)| *key);
    ranked.into_iter().map(|(_, c)| c).collect()
}

/// The loops whose body holds the skipped line, outermost first.
fn loops_around<'a>(skipped: &Path<'a>) -> Vec<&'a Stmt> {
    skipped
        .levels
        .iter()
        .filter(|l| l.slot == Slot::Body && l.owner.is_some_and(is_loop))
        .filter_map(|l| l.owner)
        .collect()
}

/// Sort key: landing fits loosely, the jump comes after the line, distance.
type Rank = (bool, bool, u32);

/// Whether `site` can make the ranks at `skipped` skip it, and how well it fits.
fn ranked<'a>(
    site: &Site<'a>,
    skipped: &Path<'a>,
    other: Option<&Path<'a>>,
    around: &[&Stmt],
) -> Option<(Rank, Candidate<'a>)> {
    let encloses = |lp: &Stmt| around.iter().any(|s| std::ptr::eq(*s, lp));
    // A line on a loop's own header runs again on the next pass: leaving the loop skips it.
    let header = Some(skipped.leaf()).filter(|s| is_loop(s));
    let exits = |lp: &Stmt| encloses(lp) || header.is_some_and(|h| std::ptr::eq(h, lp));
    let guard = site.guard?;
    if site.line == skipped.line {
        return None;
    }
    let before = site.line < skipped.line;
    let innermost = site.loops.last().copied();
    let mut indirect = false;
    let weak = match site.construct {
        Construct::Continue => {
            let lp = innermost.filter(|lp| encloses(lp) && before)?;
            match other {
                None => true,
                Some(o) if in_loop_body(o, lp) => false,
                // The other group is past the loop: a skipped pass explains that only if it
                // shifted this group's collectives (the loop ran as often everywhere).
                Some(_) => {
                    indirect = true;
                    true
                }
            }
        }
        Construct::Break => {
            let lp = innermost.filter(|lp| exits(lp))?;
            if other.is_some_and(|o| in_loop_body(o, lp)) {
                return None;
            }
            false
        }
        _ => {
            // After the line, a return only skips it on a later iteration of a shared loop.
            if !before && !site.loops.iter().any(|lp| exits(lp)) {
                return None;
            }
            false
        }
    };
    if in_sibling_clause(site, skipped) || runs_on_the_way_out(site, skipped) {
        return None;
    }
    let distance = site.line.abs_diff(skipped.line);
    let target = Target { stmt: site.stmt, line: site.line, construct: site.construct, guard };
    let mut candidate = Candidate::jump(target, skipped.line);
    candidate.indirect = indirect;
    Some(((weak, !before, distance), candidate))
}

/// The skipped line is in the `finally` of a `try` the jump leaves: the rank runs it on its
/// way out (`try: if rank != 0: return; save() finally: barrier()`). A `return`/`raise`
/// leaves every `try` around it; a `continue`/`break` only those inside its innermost loop.
fn runs_on_the_way_out(site: &Site<'_>, skipped: &Path<'_>) -> bool {
    let left = match site.construct {
        Construct::Return | Construct::Raise => 0,
        _ => match site.frames.iter().rposition(|f| is_loop(f.owner) && f.slot == Slot::Body) {
            Some(i) => i + 1,
            None => 0,
        },
    };
    site.frames[left..].iter().any(|frame| {
        matches!(frame.owner, Stmt::Try(_))
            && frame.slot != Slot::Finally
            && skipped.levels.iter().any(|l| {
                l.slot == Slot::Finally && l.owner.is_some_and(|o| std::ptr::eq(o, frame.owner))
            })
    })
}

/// The guarded jumps of one function, by line, for many questions in a row
/// ([`GuardFinder`](super::GuardFinder)): a question visits only the jumps before the line and
/// those after it inside a loop around it, and never again a jump whose reported line the
/// asker refused (the asker must keep refusing a line it refused once). A function with
/// thousands of guarded exits, each before a collective, is then linear, not quadratic.
pub(super) struct SiteIndex<'a> {
    /// Guarded jumps only (an unguarded one is taken by every rank), in source order.
    sites: Vec<Site<'a>>,
    /// The line each site's guard is reported at (the `except` line for a handler's jump).
    reported: Vec<u32>,
    /// `next[i]`: the first site at or after `i` not refused yet (`sites.len()` past the end),
    /// path-compressed.
    next: Vec<usize>,
}

impl<'a> SiteIndex<'a> {
    pub(super) fn new(module: &Module, sites: Vec<Site<'a>>) -> Self {
        let mut sites: Vec<Site<'a>> = sites.into_iter().filter(|s| s.guard.is_some()).collect();
        sites.sort_by_key(|s| s.line);
        let reported = sites
            .iter()
            .map(|s| match s.guard {
                Some(Guard::Handler { stmt, index }) => match stmt.handlers.get(index) {
                    Some(ExceptHandler::ExceptHandler(h)) => module.line_of(h.start()),
                    None => module.line_of(stmt.start()),
                },
                _ => s.line,
            })
            .collect();
        let next = (0..=sites.len()).collect();
        SiteIndex { sites, reported, next }
    }

    fn unrefused_from(&mut self, i: usize) -> usize {
        let mut root = i;
        while self.next[root] != root {
            root = self.next[root];
        }
        let mut at = i;
        while self.next[at] != root {
            let up = self.next[at];
            self.next[at] = root;
            at = up;
        }
        root
    }

    /// [`skipping`] with no other group, among the jumps whose reported line `wanted` accepts.
    pub(super) fn skipping(
        &mut self,
        module: &Module,
        skipped: &Path<'a>,
        wanted: &mut dyn FnMut(u32) -> bool,
    ) -> Vec<Candidate<'a>> {
        let around = loops_around(skipped);
        // Past the line, only a jump inside a loop around it (or whose header it is) counts.
        let outermost = around.first().copied().or(Some(skipped.leaf()).filter(|s| is_loop(s)));
        let last = outermost.map_or(skipped.line, |lp| module.line_of(lp.end()));
        let before = self.sites.partition_point(|s| s.line < skipped.line);
        let after = self.sites.partition_point(|s| s.line <= skipped.line);
        let end = self.sites.partition_point(|s| s.line <= last);
        let mut ranked_sites = Vec::new();
        for (from, to) in [(0, before), (after, end)] {
            let mut i = self.unrefused_from(from);
            while i < to {
                if wanted(self.reported[i]) {
                    if let Some(r) = ranked(&self.sites[i], skipped, None, &around) {
                        ranked_sites.push(r);
                    }
                    i = self.unrefused_from(i + 1);
                } else {
                    self.next[i] = i + 1;
                    i = self.unrefused_from(i + 1);
                }
            }
        }
        ranked_sites.sort_by_key(|(key, _)| *key);
        ranked_sites.into_iter().map(|(_, c)| c).collect()
    }
}

/// A `continue` or `return` in one clause of an `if` and the line in another clause of the
/// same `if`: the ranks that jump were never going to run that clause on this pass, so the
/// jump skips it only on a later pass of a loop around the `if` (a `return`; a `continue`
/// only ends the pass it is on). `if role == SENDER: ...; return` / `elif role == MEMBER:
/// broadcast(...)` is a choice between the clauses, which the clause comparison judges.
fn in_sibling_clause(site: &Site<'_>, skipped: &Path<'_>) -> bool {
    if !matches!(site.construct, Construct::Continue | Construct::Return) {
        return false;
    }
    site.frames.iter().enumerate().any(|(i, frame)| {
        if !matches!(frame.owner, Stmt::If(_)) {
            return false;
        }
        let other_clause = skipped
            .levels
            .iter()
            .any(|l| l.owner.is_some_and(|o| std::ptr::eq(o, frame.owner)) && l.slot != frame.slot);
        let looped = site.frames[..i].iter().any(|f| is_loop(f.owner) && f.slot == Slot::Body);
        other_clause && (site.construct == Construct::Continue || !looped)
    })
}

/// True when `path`'s line lies in the body of loop `lp` (not its header or `else`).
fn in_loop_body(path: &Path<'_>, lp: &Stmt) -> bool {
    path.levels.iter().any(|l| l.slot == Slot::Body && l.owner.is_some_and(|o| std::ptr::eq(o, lp)))
}

/// The first jump directly in an `except` body (the `continue` in `except X: log(); continue`).
pub(super) fn handler_jump(handler: &ExceptHandler) -> Option<&Stmt> {
    let ExceptHandler::ExceptHandler(h) = handler;
    let mut found = None;
    tree::walk_scope(&h.body, &mut |stmt, frames| {
        let nested_loop = frames.iter().any(|f| is_loop(f.owner));
        let jump =
            matches!(stmt, Stmt::Continue(_) | Stmt::Break(_) | Stmt::Return(_) | Stmt::Raise(_));
        if found.is_none() && jump && !nested_loop {
            found = Some(stmt);
        }
    });
    found
}
