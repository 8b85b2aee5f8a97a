//! Layer 4, sites: the collectives a call issues — directly, through the project's helpers,
//! inside library calls the table names — and the metadata they carry (sizes, dtypes, groups:
//! [`metadata`]), the calls that change it ([`setup`]), a line's call and where its arguments
//! come from ([`call`]), and the files each rank probes ([`probe`]). Reads layers 1-3.
//!
//! Collective sites: the calls (and property reads) of a module that issue collectives, found
//! by resolving each callee to what it *is* — a row of the knowledge table
//! (`torch.distributed.all_reduce` under any alias, `accelerator.gather`,
//! `trainer.save_checkpoint`, `self.log(..., sync_dist=True)`, `trainer.log_dir`), a function
//! of the project whose body issues one (followed into imported project modules), or the
//! forward and backward passes of a model a wrapper of the table made (`DDP(model)(x)`,
//! `loss.backward()` of a loss it computed). Spelling decides nothing: a name is only used to
//! skip calls that cannot resolve to any of these (a call `f(x)` where `f` is neither defined,
//! imported nor named like a table member), and every site is confirmed by resolution.
//!
//! [`Collectives`] memoises per project function what its body issues, and the project's
//! [`HelperMemo`] keeps the summaries of its modules' helpers for every file linted against it,
//! so that each helper is summarised once per run.
//!
//! Length: the walk over a module's statements and its helpers' summaries share one memo
//! ([`Collectives`]); a later split: the helper summaries (`Reach`, `HelperMemo`) into `reach.rs`.

pub(crate) mod call;
mod callers;
pub(crate) mod count;
mod facts;
mod metadata;
pub(crate) mod probe;
mod raises;
mod setup;
mod wrapped;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use smallvec::SmallVec;

use ruff_python_ast::{Expr, ExprCall, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};

pub use callers::{Argument, ArgumentElsewhere, RankOnly};
use facts::Facts;
pub use setup::{SetupBlock, SetupCall};

use crate::names::bindings::{self, Scope, Source};
use crate::names::knowledge::{Role, knowledge};
use crate::syntax::expr::{self, last_segment};
use crate::syntax::module::{Gate, Module};
use crate::syntax::tree::{self, MAX_DEPTH, header_exprs};
use crate::values::resolve::{FnRef, Sym, def_at};
use crate::values::value::Eval;
use crate::values::{Analysis, ModuleKey, key_of};

/// How many project functions deep a helper is followed looking for a collective.
const MAX_HELPER_DEPTH: usize = 4;
/// Ops kept per helper (a helper that issues more is still one site).
const MAX_OPS: usize = 16;

/// A call or property read that issues collectives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectiveSite {
    /// 1-based line and character column where the call (or attribute) starts.
    pub line: u32,
    pub column: u32,
    /// `def` line of the innermost function around the site; `None` at module level.
    pub function: Option<u32>,
    /// Source text of the callee, or of the attribute read for a property.
    pub callee: String,
    /// What Flight Recorder records for it, in order (`all_reduce`, `barrier`, `p2p`...); for a
    /// helper, what its body issues.
    pub ops: Vec<String>,
    pub via: SiteVia,
    /// Source text of the process-group argument (`group=`, `process_group=`, `pg=`).
    pub group: Option<String>,
    /// The axes of the table's grid of ranks that group spans, when the code shows it
    /// (`group=mpu.get_data_parallel_group()`, directly or through assignments; for a helper,
    /// the group its collectives all name, as its own code shows it).
    pub group_axes: Option<Vec<String>>,
    /// For a gather: source text of the argument whose shape must agree across ranks.
    pub input: Option<String>,
    /// 1-based line where `input` starts.
    pub input_line: Option<u32>,
}

/// Why a site issues collectives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SiteVia {
    /// A call of a table row (its qualified name).
    Table(String),
    /// A property read that issues a collective (its qualified name).
    Property(String),
    /// Calling a model wrapped by this wrapper (FSDP all-gathers parameters in forward).
    Forward(String),
    /// `.backward()` of a value a model wrapped by this wrapper computed (gradient reduction).
    Backward(String),
    /// A function of the project whose body issues `reaches`; `group`: the argument the call
    /// passes for the parameter every collective of that body names as its process group;
    /// `leads`: the body issues its first collective before anything that can raise an error
    /// of the program's logic on some ranks only (it only builds the payload first);
    /// `axes`: the grid axes of that group, when shown ([`CollectiveSite::group_axes`]);
    /// `receives`: its first collective delivers what a source rank sends (a broadcast or a
    /// scatter); `serves`: its body is a receive loop ([`serves`]), which issues whatever
    /// the source drives it to, as many times as the source does.
    Helper {
        name: String,
        reaches: String,
        group: Option<String>,
        axes: Option<Vec<String>>,
        leads: bool,
        receives: bool,
        serves: bool,
    },
}

impl CollectiveSite {
    /// True when everything it issues is point-to-point (rank-asymmetric by design).
    pub fn point_to_point(&self) -> bool {
        !self.ops.is_empty() && self.ops.iter().all(|o| o == "p2p")
    }

