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
    Analysis, Call, CollectiveSite, Collectives, Dependence, DependenceKind, Function, Loop,
    Module, Outline, SiteVia,
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
    /// What each parameter depends on, per (function `def` line, parameter, caller depth):
    /// every finding in a function asks about the same parameters, and answering walks the
    /// file's calls.
    pub(crate) parameters: std::cell::RefCell<
        std::collections::HashMap<(u32, String, usize), Vec<desync_python::Dependence>>,
    >,
}

impl<'a> Context<'a> {
    pub fn new(
        module: &'a Module,
        outline: &'a Outline,
        collectives: &'a Collectives<'a, 'a>,
    ) -> Context<'a> {
        let sites = collectives
            .sites(module)
            .into_iter()
            .map(|site| {
                let call =
                    outline.calls.iter().find(|c| c.line == site.line && c.column == site.column);
                let op = site.ops.join(",");
                Site { site, call, op }
            })
            .collect();
        Context { module, outline, collectives, sites, parameters: std::cell::RefCell::default() }
    }

    pub fn analysis(&self) -> &'a Analysis<'a> {
        self.collectives.analysis()
    }

    /// Sites inside function `function` (`None`: module level) on lines `first..=last`.
    pub fn sites_in(
        &self,
        function: Option<u32>,
        first: u32,
        last: u32,
    ) -> impl Iterator<Item = &Site<'a>> {
        self.sites
            .iter()
            .filter(move |s| s.function() == function && (first..=last).contains(&s.line()))
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
    pub fn dependence(&self, line: u32, expr: &str) -> Vec<Dependence> {
        let finding = self.analysis().condition(self.module, line, expr);
        params::resolve(self, line, finding, 0)
    }
}

/// True when a dependence list names the rank id.
pub(crate) fn has_rank_id(deps: &[Dependence]) -> bool {
    deps.iter().any(|d| d.kind == DependenceKind::RankId)
}
