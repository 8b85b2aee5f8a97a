//! Layer 3, values: the one owner of rank-dependence — why the value of an expression can
//! differ from one rank to another (or is uniform), found by following the data, never by how a
//! variable is spelled. One abstract value per expression ([`Value`], [`Deps`] with the chain of
//! [`Reason`]s) is computed by the evaluator ([`value::Eval`], one file per kind of expression
//! under `value/`); what project functions return is summarised once ([`summary`]); where a
//! value comes from across frames is [`origin`]; the public entry points are [`Analysis`] and
//! [`classify`], and the linter's value tracer is [`trace`]. Reads only `syntax` and `names`.
//!
//! A value depends on the rank when it flows from a source the knowledge table names
//! (`torch.distributed.get_rank()`, `trainer.is_global_zero`, `os.environ["LOCAL_RANK"]`, a
//! clock, a random draw, a host read, the batches of a data loader, a caught exception) through
//! assignments, tuple unpacking, calls of the project's own functions (summarised once: what
//! their result depends on, in terms of their parameters), returns and yields, attributes of
//! `self` set elsewhere in the class, and the conditions that decide whether an assignment
//! runs at all (`bad_epochs += 1` under `if val > best`). Loop counters depend on how many
//! times their loop runs, which is the *length* of what it iterates: `for step in range(60)`
//! counts alike on every rank even when the items differ.
//!
//! A value that went through a collective that leaves it identical everywhere (an
//! `all_reduce` in place, `strategy.reduce_boolean_decision`, a helper that does either) is
//! agreed, and depends on nothing. Configuration reads (`args.lr`) are assumed to be the same
//! on every rank and are noted as such. Library calls the table does not name are taken as
//! functions of their arguments.
//!
//! The analysis never claims what it cannot follow: a parameter whose callers are unknown, an
//! attribute set nowhere in view, or a call too deep to summarise is `opaque`, and the caller
//! decides what to do with that (the bridge follows parameters into the caller's frame).
//!
//! Length: the shared vocabulary of the layer ([`Reason`], [`Deps`], [`Value`]) and the
//! [`Analysis`] entry points with their memo tables. A later split: the vocabulary into
//! `deps.rs`, the entry points stay here.

pub(crate) mod classify;
pub(crate) mod condition;
pub(crate) mod length;
pub(crate) mod origin;
pub(crate) mod peers;
pub(crate) mod point_to_point;
pub(crate) mod property;
pub(crate) mod resolve;
pub(crate) mod standing;
pub(crate) mod summary;
pub(crate) mod trace;
pub(crate) mod value;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use ruff_python_ast::{Expr, ExprCall, Mod, Stmt};
use ruff_python_parser::{Mode, ParseOptions, parse_expression_range, parse_unchecked};
use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::names::bindings::Scope;
use crate::names::project::Project;
use crate::syntax::module::Module;
use crate::syntax::types::{Dependence, DependenceKind};

pub use origin::{Carried, OriginFrame, ValueOrigin};
pub use point_to_point::PointToPointUse;

pub(crate) use resolve::Sym;
pub(crate) use summary::Summary;

/// How many bindings deep a value is followed before it is left opaque.
const MAX_HOPS: usize = 10;
/// How many calls deep function summaries nest.
const MAX_CALL_DEPTH: usize = 4;
/// Hops shown in one piece of evidence; longer chains keep their ends.
const MAX_SHOWN_HOPS: usize = 4;

/// One reason a value can differ, with the way it reaches the expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reason {
    pub kind: DependenceKind,
    /// The source itself, e.g. "`dist.get_rank()`".
    pub origin: String,
    /// How the value gets from the expression to the source, outermost first.
    pub hops: Vec<String>,
    /// For a rank id: the process groups it is a rank *within*, as written
    /// (`dist.get_rank(self.dp_group)` → `self.dp_group`; `tp_rank == 0 and sp_rank == 0` →
    /// both groups); empty for the world rank, or when a world rank met it in the value.
    pub groups: Vec<String>,
    /// How the source reaches the value beyond plain data flow: bits of [`via`].
    pub via: u8,
    /// For a read of the environment whose variable a parameter names (`os.environ[env_var]`
    /// in `def config_var(env_var)`): that parameter. A call that passes `"LOCAL_RANK"` for it
    /// reads the rank ([`Eval::substitute`](value::Eval)).
    pub key_param: Option<String>,
}

/// How a [`Reason`] reaches a value beyond plain data flow (assignments, arithmetic, calls,
/// returns): bits of [`Reason::via`], accumulated along the chain.
pub(crate) mod via {
    /// Through what decides whether, or which, assignment runs: `stop = True` under
    /// `if rank == 0:`, `x = a if rank == 0 else None`. Such a value can differ in kind
    /// (set or not, `None` or not) across ranks, not only in contents.
    pub const CHOICE: u8 = 1;
    /// Through what is written into a container or an object in place (`d[k] = v`,
    /// `xs.append(v)`, `obj.attr = v`): the contents written differ, which does not show that
    /// the container's other parts, its keys or its length do.
    pub const CONTAINER: u8 = 2;
    /// Through an attribute of an object held by another object whose fields the analysis
    /// could not keep apart (`self.state.global_step` where `self.state` was built with the
    /// rank among its arguments): one field depends on the rank, which does not show that
    /// this one does.
    pub const OBJECT: u8 = 4;
    /// Through the index that picks an item out of a collection (`shards[rank]`,
    /// `state_dict_list[dp_rank]`, `groups[stage_index]`, `DTYPES[os.environ[...]]`): each
    /// rank takes its own item, and the item itself differs (a per-rank count, a per-node
    /// dtype), but what is then *read of it* (an attribute, a method's result: the size of
    /// the rank's shard, the type of its checkpoint, the size of its group) is not shown to
    /// differ; such a read turns the reason into an [`OBJECT`] one. A slice (`x[rank::world]`)
    /// is not a pick: its length follows from the bounds.
    pub const PICKED: u8 = 8;
    /// Through an `except` clause that catches only exceptions signalling the program's
    /// structure (`except (TypeError, NotImplementedError)` around `len(loader)`): every rank
    /// runs the same code on the same types, so the handler is not shown to run on some ranks
    /// only ([`crate::values::classify::structural_handler`]).
    pub const STRUCTURAL: u8 = 16;
    /// Through the leaves of a copy that keeps the containers: a broadcast source keeps its
    /// own value while the others receive `tree_map_only(torch.Tensor, f, value)` of it. The
    /// keys, lengths and emptiness of the containers agree across ranks; the type and contents
    /// of a leaf do not ([`condition::container_test`]).
    pub const LEAVES: u8 = 32;
    /// The bits that make a reason indirect: shown to reach the value's surroundings, not
    /// shown to decide the value itself.
    pub const INDIRECT: u8 = CONTAINER | OBJECT | STRUCTURAL;
}