    /// "`dist.all_reduce(...)` at line 12", with what a helper reaches or a wrapper does.
    pub fn describe(&self) -> String {
        let at = format!("`{}` at line {}", self.callee, self.line);
        match &self.via {
            SiteVia::Table(_) => at,
            SiteVia::Property(q) => {
                format!("{at} (reading `{}` issues a {})", short_name(q), self.ops.join(", "))
            }
            SiteVia::Forward(w) => {
                format!(
                    "{at} (the forward pass of a `{}` model: {})",
                    short_name(w),
                    self.ops.join(", ")
                )
            }
            SiteVia::Backward(w) => {
                format!(
                    "{at} (the gradient {} of a `{}` model)",
                    self.ops.join(", "),
                    short_name(w)
                )
            }
            SiteVia::Helper { reaches, .. } => format!("{at} (calls {reaches})"),
        }
    }
}

/// A name, or a choice between a name and something else (`f if c else None`).
fn names_a_callable(e: &Expr) -> bool {
    match e {
        Expr::Name(_) => true,
        Expr::If(i) => names_a_callable(&i.body) || names_a_callable(&i.orelse),
        _ => false,
    }
}

fn short_name(qualified: &str) -> &str {
    qualified.rsplit('.').next().unwrap_or(qualified)
}

/// Where a call is: the function around it, its statement, and the facts that hold whenever
/// that function runs.
#[derive(Clone, Copy)]
struct Caller<'s> {
    def: &'s StmtFunctionDef,
    stmt: &'s Stmt,
    known: Option<&'s Facts>,
}

/// What a function of the project issues when it is called.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reach {
    ops: Vec<String>,
    /// The first site, described ("`dist.all_reduce` at line 8").
    first: String,
    /// The parameter every collective of the body names as its process group
    /// (`def sync(x, group): dist.all_reduce(x, group=group)`), if one does.
    group_param: Option<String>,
    /// For a method: the attribute of its own object every collective of the body names as
    /// its process group (`dist.all_gather(parts, t, group=self.tp_group)`), if one does;
    /// a call through the caller's own object (`self.gather_shards(...)`) issues them there.
    group_field: Option<String>,
    /// The grid axes of the group every collective of the body names, when its own code
    /// shows them (a closure's `mp_group = mpu.get_model_parallel_group()`).
    group_axes: Option<Vec<String>>,
    /// Whether the body issues its first collective before anything that can raise on some
    /// ranks only ([`issues_first`]).
    leads: bool,
    /// Whether its first collective delivers what a source rank sends ([`SiteVia::Helper`]).
    receives: bool,
    /// Whether the body is a receive loop ([`serves`]).
    serves: bool,
}

/// Last segments of the table's collective, wrapper and rank-only names: a call whose last
/// segment is none of these, and whose callee is not defined or imported by the module, cannot
/// resolve to a collective.
struct Segments {
    members: HashSet<String>,
    properties: HashSet<String>,
    wrappers: Vec<String>,
}

fn segments() -> &'static Segments {
    static ONCE: OnceLock<Segments> = OnceLock::new();
    ONCE.get_or_init(|| {
        let mut s = Segments {
            members: HashSet::default(),
            properties: HashSet::default(),
            wrappers: Vec::new(),
        };
        for api in knowledge().apis() {
            for name in &api.names {
                let last = short_name(name).to_owned();
                match api.role {
                    Role::Collective | Role::RankOnly => {
                        if api.property {
                            s.properties.insert(last.clone());
                        }
                        s.members.insert(last);
                    }
                    Role::Wrapper => {
                        s.members.insert(last.clone());
                        s.wrappers.push(last);
                    }
                    _ => {}
                }
            }
        }
        s
    })
}

/// A project function: its module and the start of its `def`.
type FnKey = (ModuleKey, TextSize);

/// What a function issues under the facts a call hands it ([`Collectives::reach_under`]).
type ReachUnder = Option<Arc<Reach>>;

/// What the functions of a project's modules issue, kept by the [`Project`](crate::names::project::Project)
/// across the files linted against it: most files call the same few imported helpers, and
/// summarising them again for every file took a quarter of the linter's time.
///
/// An entry is computed in a fresh [`Analysis`] (no state left by the file that asked first),
/// and kept only when the computation met no helper that was already being summarised before
/// it began (recursion through helpers cuts the walk, and what a cut hides depends on where
/// the walk started). A cut of the helper itself or of a helper it called meanwhile hides
/// nothing the helper's own walk does not count (`define_import_structure` calling itself):
/// such an entry is kept too. So an entry is the same whatever file asked first, and findings
/// do not depend on the order files are linted in.
#[derive(Default)]
pub struct HelperMemo {
    /// (module, `def`, depth) → what calling it issues; the module is kept alive so that its
    /// address, the key, is not reused.
    reaches: Mutex<HashMap<(ModuleKey, TextSize, usize), SharedReach>>,
}

