//! What one file knows about its collectives and its decisions, from `desync_python`'s flow
//! analysis (the same one `desync analyze` uses for the bridge):
//!
//! - **Sites** ([`desync_python::Collectives::sites`]): calls resolved to a row of the
//!   knowledge table (`torch.distributed.all_reduce` under any alias, `accelerator.gather`,
//!   `self.log(..., sync_dist=True)`), property reads that issue one (`trainer.log_dir`), the
//!   forward and backward passes of a model a table wrapper made, and the file's functions
//!   that reach any of these.
//! - **Dependence** ([`Context::dependence`]): why a test can differ across ranks, shown by
//!   following the data; a parameter is decided by what the file's calls of its function pass
//!   (and by process launchers of the table, which pass the rank) — see [`params`].

mod params;

use desync_python::{
    Analysis, Call, CollectiveSite, Collectives, Conditional, Dependence, DependenceKind, Function,
    Loop, Module, Outline, SiteVia,
};

/// A call (or property read) that issues collectives, with the outline's view of the call.
#[derive(Debug, Clone)]
pub(crate) struct Site<'o> {
    pub site: CollectiveSite,
    /// The outline's call at the same place (`None` for a property read).
    pub call: Option<&'o Call>,
    /// What it issues, as one comparable key (`all_reduce`, `all_reduce,barrier`).
    pub op: String,
}

impl Site<'_> {
    pub fn line(&self) -> u32 {
        self.site.line
    }

    /// `def` line of the innermost function around the site.
    pub fn function(&self) -> Option<u32> {
        self.site.function
    }

    pub fn is_point_to_point(&self) -> bool {
        self.site.point_to_point()
    }

    /// A call of a table collective itself (not a helper, property or wrapped model).
    pub fn is_table_call(&self) -> bool {
        matches!(self.site.via, SiteVia::Table(_))
    }

    /// "`dist.all_reduce` at line 79", plus what a helper reaches or a wrapper does.
    pub fn describe(&self) -> String {
        self.site.describe()
    }

    /// The process group argument's text, if any (to tell `f(group=tp)` from `f(group=dp)`).
    pub fn group(&self) -> Option<&str> {
        self.site.group.as_deref()
    }
}

/// The analysis of one file.
pub(crate) struct Context<'a> {
    pub module: &'a Module,
    pub outline: &'a Outline,
    pub collectives: &'a Collectives<'a, 'a>,
    /// Collective-issuing calls and property reads, in source order.
    pub sites: Vec<Site<'a>>,
    /// Calls that change what later collectives carry (comm hooks, autocast policies).
    pub setups: Vec<desync_python::SetupCall>,
    /// The `except` clauses that pass the error on, by function and body lines
    /// ([`Context::in_dying_handler`]), found once.
    dying: Vec<(Option<u32>, u32, u32)>,
    /// For each of the outline's `if`s, the index of the innermost `if` with a clause holding
    /// it ([`Context::enclosing_ifs`]).
    parents: Vec<Option<usize>>,
    /// What each parameter (or its structure) depends on: every finding in a function asks
    /// about the same parameters, and answering walks the file's calls.
    pub(crate) parameters:
        std::cell::RefCell<std::collections::HashMap<ParameterKey, Vec<desync_python::Dependence>>>,
    /// For each function (`def` line; `None`: module level), the tests [`Context::steady_tests`]
    /// gives, found once.
    steady: std::cell::RefCell<std::collections::HashMap<Option<u32>, std::rc::Rc<Vec<String>>>>,
}

/// (function `def` line, parameter, caller depth, what is asked of it).
pub(crate) type ParameterKey = (u32, String, usize, params::Asked);