impl Reason {
    fn evidence(&self) -> String {
        let hops: Vec<&str> = if self.hops.len() > MAX_SHOWN_HOPS {
            let mut kept: Vec<&str> =
                self.hops[..MAX_SHOWN_HOPS - 1].iter().map(String::as_str).collect();
            kept.push("…");
            kept.push(self.hops.last().map_or("", String::as_str));
            kept
        } else {
            self.hops.iter().map(String::as_str).collect()
        };
        if hops.is_empty() {
            self.origin.clone()
        } else {
            format!("{} ← {}", hops.join(" ← "), self.origin)
        }
    }
}

/// Merges `other_only` into `only`: the parameters of `params` (`other_params`) reached only
/// one way (through structure tests, indirect steps, reads). A parameter stays when neither
/// side reaches it otherwise. (Merging runs for every expression followed: nothing to do, and
/// nothing to allocate, when neither side has any.)
fn merge_only(
    only: &mut Vec<String>,
    params: &[String],
    other_only: Vec<String>,
    other_params: &[String],
) {
    if only.is_empty() && other_only.is_empty() {
        return;
    }
    let otherwise = |params: &[String], only: &[String]| -> Vec<String> {
        params.iter().filter(|p| !only.contains(p)).cloned().collect()
    };
    let mut reached = otherwise(params, only);
    reached.extend(otherwise(other_params, &other_only));
    for p in other_only {
        if !only.contains(&p) {
            only.push(p);
        }
    }
    only.retain(|p| !reached.contains(p));
}

/// What a value depends on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Deps {
    /// At most one per kind (and per [`Reason::key_param`]): the first found is the most
    /// direct.
    pub reasons: Vec<Reason>,
    /// Parameters of the function the value flows from: the caller decides them.
    pub params: Vec<String>,
    /// Parameters whose *length* the value flows from (a counter over a parameter); in the
    /// size and dtype following of `sites::metadata`, parameters whose own size (dtype) the
    /// tensor has.
    pub length_params: Vec<String>,
    /// The parameters of `params` reached only through tests of a value's structure
    /// (`p is None`, `isinstance(item, T)` for an item of `p`): what the caller passes decides
    /// only through the structure rule ([`condition::structural`]).
    pub structure_only: Vec<String>,
    /// The parameters of `params` reached only through indirect steps ([`via::INDIRECT`]: a
    /// container's writes, a field of a held object): what the caller passes reaches the
    /// value indirectly too.
    pub indirect_params: Vec<String>,
    /// The parameters of `params` reached only through reads of what they hold (an attribute,
    /// a method, an item under a fixed key): an item a caller picked by the rank reaches the
    /// value only indirectly ([`Deps::read_of`]).
    pub read_params: Vec<String>,
    /// The parameters of `read_params` reached only through a plain attribute of what they
    /// hold (`p.requires_grad`, `item.world_size`; not a method call or an item under a key).
    pub field_params: Vec<String>,
    /// The parameters of `read_params` reached only through items under keys written out
    /// (`state["iter_num"]`), and those keys: a caller that passes a dict written out with
    /// those keys decides the value through those entries only.
    pub keyed_params: Vec<String>,
    /// The (parameter, key) pairs of those reads.
    pub keys: Vec<(String, String)>,
    /// The (parameter, attribute) pairs of plain attribute reads of a parameter itself
    /// (`engine.global_rank` in `def save(engine)`): for a parameter of `field_params`, the
    /// caller decides through those attributes of what it passes, which its own context can
    /// resolve (an engine a framework factory returned: a rank property of the table).
    pub members: Vec<(String, String)>,
    /// Something that was not followed, when nothing more specific was found.
    pub opaque: Option<String>,
    /// Consensus the value went through ("`t` agreed by `dist.all_reduce(t)` at line 12").
    pub agreed: Vec<String>,
    /// Configuration reads, assumed the same on every rank.
    pub config: Vec<String>,
    /// The parameters of `params` whose *values* reach the value through an operation that
    /// computes its result from a tensor's contents (`torch.bincount(p)`, `h[p]` with a mask
    /// `p`, `p.sum()`): a source shown to reach only what a caller's container holds
    /// ([`via::CONTAINER`]) decides such a value directly ([`Deps::valued`]).
    pub valued_params: Vec<String>,
    /// Parameters of the class's `__init__` that a field of `self` read here was assigned
    /// from (`self.rank = rank`, then `return self.rank == 0`): what the object was built with
    /// decides them, a call through an object built in view (`engine = Engine(rank=...)`,
    /// `engine.leads()`) by what its constructor call passed ([`Eval::substitute`]).
    pub ctor_fields: Vec<String>,
}

impl Deps {
    pub(crate) fn reason(kind: DependenceKind, origin: String) -> Deps {
        Deps {
            reasons: vec![Reason {
                kind,
                origin,
                hops: Vec::new(),
                groups: Vec::new(),
                via: 0,
                key_param: None,
            }],
            ..Deps::default()
        }
    }

    /// The rank within process group `group` (as written).
    pub(crate) fn rank_within(origin: String, group: String) -> Deps {
        let mut d = Deps::reason(DependenceKind::RankId, origin);
        d.reasons[0].groups = vec![group];
        d
    }

    pub(crate) fn opaque(evidence: String) -> Deps {
        Deps { opaque: Some(evidence), ..Deps::default() }
    }

    pub(crate) fn param(name: &str) -> Deps {
        Deps { params: vec![name.to_owned()], ..Deps::default() }
    }

    pub(crate) fn length_param(name: &str) -> Deps {
        Deps { length_params: vec![name.to_owned()], ..Deps::default() }
    }

    pub(crate) fn merge(&mut self, other: Deps) {
        // A parameter stays structure-only (indirect, read-only) when neither side reaches it
        // otherwise.
        merge_only(&mut self.structure_only, &self.params, other.structure_only, &other.params);
        merge_only(&mut self.indirect_params, &self.params, other.indirect_params, &other.params);
        merge_only(&mut self.read_params, &self.params, other.read_params, &other.params);
        merge_only(&mut self.field_params, &self.params, other.field_params, &other.params);
        merge_only(&mut self.keyed_params, &self.params, other.keyed_params, &other.params);
        for k in other.keys {
            if !self.keys.contains(&k) {
                self.keys.push(k);
            }
        }
        for m in other.members {
            if !self.members.contains(&m) {
                self.members.push(m);
            }
        }
        for r in other.reasons {
            // (An environment read named by a parameter stays apart until a call names it.)
            match self.reasons.iter_mut().find(|x| x.kind == r.kind && x.key_param == r.key_param) {
                // One reason per kind is shown: the first found, unless a later one reaches
                // the value more directly. It is the rank within each group met, or the world
                // rank once a world rank is met.
                Some(x) => {
                    let groups = merge_groups(&x.groups, &r.groups);
                    if x.via & via::INDIRECT != 0 && r.via & via::INDIRECT == 0 {
                        *x = r;
                    }
                    x.groups = groups;
                }
                None => self.reasons.push(r),
            }
        }
        for p in other.params {
            if !self.params.contains(&p) {
                self.params.push(p);
            }
        }
        for p in other.length_params {
            if !self.length_params.contains(&p) {
                self.length_params.push(p);
            }
        }
        if self.opaque.is_none() {
            self.opaque = other.opaque;
        }
        for a in other.agreed {
            if !self.agreed.contains(&a) && self.agreed.len() < 4 {
                self.agreed.push(a);
            }
        }
        for c in other.config {
            if !self.config.contains(&c) && self.config.len() < 4 {
                self.config.push(c);
            }
        }
        for f in other.ctor_fields {
            if !self.ctor_fields.contains(&f) {
                self.ctor_fields.push(f);
            }
        }
        // Reached through a value computation one way is enough: that way the contents decide.
        for p in other.valued_params {
            if !self.valued_params.contains(&p) {
                self.valued_params.push(p);
            }
        }
    }