#[cfg(test)]
impl HelperMemo {
    /// The names of the helpers summarised so far (at any depth), sorted.
    fn summarised(&self) -> Vec<String> {
        let memo = self.reaches.lock().unwrap();
        let mut names: Vec<String> = memo
            .iter()
            .filter_map(|((_, def, _), (module, _))| def_at(module, *def))
            .map(|d| d.name.id.to_string())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

/// A shared summary and the module its key's address belongs to.
type SharedReach = (Arc<Module>, Option<Arc<Reach>>);

/// What a helper issues, and the shallowest cut its walk met ([`Cut`]).
type LocalReach = (Option<Arc<Reach>>, Cut);

/// Where recursion cut a walk: the depth, in the stack of helpers being summarised, of the
/// helper that was met again while in progress ([`NO_CUT`]: none). A summary is shared only
/// when every cut it met is at its own depth or deeper.
type Cut = usize;
const NO_CUT: Cut = usize::MAX;

/// Finds collective sites; one per [`Analysis`] (per linted file), its project's
/// [`HelperMemo`] shared by all.
pub struct Collectives<'a, 'p> {
    cx: &'a Analysis<'p>,
    reaches: RefCell<HashMap<FnKey, LocalReach>>,
    /// The helpers this analysis is walking, each with the depth of the shared stack when its
    /// walk began.
    in_progress: RefCell<HashMap<FnKey, Cut>>,
    /// The helpers of the project being summarised for the [`HelperMemo`] by this walk and
    /// the fresh analyses it started, each with its depth in that stack; per walk, not per
    /// memo: another thread's walk must not cut this one.
    shared_in_progress: Rc<RefCell<HashMap<FnKey, Cut>>>,
    /// The shallowest cut met since the current summary began.
    shallowest_cut: std::cell::Cell<Cut>,
    /// What the callers pass for a parameter, as a wrapped model (`false`) or as a value a
    /// wrapped model computed (`true`): (function, parameter, which) → wrapper. Parameters
    /// are asked about once per call of every function that takes them; callers are walked
    /// once.
    params: RefCell<HashMap<(FnKey, String, bool), Option<String>>>,
    /// Where each function's calls are in its module ([`Collectives::calls_of`]): asked once
    /// per parameter a finding depends on, and finding them walks the whole module.
    calls_found: RefCell<HashMap<FnKey, Rc<Vec<callers::FoundCall>>>>,
    /// What a function issues under the facts a call hands it, per function and facts
    /// ([`Collectives::reach_under`]).
    reaches_under: RefCell<HashMap<(FnKey, Facts), ReachUnder>>,
    /// What each function of the project raises of the project's own exception classes
    /// (`None` while it is being walked).
    raises: RefCell<HashMap<FnKey, Option<Arc<raises::RaiseSummary>>>>,
}

impl std::fmt::Debug for Collectives<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collectives")
            .field("helpers", &self.reaches.borrow().len())
            .finish_non_exhaustive()
    }
}

impl<'a, 'p> Collectives<'a, 'p> {
    pub fn new(cx: &'a Analysis<'p>) -> Self {
        Collectives {
            cx,
            reaches: RefCell::default(),
            in_progress: RefCell::default(),
            shared_in_progress: Rc::default(),
            shallowest_cut: std::cell::Cell::new(NO_CUT),
            params: RefCell::default(),
            calls_found: RefCell::default(),
            reaches_under: RefCell::default(),
            raises: RefCell::default(),
        }
    }

    pub fn analysis(&self) -> &'a Analysis<'p> {
        self.cx
    }

    /// Every collective site of `module`, in every scope (nested functions and methods
    /// included), in source order.
    pub fn sites(&self, module: &Module) -> Vec<CollectiveSite> {
        let mut out = Vec::new();
        walk_scopes(module.body(), None, 0, &mut |stmt, function| {
            self.stmt_sites(module, stmt, function, 0, None, &mut out);
        });
        out.sort_by_key(|s| (s.line, s.column));
        out
    }

    /// The sites of lines `first..=last` of the function whose `def` is on `function_line`,
    /// found as [`Collectives::sites`] finds them, but knowing that each test of `known`
    /// (source text, and whether it holds) is decided that way there: the branches those
    /// tests rule out are left out, in the function and in what it calls with the values they
    /// test (`if not self.use_zero and rank != 0: return` leaves, on every rank that goes on
    /// while another returns, `use_zero` false). Tests that say nothing of the function's
    /// object or parameters change nothing.
    pub fn sites_under(
        &self,
        module: &Module,
        function_line: u32,
        first: u32,
        last: u32,
        known: &[(&str, bool)],
    ) -> Vec<CollectiveSite> {
        let Some(def) = callers::def_on_line(module, function_line) else { return Vec::new() };
        let parsed: Vec<_> = known
            .iter()
            .filter_map(|(text, holds)| {
                ruff_python_parser::parse_expression(text).ok().map(|p| (p, *holds))
            })
            .collect();
        let tests: Vec<(&Expr, bool)> = parsed.iter().map(|(p, h)| (p.expr(), *h)).collect();
        let facts = Facts::from_tests(def, &tests);
        let mut out = Vec::new();
        tree::walk_scope(&def.body, &mut |stmt, frames| {
            let line = module.line_of(stmt.start());
            if (first..=last).contains(&line) && facts.allow(frames) {
                self.stmt_sites(module, stmt, Some(def), 0, Some(&facts), &mut out);
            }
        });
        out.sort_by_key(|s| (s.line, s.column));
        out
    }

    /// The ops the receive loops ([`serves`]) among the methods of the class holding the
    /// method whose `def` is on `function_line` issue, on the default group: what that class's
    /// own workers serve. Empty when the function is not a method or no method is such a loop.
    /// The class is then a command loop's two sides (`serve()` on the workers, the methods that
    /// send commands on the source), and a collective of those kinds that the source skips
    /// sends one command fewer: the workers wait for the next, as they do between calls.
    pub fn served_by_own_class(&self, module: &Module, function_line: u32) -> Vec<String> {
        let Some(def) = callers::def_on_line(module, function_line) else { return Vec::new() };
        let Some(class) = crate::values::resolve::class_of(module, def) else { return Vec::new() };
        let mut out = Vec::new();
        for method in class.body.iter().filter_map(|s| match s {
            Stmt::FunctionDef(d) => Some(d),
            _ => None,
        }) {
            let f = FnRef { module: None, def: method.start(), is_method: true };
            if let Some(reach) = self.reach(module, &f, 0)
                && reach.serves
                && reach.group_param.is_none()
                && reach.group_field.is_none()
            {
                out.extend(reach.ops.iter().cloned());
            }
        }
        out
    }