impl<'a> Context<'a> {
    /// The context of `module`, whose collective sites `sites` are (`Collectives::sites`):
    /// `outline` must record at least the calls at those sites.
    pub fn new(
        module: &'a Module,
        outline: &'a Outline,
        collectives: &'a Collectives<'a, 'a>,
        sites: Vec<desync_python::CollectiveSite>,
        setups: Vec<desync_python::SetupCall>,
    ) -> Context<'a> {
        // The outline's calls are sorted by position: the first one at the site's.
        let call_at = |line: u32, column: u32| {
            let i = outline.calls.partition_point(|c| (c.line, c.column) < (line, column));
            outline.calls.get(i).filter(|c| (c.line, c.column) == (line, column))
        };
        let mut sites: Vec<Site<'a>> = sites
            .into_iter()
            .map(|site| {
                let call = call_at(site.line, site.column);
                let op = site.ops.join(",");
                Site { site, call, op }
            })
            .collect();
        // In line order, for `sites_in` (stable: sites on one line keep their order).
        sites.sort_by_key(|s| (s.line(), s.site.column));
        let dying = outline
            .tries
            .iter()
            .flat_map(|t| {
                t.handlers
                    .iter()
                    .filter(|h| h.propagates)
                    .map(move |h| (t.function, h.body.first, h.body.last))
            })
            .collect();
        Context {
            module,
            outline,
            collectives,
            sites,
            setups,
            dying,
            parents: parents_of(&outline.conditionals),
            parameters: std::cell::RefCell::default(),
            steady: std::cell::RefCell::default(),
        }
    }

    pub fn analysis(&self) -> &'a Analysis<'a> {
        self.collectives.analysis()
    }

    /// This file's context with the sites of the function whose `def` is on `function_line`
    /// found again knowing that each test of `known` (source text, whether it holds) is
    /// decided that way throughout it ([`Collectives::sites_under`]).
    pub fn under(&self, function_line: u32, known: &[(&str, bool)]) -> Context<'a> {
        let end = self.function(function_line).map_or(function_line, |f| f.end_line);
        let mut sites: Vec<CollectiveSite> = self
            .sites
            .iter()
            .filter(|s| s.function() != Some(function_line))
            .map(|s| s.site.clone())
            .collect();
        sites.extend(
            self.collectives
                .sites_under(self.module, function_line, function_line, end, known)
                .into_iter()
                .filter(|s| s.function == Some(function_line)),
        );
        Context::new(self.module, self.outline, self.collectives, sites, self.setups.clone())
    }

    /// Sites inside function `function` (`None`: module level) on lines `first..=last`, found
    /// by binary search (the sites are kept in line order).
    pub fn sites_in(
        &self,
        function: Option<u32>,
        first: u32,
        last: u32,
    ) -> impl Iterator<Item = &Site<'a>> {
        on_lines(&self.sites, Site::line, first, last)
            .iter()
            .filter(move |s| s.function() == function)
    }

    /// Whether `line` of `function` sits in an `except` clause that passes the error on (every
    /// path through it raises or ends the process). A rank there dies loudly and torchrun stops
    /// its peers, so what it issues on the way out (`barrier(); raise`) pairs with nothing and
    /// is on no path that goes on.
    pub fn in_dying_handler(&self, function: Option<u32>, line: u32) -> bool {
        self.dying.iter().any(|&(f, first, last)| f == function && (first..=last).contains(&line))
    }

    /// The `if`s of `function` with a clause holding `line`, innermost first. The last `if`
    /// starting at or before `line` holds it or has an ancestor that does: any other `if` that
    /// starts earlier ended before that one began.
    pub fn enclosing_ifs(
        &self,
        function: Option<u32>,
        line: u32,
    ) -> impl Iterator<Item = (&'a Conditional, usize)> + '_ {
        let conditionals: &'a [Conditional] = &self.outline.conditionals;
        let mut next = conditionals.partition_point(|c| c.line <= line).checked_sub(1);
        std::iter::from_fn(move || {
            while let Some(i) = next {
                next = self.parents[i];
                let c = &conditionals[i];
                if c.function != function {
                    continue;
                }
                if let Some(k) = c.clauses.iter().position(|cl| cl.body.contains(line)) {
                    return Some((c, k));
                }
            }
            None
        })
    }

    /// The `if`s of the outline whose header is on lines `first..=last` (the outline lists
    /// them in source order), of any function.
    pub fn conditionals_in(&self, first: u32, last: u32) -> &'a [Conditional] {
        on_lines(&self.outline.conditionals, |c| c.line, first, last)
    }

    /// The jump statements on lines `first..=last` (in source order), of any function.
    pub fn jumps_in(&self, first: u32, last: u32) -> &'a [desync_python::JumpStmt] {
        on_lines(&self.outline.jumps, |j| j.line, first, last)
    }

    /// The innermost loop of `function` whose body holds `line`.
    pub fn innermost_loop(&self, function: Option<u32>, line: u32) -> Option<&'a Loop> {
        self.outline
            .loops
            .iter()
            .filter(|l| l.function == function && l.body.contains(line))
            .max_by_key(|l| l.line)
    }

    /// The function whose `def` is on `def_line`.
    pub fn function(&self, def_line: u32) -> Option<&'a Function> {
        self.outline.functions.iter().find(|f| f.def_line == def_line)
    }

    /// Why the test `expr` at `line` can differ across ranks (a comparison of the rank with a
    /// value no rank has is the same everywhere), parameters followed into their callers;
    /// `Unknown` entries dropped.
    /// The tests that two or more `if`s of `function` (each a plain `if`, or `if`/`else`)
    /// repeat, that no rank decides differently, and that answer the same wherever the
    /// function evaluates them ([`desync_python::Analysis::steady_test`]): every rank takes
    /// the same clause of each such `if`, and one path takes the same clause of all of them.
    pub fn steady_tests(&self, function: Option<u32>) -> std::rc::Rc<Vec<String>> {
        if let Some(known) = self.steady.borrow().get(&function) {
            return known.clone();
        }
        let mut seen: std::collections::HashMap<&str, (u32, usize)> =
            std::collections::HashMap::new();
        for c in self.outline.conditionals.iter().filter(|c| c.function == function) {
            let plain = c.clauses.len() == 1 || (c.clauses.len() == 2 && c.has_else());
            if let (true, Some(test), Some(line)) =
                (plain, c.clauses[0].test.as_deref(), c.clauses[0].test_line)
            {
                seen.entry(test).or_insert((line, 0)).1 += 1;
            }
        }
        let mut steady: Vec<String> = seen
            .into_iter()
            .filter(|&(test, (line, count))| {
                count >= 2
                    && self.analysis().steady_test(self.module, line, test)
                    && self.dependence(line, test).is_empty()
            })
            .map(|(test, _)| test.to_owned())
            .collect();
        steady.sort();
        let steady = std::rc::Rc::new(steady);
        self.steady.borrow_mut().insert(function, steady.clone());
        steady
    }

    pub fn dependence(&self, line: u32, expr: &str) -> Vec<Dependence> {
        self.resolved(line, self.analysis().condition(self.module, line, expr))
    }

    /// What the flow analysis' `finding` (computed at `line`) depends on, its parameters
    /// followed into their callers, as [`Context::dependence`] gives it.
    pub fn resolved(&self, line: u32, finding: desync_python::Finding) -> Vec<Dependence> {
        params::resolve(self, line, finding, 0)
    }

    /// Why the number of items of the iterable `expr` at `line` can differ across ranks,
    /// parameters followed into their callers; `Unknown` entries dropped.
    pub fn length_dependence(&self, line: u32, expr: &str) -> Vec<Dependence> {
        self.resolved(line, self.analysis().length_dependence(self.module, line, expr))
    }
}