    /// The same dependence reached through `bits` of [`via`] as well.
    pub(crate) fn through(mut self, bits: u8) -> Deps {
        for r in &mut self.reasons {
            r.via |= bits;
        }
        if bits & via::INDIRECT != 0 {
            self.indirect_params.clone_from(&self.params);
        }
        if bits & via::CONTAINER != 0 {
            // A computed value written into a container: only the container's contents again.
            self.valued_params.clear();
        }
        self
    }

    /// What an operation that computes its result from its operand's *contents* depends on
    /// (a count per value, a selection by a mask, a reduction, a sort: the knowledge table's
    /// `value_computations`, and indexing by a tensor). What reaches only the contents of the
    /// operand ([`via::CONTAINER`]: the rows a rank's loader appended, a mask made from them)
    /// decides the result: its values, and for a count or a selection its size. What the
    /// operand's parameters are passed is read the same way.
    pub(crate) fn valued(mut self) -> Deps {
        for r in &mut self.reasons {
            r.via &= !via::CONTAINER;
        }
        self.valued_params.clone_from(&self.params);
        self
    }

    /// What reading an attribute of the value, or calling one of its methods, depends on: a
    /// source that only picked which item the value is ([`via::PICKED`]) reaches the read
    /// indirectly.
    pub(crate) fn read_of(mut self) -> Deps {
        for r in &mut self.reasons {
            if r.via & via::PICKED != 0 {
                r.via |= via::OBJECT;
            }
        }
        // What a caller passes is read the same way.
        self.read_params.clone_from(&self.params);
        self
    }

    /// What reading the item under the key written out `key` depends on: a read
    /// ([`Deps::read_of`]) whose parameters are marked as read under that key.
    pub(crate) fn entry_of(self, key: &str) -> Deps {
        // `state["a"]["b"]`: `state` stays read under "a" (entry "a" holds what "b" reads);
        // `cfg.train["steps"]` reads an attribute of `cfg` first: read, not keyed.
        let keyed = self.keyed_params.clone();
        let read = self.read_params.clone();
        let mut d = self.read_of();
        d.keys.retain(|(p, _)| keyed.contains(p));
        d.keyed_params = keyed;
        for p in &d.params {
            if !read.contains(p) {
                d.keys.push((p.clone(), key.to_owned()));
                d.keyed_params.push(p.clone());
            }
        }
        d
    }

    /// The attributes a parameter of `field_params` is read by; empty for any other
    /// parameter (one reached otherwise too is decided by more than those reads).
    pub(crate) fn members_of(&self, p: &str) -> Vec<String> {
        if !self.field_params.iter().any(|f| f == p) {
            return Vec::new();
        }
        self.members.iter().filter(|(q, _)| q == p).map(|(_, a)| a.clone()).collect()
    }

    /// The keys a parameter of `keyed_params` is read under; empty for any other parameter.
    pub(crate) fn keys_of(&self, p: &str) -> Vec<String> {
        if !self.keyed_params.iter().any(|k| k == p) {
            return Vec::new();
        }
        self.keys.iter().filter(|(q, _)| q == p).map(|(_, k)| k.clone()).collect()
    }

    /// What reading a plain attribute of the value depends on: a read ([`Deps::read_of`])
    /// whose parameters are marked as read by field.
    pub(crate) fn field_of(self) -> Deps {
        let mut d = self.read_of();
        d.field_params.clone_from(&d.params);
        d
    }

    /// The same dependence seen one step further out (`hop` describes the step).
    pub(crate) fn hop(mut self, hop: &str) -> Deps {
        for r in &mut self.reasons {
            r.hops.insert(0, hop.to_owned());
        }
        if let Some(o) = &mut self.opaque {
            *o = format!("{hop} ← {o}");
        }
        self
    }

    /// The public form: one [`Dependence`] per kind, or a lone `Unknown` when only opaque
    /// parts were seen.
    pub(crate) fn to_public(&self) -> Vec<Dependence> {
        let mut out: Vec<Dependence> = self
            .reasons
            .iter()
            .map(|r| Dependence {
                kind: r.kind,
                evidence: r.evidence(),
                groups: r.groups.clone(),
                indirect: r.via & via::INDIRECT != 0,
                guessed: false,
            })
            .collect();
        out.sort_by_key(|d| d.kind);
        if out.is_empty()
            && let Some(o) = self.opaque.clone().or_else(|| {
                self.params
                    .first()
                    .map(|p| format!("`{p}` (a parameter: the caller decides)"))
                    .or_else(|| {
                        self.length_params.first().map(|p| {
                            format!("the length of `{p}` (a parameter: the caller decides)")
                        })
                    })
            })
        {
            out.push(Dependence::new(DependenceKind::Unknown, o));
        }
        out
    }
}

/// The process-group argument of a call, as written: `group=` (or `process_group=`, `pg=`), else
/// the positional argument at `position` (the table's `group_arg`); `None` for the world
/// (`group=None`, or not passed).
pub(crate) fn group_argument(call: &ExprCall, position: Option<usize>) -> Option<&Expr> {
    let keyword = call.arguments.keywords.iter().find(|k| {
        k.arg.as_ref().is_some_and(|a| matches!(a.id.as_str(), "group" | "process_group" | "pg"))
    });
    keyword
        .map(|k| &k.value)
        .or_else(|| {
            position
                .and_then(|i| call.arguments.args.get(i))
                .filter(|a| !matches!(a, Expr::Starred(_)))
        })
        .filter(|g| !matches!(g, Expr::NoneLiteral(_)))
}

/// How a group along axes of the table's grid of ranks is named among a rank's groups
/// ([`Dependence::groups`](crate::Dependence)): a text no source can spell, so it never
/// matches a group as written.
pub fn grid_group(axes: &[String]) -> String {
    format!("<grid axes {}>", axes.join(" "))
}