    /// Whether `name` is bound by one of `module`'s imports (at any level of the file).
    pub(crate) fn imported_by(module: &Module, name: &str) -> bool {
        Self::gate(module).imported.contains(name)
    }

    fn gate(module: &Module) -> &Gate {
        module.gate().get_or_init(|| {
            let mut gate = Gate::default();
            tree::walk_all(module.body(), &mut |stmt| match stmt {
                Stmt::FunctionDef(d) => {
                    gate.defs.insert(d.name.id.to_string());
                }
                Stmt::Import(s) => {
                    for a in &s.names {
                        let bound = a.asname.as_ref().map_or_else(
                            || a.name.id.split('.').next().unwrap_or_default().to_owned(),
                            |n| n.id.to_string(),
                        );
                        gate.imported.insert(bound);
                    }
                }
                Stmt::ImportFrom(s) => {
                    for a in &s.names {
                        gate.imported.insert(a.asname.as_ref().unwrap_or(&a.name).id.to_string());
                    }
                }
                Stmt::Assign(a) if names_a_callable(&a.value) => {
                    for t in &a.targets {
                        if let Expr::Attribute(ta) = t {
                            gate.held.insert(ta.attr.id.to_string());
                        }
                    }
                }
                _ => {}
            });
            let source = module.source();
            gate.wrappers = segments()
                .wrappers
                .iter()
                .any(|w| memchr::memmem::find(source.as_bytes(), w.as_bytes()).is_some());
            gate
        })
    }

    /// The sites one statement evaluates itself (its header, for a compound statement);
    /// `known`: facts that hold whenever `function` runs here ([`Facts`]).
    fn stmt_sites(
        &self,
        module: &Module,
        stmt: &Stmt,
        function: Option<&StmtFunctionDef>,
        depth: usize,
        known: Option<&Facts>,
        out: &mut Vec<CollectiveSite>,
    ) {
        let gate = Self::gate(module);
        let scope = Scope::of(module, function);
        let mut eval: Option<Eval<'_, '_>> = None;
        for e in header_exprs(stmt) {
            // Kept inline: asked of every expression of every file, most with few calls.
            let mut callees: SmallVec<[TextSize; 8]> = SmallVec::new();
            let mut nodes: SmallVec<[&Expr; 16]> = SmallVec::new();
            expr::walk(e, &mut |x| {
                if let Expr::Call(c) = x {
                    callees.push(c.func.start());
                }
                if matches!(x, Expr::Call(_) | Expr::Attribute(_)) {
                    nodes.push(x);
                }
            });
            callees.sort_unstable();
            for x in nodes {
                // A forwarder's call (`asyncio.to_thread(dist.barrier)`) is its target's call,
                // at the same place.
                let forwarded;
                let x = match x {
                    Expr::Call(c)
                        if last_segment(&c.func).is_some_and(|s| knowledge().may_forward(s)) =>
                    {
                        let eval = eval.get_or_insert_with(|| Eval::new(self.cx, module, scope, 0));
                        match eval.forwarded(c) {
                            Some(f) => {
                                forwarded = Expr::Call(f);
                                &forwarded
                            }
                            None => x,
                        }
                    }
                    _ => x,
                };
                let site = match x {
                    Expr::Call(c) => {
                        if !Self::worth_resolving(gate, c) {
                            continue;
                        }
                        let eval = eval.get_or_insert_with(|| Eval::new(self.cx, module, scope, 0));
                        let caller = function.map(|def| Caller { def, stmt, known });
                        self.call_site(eval, module, c, caller, depth)
                    }
                    Expr::Attribute(a) if callees.binary_search(&x.start()).is_err() => {
                        if !segments().properties.contains(a.attr.id.as_str()) {
                            continue;
                        }
                        let eval = eval.get_or_insert_with(|| Eval::new(self.cx, module, scope, 0));
                        property_site(eval, x)
                    }
                    _ => None,
                };
                if let Some((ops, via)) = site {
                    // Found here, not per statement: few statements hold a site.
                    let function_line = function.map(|d| module.line_of(d.name.start()));
                    let eval = eval.get_or_insert_with(|| Eval::new(self.cx, module, scope, 0));
                    out.push(Self::site(module, eval, x, ops, via, function_line));
                }
            }
        }
    }

    /// Whether a call can resolve to something that issues collectives.
    fn worth_resolving(gate: &Gate, c: &ExprCall) -> bool {
        let Some(last) = last_segment(&c.func) else { return false };
        if segments().members.contains(last)
            || last == "backward"
            || gate.defs.contains(last)
            || gate.held.contains(last)
        {
            return true;
        }
        if let Some(root) = expr::root_name(&c.func)
            && gate.imported.contains(root)
        {
            return true;
        }
        // A call of a value that may be a wrapped model (`model(x)`, `self.net(x)`).
        gate.wrappers && matches!(&*c.func, Expr::Name(_) | Expr::Attribute(_))
    }