/// The items of `all` (in line order) on lines `first..=last`, found by binary search.
fn on_lines<T>(all: &[T], line: impl Fn(&T) -> u32, first: u32, last: u32) -> &[T] {
    let from = all.partition_point(|x| line(x) < first);
    &all[from..all.partition_point(|x| line(x) <= last).max(from)]
}

/// For each `if` of `conditionals` (in source order), the index of the innermost `if` with a
/// clause holding its line: among the `if`s still open where it starts (a stack).
fn parents_of(conditionals: &[Conditional]) -> Vec<Option<usize>> {
    let mut open: Vec<usize> = Vec::new();
    let mut parents = Vec::with_capacity(conditionals.len());
    for (index, c) in conditionals.iter().enumerate() {
        while open.last().is_some_and(|&i| conditionals[i].last_line() < c.line) {
            open.pop();
        }
        parents.push(
            open.iter()
                .rev()
                .copied()
                .find(|&i| conditionals[i].clauses.iter().any(|cl| cl.body.contains(c.line))),
        );
        open.push(index);
    }
    parents
}

/// True when a dependence list names the rank id.
pub(crate) fn has_rank_id(deps: &[Dependence]) -> bool {
    deps.iter().any(|d| d.kind == DependenceKind::RankId)
}

/// Whether a test that depends on `deps` is shown to send the members of the collective's
/// process group (`site`'s, as written; none: the world) different ways.
///
/// Not shown when the test depends on nothing but the rank *within other named groups*
/// (`dp_rank = dist.get_rank(self.dp_group)`, then `if dp_rank != 0: return` before
/// `dist.barrier(self.pp_group)`): in the grid layouts that data, tensor, pipeline and expert
/// groups are built in, a group along one axis holds ranks that share their coordinates on
/// the others, so its members all take the same branch; whether that holds here depends on
/// how the groups were built, which the code at the test does not show. A test on the
/// world rank, or on the rank within the collective's own group, is shown.
///
/// Where the table knows the grid (Megatron's `parallel_state`: `mpu.get_data_parallel_rank()`
/// is the rank along `dp`, `mpu.get_model_parallel_group()` spans `tp` and `pp`), the axes
/// decide instead of the spelling: a rank along axes the collective's group does not span is
/// the same on all its members; one whose group's axes are not shown splits it.
pub(crate) fn splits_group(deps: &[Dependence], site: &Site<'_>) -> bool {
    splits(deps, site.group(), site.site.group_axes.as_deref())
}