/// The axes of a group named by [`grid_group`]; `None` for a group as written.
pub fn grid_axes(group: &str) -> Option<Vec<&str>> {
    let axes = group.strip_prefix("<grid axes ")?.strip_suffix('>')?;
    Some(axes.split(' ').filter(|a| !a.is_empty()).collect())
}

/// The process groups a rank id met in one value is a rank within: the union of both sides',
/// or none (the world rank) when either side is the world rank.
pub fn merge_groups(a: &[String], b: &[String]) -> Vec<String> {
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    let mut out = a.to_vec();
    out.extend(b.iter().filter(|g| !a.contains(g)).cloned());
    out
}

/// A value, with its elements when it is a tuple whose parts are known apart
/// (`return rank, world`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Value {
    pub whole: Deps,
    pub elements: Option<Vec<Deps>>,
    /// An object built by the project's own class (`DistContext(rank, world_size)`), field by
    /// field, so `ctx.world_size` does not inherit what `ctx.rank` depends on.
    pub fields: Option<Vec<(String, Deps)>>,
}

impl Value {
    pub(crate) fn of(whole: Deps) -> Value {
        Value { whole, elements: None, fields: None }
    }

    pub(crate) fn field(&self, name: &str) -> Option<Deps> {
        self.fields.as_ref()?.iter().find(|(n, _)| n == name).map(|(_, d)| d.clone())
    }

    pub(crate) fn element(&self, i: usize) -> Deps {
        match &self.elements {
            Some(elements) => elements.get(i).cloned().unwrap_or_default(),
            None => self.whole.clone(),
        }
    }

    pub(crate) fn merge(&mut self, other: Value) {
        self.elements = match (self.elements.take(), other.elements) {
            (Some(mut a), Some(b)) if a.len() == b.len() => {
                for (x, y) in a.iter_mut().zip(b) {
                    x.merge(y);
                }
                Some(a)
            }
            _ => None,
        };
        self.fields = match (self.fields.take(), other.fields) {
            (Some(mut a), Some(b)) => {
                for (name, d) in b {
                    match a.iter_mut().find(|(n, _)| *n == name) {
                        Some((_, x)) => x.merge(d),
                        None => a.push((name, d)),
                    }
                }
                Some(a)
            }
            _ => None,
        };
        self.whole.merge(other.whole);
    }

    pub(crate) fn hop(self, hop: &str) -> Value {
        self.map(|d| d.hop(hop))
    }

    /// Adds what decides the whole value (the test an assignment sits under, a write into
    /// one of its parts) to every field and element as well.
    pub(crate) fn merge_everywhere(&mut self, d: Deps) {
        for (_, field) in self.fields.iter_mut().flatten() {
            field.merge(d.clone());
        }
        for element in self.elements.iter_mut().flatten() {
            element.merge(d.clone());
        }
        self.whole.merge(d);
    }

    /// The same transformation applied to the whole, each element and each field.
    pub(crate) fn map(self, mut f: impl FnMut(Deps) -> Deps) -> Value {
        Value {
            whole: f(self.whole),
            elements: self.elements.map(|es| es.into_iter().map(&mut f).collect()),
            fields: self.fields.map(|fs| fs.into_iter().map(|(n, d)| (n, f(d))).collect()),
        }
    }
}

/// Identifies a module for caches: its address while the analysis holds it.
pub(crate) type ModuleKey = usize;

pub(crate) fn key_of(module: &Module) -> ModuleKey {
    std::ptr::from_ref(module) as usize
}

/// One analysis: the project it may look into and what it learned so far (function
/// summaries, followed bindings). Build one per report or per linted file; it is cheap.
pub struct Analysis<'p> {
    pub(crate) project: Option<&'p dyn Project>,
    /// Modules loaded through the project, kept alive so their keys stay valid.
    pub(crate) loaded: RefCell<Vec<Arc<Module>>>,
    pub(crate) summaries: RefCell<HashMap<(ModuleKey, TextSize), Rc<Summary>>>,
    pub(crate) in_progress: RefCell<HashSet<(ModuleKey, TextSize)>>,
    pub(crate) memo: RefCell<HashMap<(ModuleKey, TextSize, String, usize), Value>>,
    /// What a member of a project class resolves to, by (module, `class` statement, name);
    /// `None` while it is being resolved (a cycle resolves to unknown). Resolving a member
    /// follows the assignments `self.name = ...` in every method, which resolve further
    /// members: without the memo a file with many classes that refer to each other took
    /// exponential time.
    pub(crate) members: RefCell<HashMap<(ModuleKey, TextSize, String), Option<resolve::Sym>>>,
    /// What the methods of a project class assign to `self.<name>` depends on, by (module,
    /// `class` statement, name), with whether any method assigns it: every read of
    /// `self.name` in a 4,000-line class re-walked all its methods (transformers' `Trainer`
    /// took minutes).
    /// The last key is `true` for the lengths of what is assigned (`self.loader`'s length).
    pub(crate) attributes: RefCell<HashMap<AttributeKey, (Deps, bool)>>,
    /// What each name an import statement binds resolves to, by (module, statement) and
    /// name: every `torch.zeros(...)` of a file resolved `torch` through the project's
    /// imports and the table again.
    pub(crate) imports: RefCell<HashMap<(ModuleKey, TextSize), ImportedNames>>,
}

/// The names one import statement binds, each with what it resolves to.
pub(crate) type ImportedNames = Vec<(Box<str>, resolve::Sym)>;

/// (module, `class` statement, attribute name, whether its length is asked).
pub(crate) type AttributeKey = (ModuleKey, TextSize, String, bool);

impl std::fmt::Debug for Analysis<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analysis")
            .field("summaries", &self.summaries.borrow().len())
            .finish_non_exhaustive()
    }
}

impl Default for Analysis<'_> {
    fn default() -> Self {
        Analysis::new(None)
    }
}

/// What [`Analysis::dependence`] found out about one expression.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Finding {
    /// Why the value can differ across ranks, one item per kind (a lone `Unknown` when only
    /// opaque parts were found); empty when it is the same on every rank.
    pub dependence: Vec<Dependence>,
    /// Parameters of the enclosing function the value flows from (their callers decide).
    pub parameters: Vec<String>,
    /// The `parameters` the value reaches only through a test of its structure (`p is None`,
    /// `isinstance(p, T)`): a caller's rank-local *data* decides nothing there.
    pub structure_parameters: Vec<String>,
    /// The `parameters` the value reaches only indirectly (through a container's writes or a
    /// held object's fields): what a caller passes for them is indirect evidence.
    pub indirect_parameters: Vec<String>,
    /// The `parameters` the value reaches only through reads of what they hold
    /// (`p.size()`, `p["key"]`): an item a caller picked by the rank reaches it indirectly.
    pub read_parameters: Vec<String>,
    /// The `read_parameters` read only by a plain attribute (`p.requires_grad`).
    pub field_parameters: Vec<String>,
    /// Parameters whose length the value counts.
    pub length_parameters: Vec<String>,
    /// The `field_parameters` with the attributes read of them (`engine.global_rank` in
    /// `def save(engine)`): a caller decides through those attributes of what it passes
    /// ([`Analysis::through_caller`]).
    pub member_reads: Vec<(String, Vec<String>)>,
    /// The `read_parameters` the value reaches only through items under keys written out
    /// (`p["iter_num"]`), with those keys: a caller decides through those entries.
    pub keyed_parameters: Vec<(String, Vec<String>)>,
    /// Consensus seen on the way (the value was agreed across ranks there).
    pub agreed: Vec<String>,
    /// Configuration reads, assumed the same on every rank.
    pub configuration: Vec<String>,
    /// Whether every part of the expression was followed to its end: an empty
    /// `dependence` then means "the same on every rank", not "unknown".
    pub complete: bool,
}