    /// What a call issues, if anything: (ops, why). `caller`: where the call is.
    fn call_site(
        &self,
        eval: &mut Eval<'_, '_>,
        module: &Module,
        c: &ExprCall,
        caller: Option<Caller<'_>>,
        depth: usize,
    ) -> Option<(Vec<String>, SiteVia)> {
        let at = c.start();
        match eval.resolve(&c.func, at) {
            Sym::Path(p) => {
                let api = knowledge().api(&p)?;
                if api.role != Role::Collective || !keyword_enables(c, api.when_keyword.as_deref())
                {
                    return None;
                }
                return Some((vec![api.op.clone().unwrap_or_default()], SiteVia::Table(p)));
            }
            Sym::Function(f) => {
                let reach = self.reach(module, &f, depth + 1)?;
                let target: &Module = f.module.as_deref().unwrap_or(module);
                let def = def_at(target, f.def);
                let reach = match (caller, def) {
                    (Some(caller), Some(def)) => {
                        let own = f.is_method && through_own_object(c, caller.def);
                        let through_instance =
                            f.is_method && matches!(&*c.func, Expr::Attribute(_));
                        let mut facts = Facts::at_call(
                            caller.def,
                            caller.stmt,
                            caller.known,
                            def,
                            c,
                            own,
                            through_instance,
                        );
                        facts.extend(Facts::from_arguments(def, c, through_instance, &mut |a| {
                            eval.shown_not_none(a, at, 0)
                        }));
                        if facts.is_empty() {
                            reach
                        } else {
                            self.reach_under(module, &f, depth + 1, facts)?
                        }
                    }
                    _ => reach,
                };
                let name = def.map(|d| d.name.id.to_string()).unwrap_or_default();
                let passed = reach.group_param.as_deref().zip(def).and_then(|(p, def)| {
                    let parameters = parameter_names(def);
                    let through_instance = f.is_method && matches!(&*c.func, Expr::Attribute(_));
                    crate::values::value::argument_for(&parameters, through_instance, c, p)
                        .filter(|a| !matches!(a, Expr::NoneLiteral(_)))
                });
                let group = passed.map(|a| module.text(a.range()).to_owned());
                // The grid axes of the group passed, where the call is; else of the group
                // the body names itself, where the body is.
                let axes = match passed {
                    Some(a) => eval.grid_axes_of(a, at, 0),
                    None if reach.group_field.is_none() => reach.group_axes.clone(),
                    None => None,
                };
                // `self.gather_shards(...)` of a method whose collectives use `self.tp_group`:
                // the caller's object is the callee's, so the group is the caller's field.
                let group = group.or_else(|| {
                    let field = reach.group_field.as_deref()?;
                    let Expr::Attribute(a) = &*c.func else { return None };
                    let Expr::Name(receiver) = &*a.value else { return None };
                    let own = def.and_then(|d| parameter_names(d).into_iter().next())?;
                    (receiver.id.as_str() == own).then(|| format!("{own}.{field}"))
                });
                return Some((
                    reach.ops.clone(),
                    SiteVia::Helper {
                        name,
                        reaches: reach.first.clone(),
                        group,
                        axes,
                        leads: reach.leads,
                        receives: reach.receives,
                        serves: reach.serves,
                    },
                ));
            }
            _ => {}
        }
        // `loss.backward()` of a loss a wrapped model computed.
        if let Expr::Attribute(a) = &*c.func
            && a.attr.id.as_str() == "backward"
        {
            let wrapper = self.flows_from_wrapped(eval, &a.value, at, 0)?;
            let op = knowledge().api(&wrapper).and_then(|w| w.op.clone()).unwrap_or_default();
            return Some((vec![op], SiteVia::Backward(wrapper)));
        }
        // Calling a wrapped model: its forward pass.
        let wrapper = self.wrapped(eval, &c.func, at, 0)?;
        let op = knowledge().forward_op(&wrapper)?;
        Some((vec![op.to_owned()], SiteVia::Forward(wrapper)))
    }

    /// What the project function `f` issues when called (memoised; `None`: nothing, or too
    /// deep or recursive to tell).
    fn reach(&self, module: &Module, f: &FnRef, depth: usize) -> Option<Arc<Reach>> {
        if depth > MAX_HELPER_DEPTH {
            return None;
        }
        let target: &Module = f.module.as_deref().unwrap_or(module);
        let key = (key_of(target), f.def);
        if let Some((r, cut)) = self.reaches.borrow().get(&key) {
            self.met_cut(*cut);
            return r.clone();
        }
        let outer = self.shallowest_cut.replace(NO_CUT);
        let reach =
            match (&f.module, self.cx.project.and_then(|p| p.helper_memo()?.get::<HelperMemo>())) {
                // A helper of another module: the project may know it already.
                (Some(held), Some(memo)) => self.shared_reach(memo, held, f, depth),
                _ => self.reach_uncached(module, f, depth),
            };
        let cut = self.shallowest_cut.replace(outer);
        self.met_cut(cut);
        self.reaches.borrow_mut().insert(key, (reach.clone(), cut));
        reach
    }

    /// Marks `key` as walked in `walking` (this analysis' walks, or the shared stack), at the
    /// shared stack's current depth, which it returns: deeper than every helper being
    /// summarised for the memo when the walk began. `None` when `key` is already being walked:
    /// a cut, recorded.
    fn enter(&self, walking: &RefCell<HashMap<FnKey, Cut>>, key: FnKey) -> Option<Cut> {
        let depth = self.shared_in_progress.borrow().len();
        let mut walking = walking.borrow_mut();
        if let Some(&cut) = walking.get(&key) {
            self.met_cut(cut);
            return None;
        }
        walking.insert(key, depth);
        Some(depth)
    }

    /// Records a cut at depth `cut` (or none, [`NO_CUT`]) in the current summary.
    fn met_cut(&self, cut: Cut) {
        self.shallowest_cut.set(self.shallowest_cut.get().min(cut));
    }