/// [`splits_group`] of a collective on `site_group` (as written, if it is in view) spanning
/// `site_axes` of the grid, when shown.
fn splits(deps: &[Dependence], site_group: Option<&str>, site_axes: Option<&[String]>) -> bool {
    if site_group.is_none() && site_axes.is_none() {
        return true;
    }
    let other_group = |g: &String| match desync_python::grid_axes(g) {
        Some(rank_axes) => site_axes
            .is_some_and(|spanned| rank_axes.iter().all(|a| !spanned.iter().any(|s| s == a))),
        None => site_group.is_some_and(|site_group| group_key(g) != group_key(site_group)),
    };
    let only_ranks_in_other_groups = !deps.is_empty()
        && deps.iter().all(|d| {
            d.kind == DependenceKind::RankId
                && !d.groups.is_empty()
                && d.groups.iter().all(other_group)
        });
    !only_ranks_in_other_groups
}

/// What names a group in two places: the last name of a dotted path without leading
/// underscores (`self._dp_group` and `dp_group` are the same attribute seen from a method and
/// after `dp_group = self._dp_group`); any other expression as written.
fn group_key(text: &str) -> &str {
    let text = text.trim();
    let dotted = text.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    if dotted { text.rsplit('.').next().unwrap_or(text).trim_start_matches('_') } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(group: Option<&str>) -> Dependence {
        Dependence {
            groups: group.map(str::to_owned).into_iter().collect(),
            ..Dependence::new(DependenceKind::RankId, String::new())
        }
    }

    #[test]
    fn a_rank_within_another_named_group_does_not_split_a_group() {
        let dp = [rank(Some("self.global_dp_group"))];
        assert!(!splits(&dp, Some("self.pp_group"), None));
        // The collective's own group, however it is reached, and the world are split.
        assert!(splits(&dp, Some("global_dp_group"), None));
        assert!(splits(&[rank(Some("self._tp_group"))], Some("tp_group"), None));
        assert!(splits(&dp, None, None));
        // The world rank, or data beside the group's rank, is shown to split any group.
        assert!(splits(&[rank(None)], Some("self.pp_group"), None));
        let mixed = [
            rank(Some("self.global_dp_group")),
            Dependence::new(DependenceKind::LocalData, String::new()),
        ];
        assert!(splits(&mixed, Some("self.pp_group"), None));
        assert!(splits(&[rank(Some("groups[i]"))], Some("groups[i]"), None));
        assert!(!splits(&[rank(Some("groups[i]"))], Some("groups[j]"), None));
    }

    #[test]
    fn a_rank_along_axes_the_group_does_not_span_does_not_split_it() {
        let axes = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<String>>();
        let along = |a: &[&str]| rank(Some(&desync_python::grid_group(&axes(a))));
        let model_parallel = axes(&["tp", "pp"]);
        // The data-parallel rank is the same across a tensor-and-pipeline group.
        assert!(!splits(&[along(&["dp"])], Some("mp_group"), Some(&model_parallel)));
        // The pipeline stage is not: the group spans it.
        assert!(splits(&[along(&["pp"])], Some("mp_group"), Some(&model_parallel)));
        assert!(splits(&[along(&["dp", "cp"])], Some("g"), Some(&axes(&["cp"]))));
        // A group whose axes are not shown, however it is spelled, and the world are split.
        assert!(splits(&[along(&["dp"])], Some("self.tp_group"), None));
        assert!(splits(&[along(&["dp"])], None, None));
        // A helper's group known by its axes only (a closure's variable): a rank within a
        // group as written elsewhere is not shown to be another group's.
        assert!(!splits(&[along(&["dp"])], None, Some(&model_parallel)));
        assert!(splits(&[rank(Some("self.dp_group"))], None, Some(&model_parallel)));
        // Data beside the rank splits any group.
        let mixed = [along(&["dp"]), Dependence::new(DependenceKind::LocalData, String::new())];
        assert!(splits(&mixed, Some("mp_group"), Some(&model_parallel)));
    }
}