impl Finding {
    pub(crate) fn from_deps(deps: &Deps) -> Finding {
        Finding {
            dependence: deps.to_public(),
            parameters: deps.params.clone(),
            structure_parameters: deps.structure_only.clone(),
            indirect_parameters: deps.indirect_params.clone(),
            read_parameters: deps.read_params.clone(),
            field_parameters: deps.field_params.clone(),
            keyed_parameters: deps
                .keyed_params
                .iter()
                .map(|p| (p.clone(), deps.keys_of(p)))
                .filter(|(_, keys)| !keys.is_empty())
                .collect(),
            length_parameters: deps.length_params.clone(),
            member_reads: deps
                .params
                .iter()
                .map(|p| (p.clone(), deps.members_of(p)))
                .filter(|(_, attributes)| !attributes.is_empty())
                .collect(),
            agreed: deps.agreed.clone(),
            configuration: deps.config.clone(),
            complete: deps.opaque.is_none()
                && deps.params.is_empty()
                && deps.length_params.is_empty(),
        }
    }

    /// True when a reason other than `Unknown` was shown.
    pub fn is_shown(&self) -> bool {
        self.dependence.iter().any(|d| d.kind != DependenceKind::Unknown)
    }
}

impl<'p> Analysis<'p> {
    pub fn new(project: Option<&'p dyn Project>) -> Self {
        Analysis {
            project,
            loaded: RefCell::default(),
            summaries: RefCell::default(),
            in_progress: RefCell::default(),
            memo: RefCell::default(),
            members: RefCell::default(),
            attributes: RefCell::default(),
            imports: RefCell::default(),
        }
    }

    /// Why the value of `expr_source`, written at 1-based `line` of `module`, can differ
    /// across ranks. Names are read as they are bound at the start of that line; a line inside
    /// an `except` body adds a caught exception.
    pub fn dependence(&self, module: &Module, line: u32, expr_source: &str) -> Finding {
        let deps = self.parsed(module, line, expr_source, |e, expr, at| e.value(expr, at).whole);
        Finding::from_deps(&deps)
    }

    /// Whether the `try` statement starting on `line` of `module` only probes the environment
    /// the job runs in (imports, the node type: [`value::Eval::probes_environment`]): its
    /// handlers then run on every rank or on none.
    pub fn probes_environment(&self, module: &Module, line: u32) -> bool {
        let Some(path) = module.path(line) else { return false };
        let Stmt::Try(t) = path.leaf() else { return false };
        value::Eval::new(self, module, Scope::at(module, line), 0).probes_environment(&t.body)
    }

    /// Whether the `try` at `line` opens with a poll of a queue (`item = q.get(timeout=1)`,
    /// the table's `poll_timeouts`) and polls nowhere else in its body: what a handler of the
    /// poll's "nothing came" class catches was raised by that first statement, before anything
    /// else in the `try` ran.
    pub fn opens_with_the_only_poll(&self, module: &Module, line: u32) -> bool {
        let Some(path) = module.path(line) else { return false };
        let Stmt::Try(t) = path.leaf() else { return false };
        let polls = |c: &ruff_python_ast::ExprCall| match &*c.func {
            Expr::Attribute(a) => crate::names::knowledge::knowledge().polls(
                a.attr.as_str(),
                c.arguments
                    .keywords
                    .iter()
                    .filter_map(|k| k.arg.as_ref().map(ruff_python_ast::Identifier::as_str)),
            ),
            _ => false,
        };
        let opens = match t.body.first() {
            Some(Stmt::Assign(a)) => matches!(&*a.value, Expr::Call(c) if polls(c)),
            Some(Stmt::AnnAssign(a)) => {
                matches!(a.value.as_deref(), Some(Expr::Call(c)) if polls(c))
            }
            Some(Stmt::Expr(e)) => matches!(&*e.value, Expr::Call(c) if polls(c)),
            _ => false,
        };
        let mut count = 0usize;
        crate::syntax::tree::walk_scope(&t.body, &mut |stmt, _| {
            for e in crate::syntax::tree::header_exprs(stmt) {
                crate::syntax::expr::walk(e, &mut |x| {
                    if let Expr::Call(c) = x
                        && polls(c)
                    {
                        count += 1;
                    }
                });
            }
        });
        opens && count == 1
    }

    /// Whether the statement `stmt` of `module` is a call that leaves `name` identical on every
    /// rank in place (`dist.broadcast_object_list(name, src=0)`, a project helper that agrees
    /// its first argument): what `name` held before it no longer decides anything.
    pub fn agrees_in_place(&self, module: &Module, stmt: &Stmt, name: &str) -> bool {
        let Stmt::Expr(s) = stmt else { return false };
        let Expr::Call(c) = crate::names::bindings::awaited(&s.value) else { return false };
        let line = module.line_of(stmt.start());
        let mut eval = value::Eval::new(self, module, Scope::at(module, line), 0);
        let forwarded = eval.forwarded(c);
        let c = forwarded.as_ref().unwrap_or(c);
        eval.call_agrees(c, name)
    }

    /// Whether `value`, standing in `module`, is a progress wrapper the table knows
    /// (`tqdm(xs, disable=not is_main, desc=...)`, role `progress`) around the name `name`
    /// itself: it yields `name`'s items in their order, so rebinding `name` to it on some
    /// ranks reorders nothing those ranks walk.
    pub fn yields_items_of(&self, module: &Module, value: &Expr, name: &str) -> bool {
        let Expr::Call(c) = value else { return false };
        let iterable = c
            .arguments
            .args
            .first()
            .or_else(|| c.arguments.find_keyword("iterable").map(|k| &k.value));
        if !matches!(iterable, Some(Expr::Name(n)) if n.id.as_str() == name) {
            return false;
        }
        let line = module.line_of(c.start());
        let mut eval = value::Eval::new(self, module, Scope::at(module, line), 0);
        matches!(eval.resolve(&c.func, c.start()), Sym::Path(p)
            if crate::names::knowledge::knowledge()
                .api(&p)
                .is_some_and(|api| api.role == crate::names::knowledge::Role::Progress))
    }