    /// [`Collectives::reach`] of a helper of a module the project holds, through its memo.
    fn shared_reach(
        &self,
        memo: &HelperMemo,
        held: &Arc<Module>,
        f: &FnRef,
        depth: usize,
    ) -> Option<Arc<Reach>> {
        let key = (key_of(held), f.def);
        let lock = || memo.reaches.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, r)) = lock().get(&(key.0, key.1, depth)) {
            return r.clone();
        }
        let own_depth = self.enter(&self.shared_in_progress, key)?;
        let fresh_analysis = Analysis::new(self.cx.project);
        let mut fresh = Collectives::new(&fresh_analysis);
        fresh.shared_in_progress = Rc::clone(&self.shared_in_progress);
        let reach = fresh.reach_uncached(held, f, depth);
        self.shared_in_progress.borrow_mut().remove(&key);
        let cut = fresh.shallowest_cut.get();
        if cut >= own_depth {
            // Another thread may have stored the same summary meanwhile.
            lock().entry((key.0, key.1, depth)).or_insert((Arc::clone(held), reach.clone()));
        } else {
            self.met_cut(cut);
        }
        reach
    }

    /// What `f` issues, walking its body (`module`: the module the call was in).
    fn reach_uncached(&self, module: &Module, f: &FnRef, depth: usize) -> Option<Arc<Reach>> {
        self.walk_body(module, f, depth, None)
    }

    /// What `f` issues when the `facts` its caller hands on hold (in `f`'s own terms): the
    /// collectives of the branches they rule out are left out (memoised per function and
    /// facts).
    fn reach_under(
        &self,
        module: &Module,
        f: &FnRef,
        depth: usize,
        facts: Facts,
    ) -> Option<Arc<Reach>> {
        if depth > MAX_HELPER_DEPTH {
            return None;
        }
        let target: &Module = f.module.as_deref().unwrap_or(module);
        let memo_key = ((key_of(target), f.def), facts);
        if let Some(r) = self.reaches_under.borrow().get(&memo_key) {
            return r.clone();
        }
        let reach = self.walk_body(module, f, depth, Some(&memo_key.1));
        self.reaches_under.borrow_mut().insert(memo_key, reach.clone());
        reach
    }

    /// The summary of `f`'s body: its sites (under `facts`, when given: the statements of
    /// branches they rule out left out). Recursion through `f` cuts the walk.
    fn walk_body(
        &self,
        module: &Module,
        f: &FnRef,
        depth: usize,
        facts: Option<&Facts>,
    ) -> Option<Arc<Reach>> {
        let target: &Module = f.module.as_deref().unwrap_or(module);
        let key = (key_of(target), f.def);
        self.enter(&self.in_progress, key)?;
        let def = def_at(target, f.def);
        let mut sites = Vec::new();
        if let Some(def) = def {
            tree::walk_scope(&def.body, &mut |stmt, frames| {
                if facts.is_none_or(|facts| facts.allow(frames)) {
                    self.stmt_sites(target, stmt, Some(def), depth, facts, &mut sites);
                }
            });
        }
        self.in_progress.borrow_mut().remove(&key);
        let leads = def.zip(sites.first()).is_some_and(|(def, first)| {
            let scope = Scope { function: Some(def), suite: &def.body };
            let mut eval = Eval::new(self.cx, target, scope, 0);
            issues_first(&mut eval, target, def, first)
        });
        summarize(&sites, target, f, def, leads)
    }

    fn site(
        module: &Module,
        eval: &mut Eval<'_, '_>,
        node: &Expr,
        ops: Vec<String>,
        via: SiteVia,
        function: Option<u32>,
    ) -> CollectiveSite {
        let mut group_axes = None;
        let (callee, group, input) = match node {
            Expr::Call(c) => {
                let (group, input) = match &via {
                    SiteVia::Table(q) => {
                        let position = knowledge().api(q).and_then(|a| a.group_arg);
                        let group = crate::values::group_argument(c, position);
                        group_axes = group.and_then(|g| eval.grid_axes_of(g, c.start(), 0));
                        (group.map(|g| module.text(g.range()).to_owned()), shape_input(c, q))
                    }
                    SiteVia::Helper { group, axes, .. } => {
                        group_axes.clone_from(axes);
                        (group.clone(), None)
                    }
                    _ => (
                        crate::values::group_argument(c, None)
                            .map(|g| module.text(g.range()).to_owned()),
                        None,
                    ),
                };
                (module.text(c.func.range()).to_owned(), group, input)
            }
            _ => (module.text(node.range()).to_owned(), None, None),
        };
        CollectiveSite {
            line: module.line_of(node.start()),
            column: module.column_of(node.start()),
            function,
            callee: crate::syntax::expr::snippet(&callee),
            ops,
            via,
            group,
            group_axes,
            input: input.map(|i| module.text(i.range()).to_owned()),
            input_line: input.map(|i| module.line_of(i.start())),
        }
    }
}