    /// Whether, in the innermost `try` whose body holds `line` of `module` (a collective's
    /// line), nothing before that line can raise on some ranks only
    /// ([`value::Eval::nothing_raises_before`]): what its handlers catch there is the
    /// collective's own failure. False when no `try` body holds the line.
    pub fn nothing_raises_before(&self, module: &Module, line: u32) -> bool {
        let Some(path) = module.path(line) else { return false };
        let Some(level) = path.levels.iter().rev().find(|l| {
            l.slot == crate::syntax::tree::Slot::Body && matches!(l.owner, Some(Stmt::Try(_)))
        }) else {
            return false;
        };
        value::Eval::new(self, module, Scope::at(module, line), 0)
            .nothing_raises_before(level.suite, line)
    }

    /// The operands of the `or` that the test `test_source` at `line` of `module` is, or that
    /// the name it is was bound to by its only binding in the function (`takes_part = is_main
    /// or self.spread_eval` before `if takes_part:`), each as its source text without a
    /// leading `not` and whether that `not` was written. Only operands that read the same
    /// wherever they are written are given: names and attribute reads of names, which the
    /// function never rebinds (a call or a name bound again between the two lines could
    /// answer otherwise at the test). Empty when the test is no such `or`.
    pub fn disjuncts(&self, module: &Module, line: u32, test_source: &str) -> Vec<(String, bool)> {
        let scope = Scope::at(module, line);
        let parsed = parse_unchecked(test_source.trim(), ParseOptions::from(Mode::Expression));
        let Mod::Expression(expr) = parsed.into_syntax() else { return Vec::new() };
        // Operands are quoted from the test as given, or from the module for a binding's.
        let written = test_source.trim();
        let (or, text): (_, &dyn Fn(TextRange) -> String) = match &*expr.body {
            Expr::BoolOp(o) => (o, &|r: TextRange| written[r].to_owned()),
            Expr::Name(n) if scope.function.is_some() => {
                match &crate::names::bindings::bindings(module, scope, n.id.as_str())[..] {
                    [b] => match b.source {
                        crate::names::bindings::Source::Value(Expr::BoolOp(o))
                            if module.line_of(b.at) < line =>
                        {
                            (o, &|r: TextRange| module.text(r).to_owned())
                        }
                        _ => return Vec::new(),
                    },
                    _ => return Vec::new(),
                }
            }
            _ => return Vec::new(),
        };
        if or.op != ruff_python_ast::BoolOp::Or {
            return Vec::new();
        }
        // A name the function binds once or never (a parameter, `self`, a global).
        let fixed = |e: &Expr| {
            let mut root = e;
            while let Expr::Attribute(a) = root {
                root = &a.value;
            }
            matches!(root, Expr::Name(n)
                if crate::names::bindings::bindings(module, scope, n.id.as_str()).len() <= 1)
        };
        or.values
            .iter()
            .filter_map(|v| match v {
                Expr::UnaryOp(u) if u.op == ruff_python_ast::UnaryOp::Not => {
                    fixed(&u.operand).then(|| (text(u.operand.range()), true))
                }
                e => fixed(e).then(|| (text(e.range()), false)),
            })
            .collect()
    }

    /// Whether the test `test_source` at `line` of `module` answers the same wherever the
    /// function around it evaluates it: it reads only literals, names the function binds at
    /// most once (a parameter, `self`) and attribute reads of them that the function never
    /// assigns, through comparisons, `not`, `and`/`or` — no call, no item. Two `if`s with such
    /// a test (`if dp_group is not None:` before each reduction) then take the same clause on
    /// one path.
    pub fn steady_test(&self, module: &Module, line: u32, test_source: &str) -> bool {
        fn steady<'e>(
            e: &Expr,
            written: &'e str,
            attributes: &mut Vec<&'e str>,
            once: &dyn Fn(&str) -> bool,
        ) -> bool {
            match e {
                Expr::NumberLiteral(_)
                | Expr::StringLiteral(_)
                | Expr::BooleanLiteral(_)
                | Expr::NoneLiteral(_) => true,
                Expr::Name(n) => once(n.id.as_str()),
                Expr::Attribute(a) => {
                    attributes.push(&written[a.range()]);
                    steady(&a.value, written, attributes, once)
                }
                Expr::UnaryOp(u) if u.op == ruff_python_ast::UnaryOp::Not => {
                    steady(&u.operand, written, attributes, once)
                }
                Expr::BoolOp(b) => b.values.iter().all(|v| steady(v, written, attributes, once)),
                Expr::Compare(c) => {
                    steady(&c.left, written, attributes, once)
                        && c.comparators.iter().all(|v| steady(v, written, attributes, once))
                }
                _ => false,
            }
        }
        let scope = Scope::at(module, line);
        let Some(def) = scope.function else { return false };
        let parsed = parse_unchecked(test_source.trim(), ParseOptions::from(Mode::Expression));
        let Mod::Expression(expr) = parsed.into_syntax() else { return false };
        let written = test_source.trim();
        let mut attributes: Vec<&str> = Vec::new();
        let once = |name: &str| crate::names::bindings::bindings(module, scope, name).len() <= 1;
        if !steady(&expr.body, written, &mut attributes, &once) {
            return false;
        }
        // No `self.x = ...` (nor `+=`) of a field the test reads, anywhere in the function.
        let mut assigned = false;
        crate::syntax::tree::walk_scope(&def.body, &mut |stmt, _| {
            let targets: Vec<&Expr> = match stmt {
                Stmt::Assign(a) => a.targets.iter().collect(),
                Stmt::AugAssign(a) => vec![&*a.target],
                Stmt::AnnAssign(a) => vec![&*a.target],
                _ => Vec::new(),
            };
            for t in targets {
                crate::syntax::expr::walk(t, &mut |x| {
                    if let Expr::Attribute(_) = x
                        && attributes.contains(&module.text(x.range()))
                    {
                        assigned = true;
                    }
                });
            }
        });
        !assigned
    }

    /// Why the *structure* of `expr_source` at `line` (whether it is `None`, its type) can
    /// differ across ranks: only through a choice between assignments or returns, or the
    /// environment (see `condition::structure`). What a caller passes for a parameter tested
    /// `p is None` is judged this way.
    pub fn structure_dependence(&self, module: &Module, line: u32, expr_source: &str) -> Finding {
        let deps = self.parsed(module, line, expr_source, condition::structure);
        Finding::from_deps(&deps)
    }

    /// What a read of what `expr_source` holds (an attribute, a method, an item under a fixed
    /// key) depends on: [`Analysis::dependence`] with an item picked by the rank reaching the
    /// read indirectly. What a caller passes for a parameter read that way is judged this way.
    pub fn read_dependence(&self, module: &Module, line: u32, expr_source: &str) -> Finding {
        let deps =
            self.parsed(module, line, expr_source, |e, expr, at| e.value(expr, at).whole.read_of());
        Finding::from_deps(&deps)
    }

    /// What a read of a plain attribute of what `expr_source` holds depends on
    /// ([`Analysis::read_dependence`], the parameters marked as read by field).
    pub fn field_dependence(&self, module: &Module, line: u32, expr_source: &str) -> Finding {
        let deps = self
            .parsed(module, line, expr_source, |e, expr, at| e.value(expr, at).whole.field_of());
        Finding::from_deps(&deps)
    }

    /// Why the *number of items* of the iterable `expr_source` at `line` can differ across
    /// ranks (`range(steps)`: only if `steps` can; a `DistributedSampler`: never).
    pub fn length_dependence(&self, module: &Module, line: u32, expr_source: &str) -> Finding {
        // A closure, not the method path: the evaluator's lifetimes must stay generic here.
        #[allow(clippy::redundant_closure_for_method_calls)]
        let deps = self.parsed(module, line, expr_source, |e, expr, at| e.length(expr, at));
        Finding::from_deps(&deps)
    }

    /// The dependence of an expression node of `module` itself.
    pub(crate) fn dependence_of(&self, module: &Module, expr: &Expr, at: TextSize) -> Deps {
        let scope = Scope::at(module, module.line_of(at));
        value::Eval::new(self, module, scope, 0).value(expr, at).whole
    }

    /// The length dependence of an iterable node of `module`.
    pub(crate) fn length_of(&self, module: &Module, expr: &Expr, at: TextSize) -> Deps {
        let scope = Scope::at(module, module.line_of(at));
        value::Eval::new(self, module, scope, 0).length(expr, at)
    }

    /// The qualified name a callee or attribute at `line` resolves to
    /// (`dist.all_reduce` → `torch.distributed.all_reduce`), through imports, class bases
    /// and the table's attribute types.
    pub fn qualified_name(&self, module: &Module, line: u32, expr_source: &str) -> Option<String> {
        let mut out = None;
        self.parsed(module, line, expr_source, |e, expr, at| {
            if let Sym::Path(p) = e.resolve(expr, at) {
                out = Some(p);
            }
            Deps::default()
        });
        out
    }

    /// Parses `expr_source` as an expression standing at `line` and runs `f` on it.
    pub(crate) fn parsed(
        &self,
        module: &Module,
        line: u32,
        expr_source: &str,
        f: impl FnOnce(&mut value::Eval<'_, '_>, &Expr, TextSize) -> Deps,
    ) -> Deps {
        if expr_source.trim().is_empty() {
            return Deps::default();
        }
        let end = TextSize::try_from(module.source().len()).unwrap_or_default();
        let at = module.line_range(line).map_or(end, TextRange::start);
        let scope = Scope::at(module, line);
        let mut eval = value::Eval::new(self, module, scope, 0);
        // Parsed where it is written when the text stands there, so that its nodes quote
        // themselves from the module like every node the evidence reaches from them; else
        // parsed alone, its nodes quoted from the text.
        let written = written_at(module, at, expr_source)
            .and_then(|range| parse_expression_range(module.source(), range).ok());
        let mut deps = if let Some(parsed) = written {
            f(&mut eval, parsed.expr(), at)
        } else {
            let parsed = parse_unchecked(expr_source, ParseOptions::from(Mode::Expression));
            let Mod::Expression(expr) = parsed.into_syntax() else { return Deps::default() };
            eval.foreign = Some(expr_source.to_owned());
            f(&mut eval, &expr.body, at)
        };
        if let Some((evidence, structural, tried)) =
            crate::values::classify::enclosing_handler_of(module, line)
            && !eval.probes_environment(tried)
        {
            let reason = Deps::reason(DependenceKind::Exception, evidence);
            deps.merge(if structural { reason.through(via::STRUCTURAL) } else { reason });
        }
        deps
    }

    /// What `params` (by value) and `length_params` (by length) of the function around
    /// `callee_line` of `callee` depend on at the call of that function at `caller_line` of
    /// `caller` (the next frame out). A parameter of `member_reads` is decided by those
    /// attributes of what the caller passes (`engine.global_rank` of the engine
    /// `deepspeed.initialize` returned there), read where the caller stands. `None` when no
    /// call of that function is on that line.
    #[allow(clippy::too_many_arguments)]
    pub fn through_caller(
        &self,
        callee: &Module,
        callee_line: u32,
        params: &[String],
        member_reads: &[(String, Vec<String>)],
        length_params: &[String],
        caller: &Module,
        caller_line: u32,
    ) -> Option<Finding> {
        let def = callee.path(callee_line)?.innermost_function(callee)?;
        let name = def.name.id.as_str();
        let is_method = resolve::class_of(callee, def).is_some();
        let parameters: Vec<String> = def
            .parameters
            .iter_non_variadic_params()
            .map(|p| p.parameter.name.id.to_string())
            .collect();
        let call = caller
            .calls_at(caller_line)
            .into_iter()
            .find(|c| crate::syntax::expr::last_segment(&c.func) == Some(name))?;
        let through_instance = is_method && matches!(&*call.func, Expr::Attribute(_));
        let scope = Scope::at(caller, caller_line);
        let mut eval = value::Eval::new(self, caller, scope, 0);
        let mut deps = Deps::default();
        let at = call.start();
        let site = format!("`{name}(…)` called at line {caller_line}");
        for p in params {
            let Some(arg) = value::argument_for(&parameters, through_instance, call, p) else {
                continue;
            };
            let passed = quote(caller.text(arg.range()));
            if let Some((_, attributes)) = member_reads.iter().find(|(q, _)| q == p) {
                for attribute in attributes {
                    let hop = format!("`{p}.{attribute}` with `{p}` = {passed} ({site})");
                    deps.merge(eval.member_read(arg, attribute, at).hop(&hop));
                }
            } else {
                let hop = format!("`{p}` = {passed} ({site})");
                deps.merge(eval.value(arg, at).whole.hop(&hop));
            }
        }
        for p in length_params {
            if let Some(arg) = value::argument_for(&parameters, through_instance, call, p) {
                let hop =
                    format!("the length of `{p}` = {} ({site})", quote(caller.text(arg.range())));
                deps.merge(eval.length(arg, at).hop(&hop));
            }
        }
        Some(Finding::from_deps(&deps))
    }

    /// Whether `expr_source` at `line` calls a project function that returns a true value only
    /// inside `if x in c:` blocks whose `x` depends on the rank id (`_is_in_embd_group()`:
    /// `if get_rank() in get_process_group_ranks(self.embd_group): ... return True`, `False`
    /// everywhere else): a call of it tests membership, as `x in c` written at the call does.
    pub fn tests_membership(&self, module: &Module, line: u32, expr_source: &str) -> bool {
        let mut helper: Option<resolve::FnRef> = None;
        self.parsed(module, line, expr_source, |e, expr, at| {
            if let Expr::Call(c) = expr
                && let Sym::Function(f) = e.resolve(&c.func, at)
            {
                helper = Some(f);
            }
            Deps::default()
        });
        let Some(f) = helper else { return false };
        let home = f.module.clone();
        let home = home.as_deref().unwrap_or(module);
        let Some(def) = resolve::def_at(home, f.def) else { return false };
        let scope = Scope { function: Some(def), suite: &def.body };
        let mut eval = value::Eval::new(self, home, scope, 0);
        let mut member_test = |test: &Expr| membership_of_rank(&mut eval, test);
        let (mut truthy, mut outside) = (false, false);
        guarded_returns(&def.body, false, &mut member_test, &mut truthy, &mut outside, 0);
        truthy && !outside
    }

    /// Whether `line` of `module` runs inside a `with` whose context manager the table says
    /// tolerates uneven iteration counts (`with model.join():`, `with Join([model]):`), in the
    /// same function.
    pub fn inside_join(&self, module: &Module, line: u32) -> bool {
        let Some(path) = module.path(line) else { return false };
        let scope = Scope::at(module, line);
        let mut eval = value::Eval::new(self, module, scope, 0);
        path.scope_levels(module).iter().any(|level| {
            let Stmt::With(w) = level.stmt() else { return false };
            w.items.iter().any(|item| {
                let manager = match &item.context_expr {
                    Expr::Call(c) => &*c.func,
                    e => e,
                };
                matches!(eval.resolve(manager, w.start()),
                    Sym::Path(p) if crate::names::knowledge::knowledge().tolerates_uneven(&p))
            })
        })
    }

    /// The project modules `module` imports (at any level of the file), as the project
    /// resolves them.
    pub fn imports(&self, module: &Module) -> Vec<Arc<Module>> {
        let Some(project) = self.project else { return Vec::new() };
        let mut out: Vec<Arc<Module>> = Vec::new();
        let mut push = |m: Option<Arc<Module>>| {
            if let Some(m) = m
                && !out.iter().any(|o| Arc::ptr_eq(o, &m))
            {
                out.push(self.keep(m));
            }
        };
        crate::syntax::tree::walk_all(module.body(), &mut |stmt| match stmt {
            ruff_python_ast::Stmt::Import(s) => {
                for alias in &s.names {
                    push(project.import(module, alias.name.id.as_str(), 0));
                }
            }
            ruff_python_ast::Stmt::ImportFrom(s) => {
                let base = s.module.as_ref().map_or("", |m| m.id.as_str());
                push(project.import(module, base, s.level));
                for alias in &s.names {
                    let sub = if base.is_empty() {
                        alias.name.id.to_string()
                    } else {
                        format!("{base}.{}", alias.name.id)
                    };
                    push(project.import(module, &sub, s.level));
                }
            }
            _ => {}
        });
        out
    }

    /// Keeps a project module alive for the analysis.
    pub(crate) fn keep(&self, module: Arc<Module>) -> Arc<Module> {
        let mut loaded = self.loaded.borrow_mut();
        if let Some(m) = loaded.iter().find(|m| Arc::ptr_eq(m, &module)) {
            return m.clone();
        }
        loaded.push(module.clone());
        module
    }

    pub(crate) fn project(&self) -> Option<&'p dyn Project> {
        self.project
    }
}