/// A helper's summary from the sites its body issues (`target`: its module).
fn summarize(
    sites: &[CollectiveSite],
    target: &Module,
    f: &FnRef,
    def: Option<&StmtFunctionDef>,
    leads: bool,
) -> Option<Arc<Reach>> {
    sites.first().map(|first_site| {
        // The process group every collective of the body names, if they all name one.
        let common = first_site
            .group
            .as_deref()
            .filter(|g| sites.iter().all(|s| s.group.as_deref() == Some(*g)));
        let mut ops: Vec<String> = sites.iter().flat_map(|s| s.ops.iter().cloned()).collect();
        ops.truncate(MAX_OPS);
        let file = if f.module.is_some() {
            target
                .file_path()
                .and_then(|p| p.file_name())
                .map(|n| format!(" of {}", n.to_string_lossy()))
                .unwrap_or_default()
        } else {
            String::new()
        };
        let first = match &first_site.via {
            SiteVia::Helper { name, reaches, .. } => {
                shorten(format!("`{name}`{file}, which calls {reaches}"))
            }
            _ => format!("`{}` at line {}{file}", first_site.callee, first_site.line),
        };
        let parameters = common.and(def).map(parameter_names).unwrap_or_default();
        let group_param = common.filter(|g| parameters.iter().any(|p| p == g)).map(str::to_owned);
        let group_field = common.filter(|_| f.is_method).and_then(|group| {
            let receiver = parameters.first()?;
            let field = group.strip_prefix(receiver.as_str())?.strip_prefix('.')?;
            let plain = !field.is_empty()
                && field.chars().all(|ch| ch.is_alphanumeric() || ch == '_' || ch == '.');
            plain.then(|| field.to_owned())
        });
        let group_axes = first_site
            .group_axes
            .clone()
            .filter(|a| sites.iter().all(|s| s.group_axes.as_ref() == Some(a)));
        let receives = receives(first_site);
        let serves = def.is_some_and(|def| serves(target, def, sites));
        Arc::new(Reach {
            ops,
            first,
            group_param,
            group_field,
            group_axes,
            leads,
            receives,
            serves,
        })
    })
}

/// Whether `site` delivers what a source rank sends: a call of the table's
/// `source_collectives` (`dist.scatter_object_list(out, msgs, src=0)`), or of a helper whose
/// first collective is one.
fn receives(site: &CollectiveSite) -> bool {
    match &site.via {
        SiteVia::Table(p) => knowledge().is_source_collective(p),
        SiteVia::Helper { receives, .. } => *receives,
        _ => false,
    }
}

/// Whether `def`'s body is a receive loop, the worker side of a command loop:
///
/// ```python
/// def serve(self):
///     while True:
///         command, payload = self._scatter()     # what rank 0 sends
///         if command == "stop":
///             return
///         self._infer_and_gather(payload)
/// ```
///
/// A `while True:` at the top of the body whose first statement receives from a source rank
/// ([`receives`]) and binds what it received, and whose every way out (`return`, `break`)
/// is under an `if` that tests a name so bound. The ranks in it issue what the source's
/// messages tell them to, as many times as the source sends: they pair with the source's
/// collectives of the kinds the loop issues, however many the source issues.
fn serves(target: &Module, def: &StmtFunctionDef, sites: &[CollectiveSite]) -> bool {
    def.body.iter().any(|stmt| {
        let Stmt::While(w) = stmt else { return false };
        if !matches!(&*w.test, Expr::BooleanLiteral(b) if b.value) || !w.orelse.is_empty() {
            return false;
        }
        let Some(Stmt::Assign(first)) = w.body.first() else { return false };
        let first_line = target.line_of(first.start());
        if !sites.iter().any(|s| s.line == first_line && receives(s)) {
            return false;
        }
        let mut received: Vec<&str> = Vec::new();
        for t in &first.targets {
            crate::syntax::expr::walk(t, &mut |x| {
                if let Expr::Name(n) = x {
                    received.push(n.id.as_str());
                }
            });
        }
        let mut exits = 0;
        let mut all_tested = true;
        tree::walk_scope(&w.body, &mut |stmt, frames| {
            if !matches!(stmt, Stmt::Return(_) | Stmt::Break(_)) {
                return;
            }
            // A `break` of a loop inside this one does not leave it.
            if matches!(stmt, Stmt::Break(_)) && frames.iter().any(|f| tree::is_loop(f.owner)) {
                return;
            }
            exits += 1;
            let tested = frames.iter().any(|f| match f.owner {
                Stmt::If(i) => {
                    let mut names = false;
                    crate::syntax::expr::walk(&i.test, &mut |x| {
                        names |= matches!(x, Expr::Name(n) if received.contains(&n.id.as_str()));
                    });
                    names
                }
                _ => false,
            });
            all_tested &= tested;
        });
        exits > 0 && all_tested
    })
}

/// Whether `def`'s body issues `first` (its first collective) before any statement that can
/// raise an error of the program's logic (`ValueError`, `KeyError`...) on some ranks only:
/// before it come only the docstring and assignments of values built by library calls (calls
/// that resolve outside the project) from literals and names that are not the function's
/// parameters
/// (`choice = torch.tensor([GENERATE], device=torch.cuda.current_device())`). Such a
/// statement gets the same inputs on every rank, so it raises on all of them or on none; what
/// it can raise on one rank alone (a device fault, running out of memory) is a `RuntimeError`,
/// which a failing collective raises too. A caller's `try` whose handler catches only logic
/// errors then cannot skip the helper's collective on some ranks: the error came after it.
fn issues_first(
    eval: &mut Eval<'_, '_>,
    target: &Module,
    def: &StmtFunctionDef,
    first: &CollectiveSite,
) -> bool {
    let leading = match &first.via {
        SiteVia::Table(_) => true,
        SiteVia::Helper { leads, .. } => *leads,
        _ => false,
    };
    if !leading {
        return false;
    }
    let scope = Scope { function: Some(def), suite: &def.body };
    for (i, stmt) in def.body.iter().enumerate() {
        let range = target.line_of(stmt.start())..=target.line_of(stmt.end());
        if range.contains(&first.line) {
            return matches!(stmt, Stmt::Expr(_) | Stmt::Assign(_));
        }
        let builds_payload = match stmt {
            Stmt::Expr(e) => i == 0 && e.value.is_string_literal_expr(),
            Stmt::Pass(_) => true,
            Stmt::Assign(a) => {
                a.targets.iter().all(Expr::is_name_expr)
                    && built_alike(eval, target, scope, &a.value)
            }
            _ => false,
        };
        if !builds_payload {
            return false;
        }
    }
    false
}