/// Source text of a node, from the module or, for an expression parsed on its own, from that
/// text.
/// Where `text` is written in `module` from `from` on (within a few lines): the expressions the
/// outline hands over are copied from the line they are asked about.
fn written_at(module: &Module, from: TextSize, text: &str) -> Option<TextRange> {
    const WINDOW: usize = 4096;
    let source = module.source();
    let start = from.to_usize();
    let mut end = source.len().min(start + WINDOW);
    while end > start && !source.is_char_boundary(end) {
        end -= 1;
    }
    let offset = source.get(start..end)?.find(text.trim())?;
    let begin = TextSize::try_from(start + offset).ok()?;
    Some(TextRange::at(begin, TextSize::try_from(text.trim().len()).ok()?))
}

pub(crate) fn node_text<'s>(
    module: &'s Module,
    foreign: Option<&'s str>,
    range: TextRange,
) -> &'s str {
    match foreign {
        Some(text) => text.get(range.start().to_usize()..range.end().to_usize()).unwrap_or(""),
        None => module.text(range),
    }
}

/// `text` as evidence: one line, cut short.
pub(crate) fn quote(text: &str) -> String {
    format!("`{}`", crate::syntax::expr::snippet(text))
}

#[cfg(test)]
mod classify_tests;
#[cfg(test)]
mod lint_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trace_tests;

/// Walks `suite` for `return`s that can give a true value (not a bare `return`, `False`,
/// `None` or `0`), noting whether any was found and whether any lies outside a block that
/// `member_test` says only members enter. Nested scopes are not entered; past
/// [`crate::syntax::tree::MAX_DEPTH`] a return is taken as outside.
fn guarded_returns(
    suite: &[Stmt],
    guarded: bool,
    member_test: &mut dyn FnMut(&Expr) -> bool,
    truthy: &mut bool,
    outside: &mut bool,
    depth: usize,
) {
    if depth >= crate::syntax::tree::MAX_DEPTH {
        *outside = true;
        return;
    }
    for stmt in suite {
        match stmt {
            Stmt::Return(r) => {
                let falsy = match r.value.as_deref() {
                    None | Some(Expr::NoneLiteral(_)) => true,
                    Some(Expr::BooleanLiteral(b)) => !b.value,
                    Some(Expr::NumberLiteral(n)) => {
                        matches!(&n.value, ruff_python_ast::Number::Int(i) if *i == 0)
                    }
                    Some(_) => false,
                };
                if !falsy {
                    *truthy = true;
                    *outside |= !guarded;
                }
            }
            Stmt::If(i) => {
                let members = guarded || member_test(&i.test);
                guarded_returns(&i.body, members, member_test, truthy, outside, depth + 1);
                for clause in &i.elif_else_clauses {
                    let members = guarded || clause.test.as_ref().is_some_and(&mut *member_test);
                    guarded_returns(&clause.body, members, member_test, truthy, outside, depth + 1);
                }
            }
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            _ => {
                for block in crate::syntax::tree::blocks(stmt) {
                    guarded_returns(block.suite, guarded, member_test, truthy, outside, depth + 1);
                }
            }
        }
    }
}

/// `x in c` (alone, or joined to others by `and`) whose `x` depends on the rank id.
fn membership_of_rank(eval: &mut value::Eval<'_, '_>, test: &Expr) -> bool {
    match test {
        Expr::Compare(c) if c.ops.len() == 1 && c.ops[0] == ruff_python_ast::CmpOp::In => {
            let deps = eval.value(&c.left, c.start()).whole;
            Finding::from_deps(&deps).dependence.iter().any(|d| d.kind == DependenceKind::RankId)
        }
        Expr::BoolOp(b) if b.op == ruff_python_ast::BoolOp::And => {
            b.values.iter().any(|v| membership_of_rank(eval, v))
        }
        _ => false,
    }
}