/// Whether `e` is made of literals, names other than the function's parameters, attribute
/// reads, displays of those, and calls of library functions (resolved outside the project,
/// `torch.tensor`) on them: the same inputs and the same code on every rank
/// ([`issues_first`]).
fn built_alike(eval: &mut Eval<'_, '_>, module: &Module, scope: Scope<'_>, e: &Expr) -> bool {
    match e {
        Expr::NumberLiteral(_)
        | Expr::StringLiteral(_)
        | Expr::BytesLiteral(_)
        | Expr::BooleanLiteral(_)
        | Expr::NoneLiteral(_) => true,
        Expr::Name(n) => bindings::lookup(module, scope, n.id.as_str(), n.start())
            .is_none_or(|b| !matches!(b.source, Source::Parameter)),
        Expr::Attribute(a) => built_alike(eval, module, scope, &a.value),
        Expr::List(l) => l.elts.iter().all(|x| built_alike(eval, module, scope, x)),
        Expr::Tuple(t) => t.elts.iter().all(|x| built_alike(eval, module, scope, x)),
        Expr::UnaryOp(u) => built_alike(eval, module, scope, &u.operand),
        Expr::Call(c) => {
            matches!(eval.resolve(&c.func, c.start()), Sym::Path(_))
                && c.arguments.args.iter().all(|x| built_alike(eval, module, scope, x))
                && c.arguments.keywords.iter().all(|k| built_alike(eval, module, scope, &k.value))
        }
        _ => false,
    }
}

/// A property read that issues a collective (`trainer.log_dir`).
fn property_site(eval: &mut Eval<'_, '_>, e: &Expr) -> Option<(Vec<String>, SiteVia)> {
    let Sym::Path(p) = eval.resolve(e, e.start()) else { return None };
    let api = knowledge().api(&p)?;
    (api.role == Role::Collective && api.property)
        .then(|| (vec![api.op.clone().unwrap_or_default()], SiteVia::Property(p)))
}

/// `self.log(..., sync_dist=True)`: a row with `when_keyword` issues its collective only when
/// the keyword is passed and not literally false.
fn keyword_enables(c: &ExprCall, keyword: Option<&str>) -> bool {
    let Some(keyword) = keyword else { return true };
    c.arguments.keywords.iter().any(|k| {
        k.arg.as_ref().is_some_and(|a| a.id.as_str() == keyword)
            && !matches!(
                &k.value,
                Expr::BooleanLiteral(b) if !b.value
            )
            && !matches!(&k.value, Expr::NoneLiteral(_))
    })
}

/// The argument of a gather whose shape must agree (the table's `[[shape]]` rows).
fn shape_input<'c>(c: &'c ExprCall, qualified: &str) -> Option<&'c Expr> {
    let shape = knowledge().shape(qualified)?;
    if let Some(k) = shape.keyword.as_deref()
        && let Some(kw) = c
            .arguments
            .keywords
            .iter()
            .find(|kw| kw.arg.as_ref().is_some_and(|a| a.id.as_str() == k))
    {
        return Some(&kw.value);
    }
    c.arguments.args.get(shape.input).filter(|a| !matches!(a, Expr::Starred(_)))
}

fn shorten(mut text: String) -> String {
    const MAX: usize = 160;
    if text.len() > MAX {
        let cut = (0..=MAX).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// Visits every statement of `suite` with the innermost `def` around it, entering nested
/// functions, methods and class bodies.
fn walk_scopes<'m>(
    suite: &'m [Stmt],
    function: Option<&'m StmtFunctionDef>,
    depth: usize,
    visit: &mut dyn FnMut(&'m Stmt, Option<&'m StmtFunctionDef>),
) {
    if depth >= MAX_DEPTH {
        return;
    }
    for stmt in suite {
        visit(stmt, function);
        match stmt {
            Stmt::FunctionDef(d) => walk_scopes(&d.body, Some(d), depth + 1, visit),
            // A class body runs in its own scope; names it binds are read as the module's.
            Stmt::ClassDef(c) => walk_scopes(&c.body, None, depth + 1, visit),
            _ => {
                for block in tree::blocks(stmt) {
                    walk_scopes(block.suite, function, depth + 1, visit);
                }
            }
        }
    }
}

/// `self.method(...)` (the caller's first parameter as the receiver) or `super().method(...)`:
/// the callee runs on the caller's own object.
fn through_own_object(c: &ExprCall, caller: &StmtFunctionDef) -> bool {
    let Expr::Attribute(a) = &*c.func else { return false };
    match &*a.value {
        Expr::Name(n) => tree::first_parameter(caller) == Some(n.id.as_str()),
        Expr::Call(inner) => {
            matches!(&*inner.func, Expr::Name(n) if n.id.as_str() == "super")
                && inner.arguments.is_empty()
        }
        _ => false,
    }
}

/// The names of `def`'s parameters, in order (`self` included for a method).
pub(crate) fn parameter_names(def: &StmtFunctionDef) -> Vec<String> {
    def.parameters.iter_non_variadic_params().map(|p| p.parameter.name.id.to_string()).collect()
}

#[cfg(test)]
mod tests;
