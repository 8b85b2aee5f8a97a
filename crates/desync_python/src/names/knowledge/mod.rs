//! What desync knows about `PyTorch` and the frameworks on top of it, as data
//! (`frameworks.toml`, compiled in): which qualified names issue collectives and what Flight
//! Recorder records for them, which give the rank id or a rank flag, which are the same on
//! every rank, which read the host, the clock or a random generator, which are data sources,
//! and the attribute types and hook parameters that let a call in user code be resolved to a
//! qualified name (`self.trainer.is_global_zero` in a `LightningModule`). The bridge to code and
//! `desync lint` read the same table, so a framework added here is known to both.
//!
//! Length: one struct per section of `frameworks.toml` (serde needs each), their checks and the
//! lookups built from them, plus tests; the lookups read every section, so the file stays one.

use std::collections::BTreeMap;

use std::sync::OnceLock;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use ruff_python_ast::{Expr, ExprCall};
use serde::Deserialize;

const TABLE: &str = include_str!("frameworks.toml");

/// How many aliases [`Knowledge::canonical`] applies one after another (a cycle in the
/// table stops there).
const MAX_ALIAS_STEPS: usize = 4;

/// What a qualified name does, for desync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Rank,
    Uniform,
    Config,
    Environment,
    Time,
    Random,
    Collective,
    Data,
    Payload,
    Wrapper,
    RankOnly,
    Exception,
    Pad,
    /// Joins tensors end to end (`torch.cat`): as large as its pieces together.
    Concat,
    FromData,
    /// Returns this rank's process group along the row's `axes` of a grid of ranks.
    Group,
    /// Yields the items of its first argument unchanged, showing progress (`tqdm(loader)`).
    Progress,
    /// A flag the framework's loop reads to stop on this rank (`trainer.should_stop`).
    Stop,
}

/// Which part of a collective call holds the value that is identical on every rank afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Agrees {
    /// The call's result.
    Return,
    /// The first argument, filled in place.
    Arg0,
}

/// One row of the table: a fact about one or more qualified names.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Api {
    pub names: Vec<String>,
    pub role: Role,
    /// For collectives and wrappers: what Flight Recorder records (`all_reduce`, `p2p`...).
    pub op: Option<String>,
    pub agrees: Option<Agrees>,
    /// For `agrees = "arg0"`: the names of that parameter, for a call that passes it by
    /// keyword (`dist.broadcast(tensor=t, src=0)`; each name of the row's own signature).
    #[serde(default)]
    pub agrees_keywords: Vec<String>,
    /// The call issues a collective only when this keyword argument is true (`sync_dist`).
    pub when_keyword: Option<String>,
    /// For data sources: "uniform" when the length is the same on every rank by construction.
    pub length: Option<String>,
    /// For payload setup: what it changes in later collectives (`dtype`, `size`, `group`).
    pub affects: Option<String>,
    /// For payload setup: the reader (qualified) whose earlier answer, passed back as the
    /// first argument, puts the setting back as it was (`torch.get_default_dtype`).
    pub restored_by: Option<String>,
    /// For a collective: reading the member as an attribute issues it (a property such as
    /// Lightning's `Trainer.log_dir`), not only calling it.
    #[serde(default)]
    pub property: bool,
    /// The types of the values a call returns, element by element when it returns a tuple
    /// (`deepspeed.initialize` returns the engine first); one entry for a single value.
    #[serde(default)]
    pub returns: Vec<String>,
    /// The collective pickles Python objects (`broadcast_object_list`): sizes are exchanged
    /// first, and there is no dtype to agree on.
    #[serde(default)]
    pub pickles: bool,
    /// The positional arguments are the tensors the collective exchanges: every rank's must
    /// have the same dtype (`dist.all_reduce(t)`; not `dcp.load(state_dict, ...)`).
    #[serde(default)]
    pub tensors: bool,
    /// For a collective, or a rank read scoped to a group (`get_rank(group)`): the position of
    /// its process-group parameter (`dist.barrier(self.pp_group)`: 0), when a call passes it
    /// positionally.
    pub group_arg: Option<usize>,
    /// For a `group` row, the grid axes its group spans; for a `rank` row, those of the group
    /// it is the rank within (Megatron's `tp`, `pp`, `dp`, `cp`): a group along some axes
    /// holds ranks that share their coordinates on every other axis.
    #[serde(default)]
    pub axes: Vec<String>,
    /// More axes when a call passes this keyword (`with_context_parallel=True`: `cp`).
    #[serde(default)]
    pub keyword_axes: BTreeMap<String, Vec<String>>,
    /// Where the fact comes from: a file of the package and its version.
    pub source: String,
}

impl Api {
    /// The grid axes of what `call` of this row names (see [`Api::axes`]), with those of
    /// each keyword in [`Api::keyword_axes`] it passes as anything but a literal false or
    /// `None` (a value not known counts: more axes only ever make a test split more
    /// groups); empty when the row has none.
    pub fn axes_of(&self, call: &ExprCall) -> Vec<String> {
        let mut axes = self.axes.clone();
        for (keyword, extra) in &self.keyword_axes {
            let passed = call.arguments.find_keyword(keyword).is_some_and(|k| {
                !matches!(&k.value, Expr::NoneLiteral(_))
                    && !matches!(&k.value, Expr::BooleanLiteral(b) if !b.value)
            });
            if passed {
                axes.extend(
                    extra.iter().filter(|a| !axes.contains(a)).cloned().collect::<Vec<_>>(),
                );
            }
        }
        axes
    }

    /// The argument of `call` this row leaves identical on every rank in place (`agrees =
    /// "arg0"`): the first positional one, or the one passed by one of its keywords.
    pub fn agreed_argument<'c>(&self, call: &'c ExprCall) -> Option<&'c Expr> {
        if self.agrees != Some(Agrees::Arg0) {
            return None;
        }
        call.arguments.args.first().or_else(|| {
            call.arguments.keywords.iter().find_map(|k| {
                let name = k.arg.as_ref()?;
                self.agrees_keywords.iter().any(|w| w == name.as_str()).then_some(&k.value)
            })
        })
    }

    pub fn uniform_length(&self) -> bool {
        self.length.as_deref() == Some("uniform")
    }

    pub fn is_point_to_point(&self) -> bool {
        self.op.as_deref() == Some("p2p")
    }
}

/// Attribute types of a framework class, so chains like `self.trainer.strategy` resolve.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TypeInfo {
    pub name: String,
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
    pub source: String,
}

/// What a framework passes to the hooks a user class overrides.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hook {
    /// The framework base class (qualified).
    pub class: String,
    /// Hook method names, or `["*"]` for every method.
    pub methods: Vec<String>,
    /// A parameter the framework fills with a value of `role` (`batch` is the rank's data).
    pub parameter: Option<String>,
    pub role: Option<Role>,
    /// Types of the positional parameters after `self`, in order.
    #[serde(default)]
    pub positional: Vec<String>,
    /// The framework's loop calls these methods on every rank once per step, between the
    /// step's collectives: a rank that leaves one early (a `return`, a `raise`) issues
    /// something else next, or nothing ([`crate::Analysis::step_hook_exits`]).
    #[serde(default)]
    pub per_step: bool,
    /// The framework's entry points whose loop calls them (`lightning.pytorch.Trainer.fit`).
    #[serde(default)]
    pub entries: Vec<String>,
    /// What the framework does on a rank whose method returns `None` (Lightning raises for a
    /// `training_step` under DDP): said with the exits that return nothing.
    pub on_none: Option<String>,
    pub source: String,
}

/// Collectives whose input must have the same shape on every rank (gathers): which argument
/// holds it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shape {
    pub names: Vec<String>,
    /// Position of the argument among the call's positional arguments (a method's receiver
    /// not counted).
    pub input: usize,
    /// The same argument passed by keyword.
    pub keyword: Option<String>,
    pub source: String,
}

/// Wrappers whose wrapped model issues collectives when it is called (forward), beyond the
/// gradient collectives of its backward pass (`op` of the wrapper's row).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Forward {
    pub names: Vec<String>,
    pub op: String,
    pub source: String,
}

/// Wrappers whose gradient collectives a reducer issues from inside the backward pass, bucket
/// by bucket as every parameter of a bucket has its gradient: which parameters a rank's forward
/// used decides what its backward issues (`[[reducer]]` rows; `control/reducer.rs`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reducer {
    pub names: Vec<String>,
    /// What Flight Recorder records for a bucket.
    pub op: String,
    /// The model's method the wrapper runs each step, whose parameter use decides.
    pub method: String,
    /// Library frames ("path/ending.py:function") on the stack of a collective the backward
    /// pass issued: the autograd engine running the reducer's hooks.
    pub backward_frames: Vec<String>,
    /// The text of the error the wrapper raises on a rank whose previous backward left a bucket
    /// unready (the next forward).
    pub unused_error: String,
    /// The wrapper's keyword that makes the reducer mark unused parameters ready.
    pub tolerates_keyword: String,
    pub source: String,
}

/// Functions that start one process per rank and call a target function in each, passing the
/// process index (`torch.multiprocessing.spawn(fn, ...)` calls `fn(i, *args)`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Launcher {
    pub names: Vec<String>,
    /// Position of the target function among the launcher's positional arguments.
    pub target: usize,
    /// The target passed by keyword.
    pub target_keyword: Option<String>,
    /// Position of the target's parameter that receives the process index.
    pub rank_parameter: usize,
    pub source: String,
}

/// Calls that are told this process's rank (`init_process_group(..., rank=proc_id)`): what a
/// function passes there is its rank id, even when the launcher that chose it is out of view.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankArgument {
    pub names: Vec<String>,
    pub keyword: String,
    /// Its position among the positional arguments, when it can be passed that way.
    pub position: Option<usize>,
    pub source: String,
}

/// Calls whose argument decides how many collectives or point-to-point messages they (or the
/// object they build) issue: a pipelining schedule's microbatch count. A rank that passes
/// another count than its peers exchanges another number of messages.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountArgument {
    pub names: Vec<String>,
    pub keyword: String,
    /// Its position among the positional arguments, when it can be passed that way.
    pub position: Option<usize>,
    /// What one unit of the count issues, for the evidence ("one forward and one backward
    /// exchange between stages").
    pub issues: String,
    pub source: String,
}

/// The steps a count is followed through (`[count_steps]`, read by `sites/count.rs`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountSteps {
    /// Torch functions whose result's size is set by the input's values (a filter).
    pub value_sized: HashSet<String>,
    /// Tensor methods with the same property.
    pub value_sized_methods: HashSet<String>,
    /// Torch functions that cut their first argument into pieces.
    pub splits: HashSet<String>,
    /// Methods that cut their receiver into pieces.
    pub split_methods: HashSet<String>,
    /// Methods whose result keeps the receiver's items and sizes.
    pub keeps_items_methods: HashSet<String>,
    /// Methods that read the receiver's size.
    pub size_reads_methods: HashSet<String>,
    #[allow(dead_code)]
    source: String,
}

/// Context managers inside which ranks may run different numbers of iterations without a
/// hang (`with model.join():`: joined ranks shadow the collectives of the others).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Join {
    pub names: Vec<String>,
    pub source: String,
}

/// Functions that call the function they are passed, with the arguments that follow it,
/// somewhere else (`asyncio.to_thread(f, *args, **kwargs)` runs `f(*args, **kwargs)` in a
/// worker thread): a call of one is a call of its target, collectives and agreements included.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Forwarder {
    pub names: Vec<String>,
    /// Position of the target among the positional arguments; the ones after it are its own.
    pub target: usize,
    pub source: String,
}

/// Qualified names of dtypes (`torch.bfloat16`): a value that can be one of them is a dtype.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dtypes {
    pub names: Vec<String>,
    pub source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    aliases: BTreeMap<String, String>,
    conventional_imports: BTreeMap<String, String>,
    api: Vec<Api>,
    #[serde(rename = "type")]
    types: Vec<TypeInfo>,
    hook: Vec<Hook>,
    #[serde(default)]
    shape: Vec<Shape>,
    #[serde(default)]
    forward: Vec<Forward>,
    #[serde(default)]
    reducer: Vec<Reducer>,
    #[serde(default)]
    launcher: Vec<Launcher>,
    #[serde(default)]
    rank_argument: Vec<RankArgument>,
    #[serde(default)]
    count_argument: Vec<CountArgument>,
    #[serde(default)]
    count_steps: Option<CountSteps>,
    #[serde(default)]
    join: Vec<Join>,
    #[serde(default)]
    dtypes: Vec<Dtypes>,
    #[serde(default)]
    forwarder: Vec<Forwarder>,
    #[serde(default)]
    structural_exceptions: Option<NameList>,
    #[serde(default)]
    not_collective_failures: Option<NameList>,
    #[serde(default)]
    value_errors: Option<NameList>,
    #[serde(default)]
    builds_from_arguments: Option<NameList>,
    #[serde(default)]
    import_probes: Option<NameList>,
    #[serde(default)]
    one_collective_calls: Option<NameList>,
    #[serde(default)]
    one_collective_modules: Option<NameList>,
    #[serde(default)]
    poll_timeouts: Option<PollTimeouts>,
    point_to_point_modules: Option<NameList>,
    #[serde(default)]
    group_sizes: Option<NameList>,
    #[serde(default)]
    source_collectives: Option<NameList>,
    #[serde(default)]
    hook_registrations: Option<NameList>,
    #[serde(default)]
    error_handoffs: Option<NameList>,
    #[serde(default)]
    file_probes: Option<FileCalls>,
    #[serde(default)]
    file_reads: Option<FileCalls>,
    #[serde(default)]
    path_wrappers: Option<FileCalls>,
    #[serde(default)]
    copy: Vec<CopyCall>,
    #[serde(default)]
    value_computations: Option<ValueComputations>,
    #[serde(default)]
    call_dispatch: Option<CallDispatch>,
}

/// Library frames that only pass a call on to the user's code (`Module._call_impl`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallDispatch {
    /// "path/of/file.py:function".
    frames: Vec<String>,
    #[allow(dead_code)]
    source: String,
}

/// Tensor operations whose result is computed from their operand's values (`torch.bincount`,
/// `x.nonzero()`, `x.sum()`): functions by qualified name (their tensor arguments are the
/// operands), methods by name (the receiver is). The same shape as the file calls.
pub type ValueComputations = FileCalls;

/// Calls that return a copy of one of their arguments.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct CopyCall {
    names: Vec<String>,
    keeps: CopyKeeps,
    #[allow(dead_code)]
    source: String,
}

/// What a copy call ([`Knowledge::copy_keeps`]) keeps of the value it copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CopyKeeps {
    /// An equal value (`copy.deepcopy(x)`).
    Everything,
    /// The containers (their keys, lengths and nesting); the leaves are mapped by a function
    /// and can change type (`tree_map_only(torch.Tensor, f, x)`).
    Structure,
}

/// A list of names (exception classes, methods) and where the fact about them comes from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct NameList {
    names: Vec<String>,
    #[allow(dead_code)]
    source: String,
}

/// The exception a queue's poll raises when nothing came in time (`queue.Empty`), and the
/// calls that poll: methods that never wait (`get_nowait`), and methods that wait only when
/// given one of the keywords (`get(timeout=1)`, `get(block=False)`; a plain `get()` waits
/// until an item comes and raises nothing).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PollTimeouts {
    #[serde(default)]
    names: Vec<String>,
    #[serde(default)]
    never_wait: Vec<String>,
    #[serde(default)]
    wait_unless: Vec<String>,
    #[serde(default)]
    keywords: Vec<String>,
    #[allow(dead_code)]
    source: String,
}

/// Calls of one kind named in the table: functions by qualified name, methods by name. For
/// calls about a file named by a path, the functions take the path first and the methods are
/// called on the path.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileCalls {
    #[serde(default)]
    names: Vec<String>,
    #[serde(default)]
    methods: Vec<String>,
    #[allow(dead_code)]
    source: String,
}

impl FileCalls {
    /// Whether `qualified` names a function of this kind (its first argument is the path).
    pub fn is_function(&self, qualified: &str) -> bool {
        self.names.iter().any(|n| n == qualified)
    }

    /// Whether `method`, called on a path, is a call of this kind.
    pub fn is_method(&self, method: &str) -> bool {
        self.methods.iter().any(|m| m == method)
    }

    /// The names a call of this kind is spelled with in source that imports or calls it
    /// (`exists` for `os.path.exists`, the methods).
    pub fn words(&self) -> impl Iterator<Item = &str> {
        fn last(name: &str) -> &str {
            name.rsplit('.').next().unwrap_or(name)
        }
        self.names.iter().map(|n| last(n)).chain(self.methods.iter().map(String::as_str))
    }
}

/// The table, indexed.
#[derive(Debug)]
pub struct Knowledge {
    /// Longest prefix first.
    aliases: Vec<(String, String)>,
    /// Indexes into `aliases` by the first segment of each alias (in the same order):
    /// canonicalising is asked of every resolved name.
    aliases_by_root: HashMap<String, Vec<usize>>,
    conventional: BTreeMap<String, String>,
    apis: Vec<Api>,
    by_name: HashMap<String, usize>,
    /// Every proper prefix (`a`, `a.b`) of a name in `by_name` (`a.b.c`): the classes whose
    /// members the table names, looked up without scanning every row.
    member_owners: HashSet<String>,
    /// The proper prefixes of the collective rows' names ([`Knowledge::describes_collectives`]).
    collective_owners: HashSet<String>,
    /// First segments of the collective rows' names and of the aliases.
    collective_roots: HashSet<String>,
    types: HashMap<String, TypeInfo>,
    hooks: Vec<Hook>,
    shapes: HashMap<String, Shape>,
    forwards: HashMap<String, String>,
    reducers: Vec<Reducer>,
    launchers: HashMap<String, Launcher>,
    rank_arguments: HashMap<String, RankArgument>,
    count_arguments: HashMap<String, CountArgument>,
    /// How a count is carried back to where it was decided.
    pub count_steps: CountSteps,
    joins: Vec<String>,
    dtypes: Vec<String>,
    /// Forwarder name → the position of its target.
    forwarders: HashMap<String, usize>,
    /// The last segments of the forwarders' names, for the test every call goes through.
    forwarder_segments: HashSet<String>,
    /// Built-in exception classes that signal the program's structure (`TypeError`).
    structural_exceptions: HashSet<String>,
    not_collective_failures: HashSet<String>,
    /// Built-in exception classes raised from the values an operation works on (`KeyError`).
    value_errors: HashSet<String>,
    /// Library calls that build a value from their arguments alone (`torch.zeros`).
    builds_from_arguments: HashSet<String>,
    /// Calls that import a module named at run time (`importlib.import_module`).
    import_probes: HashSet<String>,
    /// Framework calls that each issue one collective (`Accelerator.wait_for_everyone`).
    one_collective_calls: HashSet<String>,
    /// Modules whose collective functions each issue one collective (`torch.distributed`).
    one_collective_modules: HashSet<String>,
    /// What a queue's poll raises when nothing came, and the calls that poll.
    poll_timeouts: PollTimeouts,
    /// Modules whose objects exchange point-to-point messages when they run (pipelining
    /// schedules): a job that uses them sends and receives, not only collectives.
    point_to_point_modules: Vec<String>,
    group_sizes: HashSet<String>,
    source_collectives: HashSet<String>,
    /// Methods that register a callback the module runs on this rank's own activations
    /// (`register_forward_hook`).
    hook_registrations: HashSet<String>,
    /// Methods that hand an exception object to another thread or process (`send`, `put`).
    error_handoffs: HashSet<String>,
    /// Calls that ask whether a file exists, from the asking rank's view (`os.path.exists`).
    pub file_probes: FileCalls,
    /// Calls that read a file's contents (`torch.load`, `open`).
    pub file_reads: FileCalls,
    /// Calls that name the same file as their argument (`Path(p)`, `str(p)`, `p.resolve()`).
    pub path_wrappers: FileCalls,
    /// Copy calls → what they keep of the value they copy.
    copies: HashMap<String, CopyKeeps>,
    /// Tensor operations that compute their result from their operand's values.
    pub value_computations: ValueComputations,
    /// (file path ending, function) of library frames that only dispatch a call.
    call_dispatch: Vec<(String, String)>,
}

/// Environment variables that launchers (torchrun, SLURM, Open MPI, MPICH) set per rank.
pub const RANK_ENV_VARS: &[&str] = &[
    "RANK",
    "LOCAL_RANK",
    "GROUP_RANK",
    "NODE_RANK",
    "ROLE_RANK",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMI_RANK",
    "PMIX_RANK",
];

/// Environment variables that launchers set to the same value on every rank.
pub const UNIFORM_ENV_VARS: &[&str] =
    &["WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "SLURM_NTASKS"];

/// The table, parsed on first use.
pub fn knowledge() -> &'static Knowledge {
    static TABLE_ONCE: OnceLock<Knowledge> = OnceLock::new();
    TABLE_ONCE.get_or_init(|| Knowledge::parse(TABLE).expect("frameworks.toml is valid (tested)"))
}

impl Knowledge {
    fn parse(text: &str) -> Result<Knowledge, toml::de::Error> {
        let raw: Raw = toml::from_str(text)?;
        let mut aliases: Vec<(String, String)> = raw.aliases.into_iter().collect();
        aliases.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
        let mut aliases_by_root: HashMap<String, Vec<usize>> = HashMap::default();
        for (i, (from, _)) in aliases.iter().enumerate() {
            aliases_by_root.entry(root_segment(from).to_owned()).or_default().push(i);
        }
        let mut by_name = HashMap::default();
        for (i, api) in raw.api.iter().enumerate() {
            for name in &api.names {
                by_name.insert(name.clone(), i);
            }
        }
        let member_owners =
            by_name.keys().flat_map(|name: &String| proper_prefixes(name)).collect();
        let collective_names =
            || raw.api.iter().filter(|a| a.role == Role::Collective).flat_map(|a| a.names.iter());
        let collective_owners = collective_names().flat_map(|name| proper_prefixes(name)).collect();
        let collective_roots = collective_names()
            .map(|name| root_segment(name).to_owned())
            .chain(aliases.iter().map(|(from, _)| root_segment(from).to_owned()))
            .collect();
        let types = raw.types.into_iter().map(|t| (t.name.clone(), t)).collect();
        let shapes = raw
            .shape
            .into_iter()
            .flat_map(|s| s.names.clone().into_iter().map(move |n| (n, s.clone())))
            .collect();
        let forwards = raw
            .forward
            .into_iter()
            .flat_map(|f| f.names.into_iter().map(move |n| (n, f.op.clone())))
            .collect();
        let forwarders: HashMap<String, usize> = raw
            .forwarder
            .into_iter()
            .flat_map(|f| f.names.into_iter().map(move |n| (n, f.target)))
            .collect();
        let forwarder_segments =
            forwarders.keys().map(|n| n.rsplit('.').next().unwrap_or(n).to_owned()).collect();
        let launchers = raw
            .launcher
            .into_iter()
            .flat_map(|l| l.names.clone().into_iter().map(move |n| (n, l.clone())))
            .collect();
        let rank_arguments = raw
            .rank_argument
            .into_iter()
            .flat_map(|r| r.names.clone().into_iter().map(move |n| (n, r.clone())))
            .collect();
        let count_arguments = raw
            .count_argument
            .into_iter()
            .flat_map(|r| r.names.clone().into_iter().map(move |n| (n, r.clone())))
            .collect();
        Ok(Knowledge {
            aliases,
            aliases_by_root,
            conventional: raw.conventional_imports,
            apis: raw.api,
            by_name,
            member_owners,
            collective_owners,
            collective_roots,
            types,
            hooks: raw.hook,
            shapes,
            forwards,
            reducers: raw.reducer,
            launchers,
            rank_arguments,
            count_arguments,
            count_steps: raw.count_steps.unwrap_or_default(),
            joins: raw.join.into_iter().flat_map(|j| j.names).collect(),
            dtypes: raw.dtypes.into_iter().flat_map(|d| d.names).collect(),
            forwarders,
            forwarder_segments,
            structural_exceptions: raw
                .structural_exceptions
                .map(|s| s.names.into_iter().collect())
                .unwrap_or_default(),
            not_collective_failures: raw
                .not_collective_failures
                .map(|s| s.names.into_iter().collect())
                .unwrap_or_default(),
            value_errors: raw
                .value_errors
                .map(|s| s.names.into_iter().collect())
                .unwrap_or_default(),
            builds_from_arguments: raw
                .builds_from_arguments
                .map(|s| s.names.into_iter().collect())
                .unwrap_or_default(),
            import_probes: raw
                .import_probes
                .map(|s| s.names.into_iter().collect())
                .unwrap_or_default(),
            one_collective_calls: raw
                .one_collective_calls
                .map(|s| s.names.into_iter().collect())
                .unwrap_or_default(),
            one_collective_modules: raw
                .one_collective_modules
                .map(|s| s.names.into_iter().collect())
                .unwrap_or_default(),
            poll_timeouts: raw.poll_timeouts.unwrap_or_default(),
            point_to_point_modules: raw.point_to_point_modules.map(|s| s.names).unwrap_or_default(),
            group_sizes: raw.group_sizes.map(|s| s.names.into_iter().collect()).unwrap_or_default(),
            source_collectives: raw
                .source_collectives
                .map(|s| s.names.into_iter().collect())
                .unwrap_or_default(),
            hook_registrations: raw
                .hook_registrations
                .map(|s| s.names.into_iter().collect())
                .unwrap_or_default(),
            error_handoffs: raw
                .error_handoffs
                .map(|s| s.names.into_iter().collect())
                .unwrap_or_default(),
            file_probes: raw.file_probes.unwrap_or_default(),
            file_reads: raw.file_reads.unwrap_or_default(),
            path_wrappers: raw.path_wrappers.unwrap_or_default(),
            copies: raw
                .copy
                .into_iter()
                .flat_map(|c| c.names.into_iter().map(move |n| (n, c.keeps)))
                .collect(),
            value_computations: raw.value_computations.unwrap_or_default(),
            call_dispatch: raw
                .call_dispatch
                .map(|d| {
                    d.frames
                        .iter()
                        .filter_map(|f| f.rsplit_once(':'))
                        .map(|(file, function)| (file.to_owned(), function.to_owned()))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// `pytorch_lightning.LightningModule` → `lightning.pytorch.LightningModule`: the longest
    /// alias that is a whole-segment prefix of `name` is replaced, and again in what that gives
    /// (a package alias, then an object's: `pytorch_lightning.utilities.rank_zero_only` →
    /// `lightning.pytorch.utilities.rank_zero_only` → `...utilities.rank_zero.rank_zero_only`),
    /// so every import path of a row reaches it with one alias per spelling.
    pub fn canonical(&self, name: &str) -> String {
        let mut name = name.to_owned();
        for _ in 0..MAX_ALIAS_STEPS {
            match self.alias_step(&name) {
                Some(next) if next != name => name = next,
                _ => break,
            }
        }
        name
    }

    /// `name` with its longest alias prefix replaced, if it has one.
    fn alias_step(&self, name: &str) -> Option<String> {
        let candidates =
            self.aliases_by_root.get(root_segment(name)).map_or(&[][..], Vec::as_slice);
        candidates.iter().map(|&i| &self.aliases[i]).find_map(|(from, to)| {
            let rest = name.strip_prefix(from.as_str())?;
            (rest.is_empty() || rest.starts_with('.')).then(|| format!("{to}{rest}"))
        })
    }

    /// The module a name conventionally stands for when a file uses it without binding it
    /// (`dist` → `torch.distributed`); the name itself otherwise.
    pub fn unbound(&self, name: &str) -> String {
        self.conventional.get(name).map_or_else(|| self.canonical(name), |m| self.canonical(m))
    }

    /// Every word a call's source must contain for the call to resolve to a row of `role`
    /// (see [`crate::Analysis::setup_calls`]): the rows' last segments, the last segments of
    /// aliases that canonicalise to one of them, and the conventional names that stand for
    /// one. A qualified name is only ever built from the words of the file it is resolved
    /// in and from the table, so a file without any of them calls none of those rows.
    pub(crate) fn role_words(&self, role: Role) -> Vec<String> {
        let is_row = |name: &str| self.api(name).is_some_and(|a| a.role == role);
        let last = |name: &str| name.rsplit('.').next().unwrap_or(name).to_owned();
        let mut words: Vec<String> = Vec::new();
        for api in self.apis.iter().filter(|a| a.role == role) {
            words.extend(api.names.iter().map(|n| last(n)));
        }
        for (from, _) in &self.aliases {
            if is_row(&self.canonical(from)) {
                words.push(last(from));
            }
        }
        for name in self.conventional.keys() {
            if is_row(&self.unbound(name)) {
                words.push(name.clone());
            }
        }
        words.sort();
        words.dedup();
        words
    }

    /// The row for a canonical qualified name.
    pub fn api(&self, qualified: &str) -> Option<&Api> {
        self.by_name.get(qualified).map(|&i| &self.apis[i])
    }

    /// Every row, for listings and tests.
    pub fn apis(&self) -> &[Api] {
        &self.apis
    }

    /// The type of attribute `attribute` of an instance of `class`, when the table knows it.
    pub fn attribute_type(&self, class: &str, attribute: &str) -> Option<&str> {
        self.types.get(class)?.attributes.get(attribute).map(String::as_str)
    }

    /// Whether the table knows anything about members of `class`.
    pub fn knows_class(&self, class: &str) -> bool {
        self.types.contains_key(class) || self.member_owners.contains(class)
    }

    /// Whether `name`, as written, can canonicalise to what [`Self::describes_collectives`]
    /// accepts: its first segment is that of a collective row or of an alias. Asked of every
    /// import a name resolves through, before building the canonical name.
    pub fn may_describe_collectives(&self, name: &str) -> bool {
        self.collective_roots.contains(root_segment(name))
    }

    /// Whether `qualified` is a collective row of the table or a module or class holding one
    /// (`torch.distributed`, `deepspeed.comm`, `deepspeed.comm.all_reduce`).
    pub fn describes_collectives(&self, qualified: &str) -> bool {
        self.api(qualified).is_some_and(|a| a.role == Role::Collective)
            || self.collective_owners.contains(qualified)
    }

    /// Which argument of the gather `qualified` must have the same shape on every rank.
    pub fn shape(&self, qualified: &str) -> Option<&Shape> {
        self.shapes.get(qualified)
    }

    /// The collective a model wrapped by `wrapper` issues when it is called.
    pub fn forward_op(&self, wrapper: &str) -> Option<&str> {
        self.forwards.get(wrapper).map(String::as_str)
    }

    /// The launcher row of `qualified`, when it starts one process per rank.
    /// The `[[reducer]]` row of a wrapper (qualified), if it has one.
    pub fn reducer(&self, wrapper: &str) -> Option<&Reducer> {
        self.reducers.iter().find(|r| r.names.iter().any(|n| n == wrapper))
    }

    /// The reducer whose backward pass a library frame belongs to (`file` as recorded).
    pub fn reducer_of_backward_frame(&self, file: &str, function: &str) -> Option<&Reducer> {
        let file = file.replace('\\', "/");
        self.reducers.iter().find(|r| {
            r.backward_frames.iter().any(|f| {
                f.rsplit_once(':').is_some_and(|(end, name)| {
                    name == function && (file == end || file.ends_with(&format!("/{end}")))
                })
            })
        })
    }

    /// Every `[[reducer]]` row.
    pub fn reducers(&self) -> &[Reducer] {
        &self.reducers
    }

    pub fn launcher(&self, qualified: &str) -> Option<&Launcher> {
        self.launchers.get(qualified)
    }

    /// The last words of the rows told this process's rank (`init_process_group`): a source
    /// that spells none of them calls none of those rows.
    pub fn rank_argument_words(&self) -> impl Iterator<Item = &str> {
        self.rank_arguments.keys().map(|n| n.rsplit('.').next().unwrap_or(n))
    }

    /// The row of `qualified` when it is told this process's rank.
    pub fn rank_argument(&self, qualified: &str) -> Option<&RankArgument> {
        self.rank_arguments.get(qualified)
    }

    /// The row of `qualified` when one of its arguments decides how many collectives or
    /// messages it issues.
    pub fn count_argument(&self, qualified: &str) -> Option<&CountArgument> {
        self.count_arguments.get(qualified)
    }

    /// The last words of the count rows: a source that spells none of them calls none.
    pub fn count_argument_words(&self) -> impl Iterator<Item = &str> {
        self.count_arguments.keys().map(|n| n.rsplit('.').next().unwrap_or(n))
    }

    /// Whether the built-in exception class `name` signals the program's structure (a wrong
    /// type, a missing attribute or import) rather than a rank's data or state.
    pub fn is_structural_exception(&self, name: &str) -> bool {
        self.structural_exceptions.contains(name)
    }

    /// Whether the exception class `name` is one a failing collective never raises (a
    /// `ValueError`, a `KeyError`): a collective that fails raises a `RuntimeError`
    /// (`DistBackendError`, `DistNetworkError`...), so a handler catching only such classes
    /// did not catch a collective's own failure.
    pub fn is_not_a_collective_failure(&self, name: &str) -> bool {
        self.not_collective_failures.contains(name)
    }

    /// Whether `name` is a built-in exception class raised only from the values an operation
    /// works on (`ValueError`, `KeyError`): ranks that work on the same values raise it alike.
    pub fn is_raised_from_values(&self, name: &str) -> bool {
        self.value_errors.contains(name)
    }

    /// Whether `name` (qualified) builds its value from its arguments alone, raising on every
    /// rank or on none given the same arguments (`torch.tensor`, `torch.zeros`).
    pub fn builds_from_arguments(&self, name: &str) -> bool {
        self.builds_from_arguments.contains(name)
    }

    /// Whether `name` (qualified) imports a module named by its argument, as an `import`
    /// statement does (`importlib.import_module("pkg.ext")`): it fails on every rank of one
    /// software image or on none.
    pub fn is_import_probe(&self, name: &str) -> bool {
        self.import_probes.contains(name)
    }

    /// Whether `name` (qualified) is a function of a module whose collectives each issue one
    /// collective and raise only its failure (`torch.distributed.all_reduce`), or a framework
    /// call the table says does the same (`accelerate.Accelerator.wait_for_everyone`).
    pub fn issues_one_collective(&self, name: &str) -> bool {
        self.one_collective_calls.contains(name)
            || name
                .rsplit_once('.')
                .is_some_and(|(module, _)| self.one_collective_modules.contains(module))
    }

    /// Whether `name` (qualified) is what a queue's poll raises when nothing came in time
    /// (`queue.Empty`).
    pub fn is_poll_timeout(&self, name: &str) -> bool {
        self.poll_timeouts.names.iter().any(|n| n == name)
    }

    /// Whether a call of `method` with these keyword names polls a queue, raising the
    /// [`Self::is_poll_timeout`] class when nothing comes (`get_nowait()`, `get(timeout=1)`).
    pub fn polls<'k>(&self, method: &str, mut keywords: impl Iterator<Item = &'k str>) -> bool {
        let p = &self.poll_timeouts;
        p.never_wait.iter().any(|m| m == method)
            || (p.wait_unless.iter().any(|m| m == method)
                && keywords.any(|k| p.keywords.iter().any(|w| w == k)))
    }

    /// Whether `name` (qualified) exchanges point-to-point messages: a send/recv row of the
    /// table (`op = "p2p"`), or anything of a module listed in `[point_to_point_modules]`
    /// (`torch.distributed.pipelining.Schedule1F1B`).
    pub fn is_point_to_point(&self, name: &str) -> bool {
        self.api(name).is_some_and(Api::is_point_to_point)
            || self.point_to_point_modules.iter().any(|m| {
                name.strip_prefix(m.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
            })
    }

    /// Whether `name` (qualified) answers how many ranks a process group holds
    /// (`dist.get_world_size`, Megatron's `get_tensor_model_parallel_world_size`).
    pub fn counts_group_members(&self, name: &str) -> bool {
        self.group_sizes.contains(name)
    }

    /// Whether the collective `name` (qualified) delivers what one source rank sends
    /// (`dist.broadcast`, `dist.scatter_object_list`).
    pub fn is_source_collective(&self, name: &str) -> bool {
        self.source_collectives.contains(name)
    }

    /// Whether a library frame of `function` in `file` only passes a call on to the user's
    /// code (`torch/nn/modules/module.py` `_call_impl`): the user frames around it are caller
    /// and callee.
    pub fn dispatches_call(&self, file: &str, function: &str) -> bool {
        let file = file.replace('\\', "/");
        self.call_dispatch
            .iter()
            .any(|(end, f)| f == function && (file == *end || file.ends_with(&format!("/{end}"))))
    }

    /// Whether `method` (a call's last name) registers a callback that a module runs on this
    /// rank's own activations (`module.register_forward_hook(record)`).
    pub fn registers_hook(&self, method: &str) -> bool {
        self.hook_registrations.contains(method)
    }

    /// Whether `method` (a call's last name) hands an exception object passed to it to another
    /// thread or process (`parent_conn.send(e)`, `results.put(e)`, `future.set_exception(e)`),
    /// whose side raises it.
    pub fn hands_off_errors(&self, method: &str) -> bool {
        self.error_handoffs.contains(method)
    }

    /// What the copy call `qualified` keeps of the value it copies; `None` for any other call.
    pub fn copy_keeps(&self, qualified: &str) -> Option<CopyKeeps> {
        self.copies.get(qualified).copied()
    }

    /// Whether a callee ending in `segment` can be a forwarder (a cheap test before resolving).
    pub fn may_forward(&self, segment: &str) -> bool {
        self.forwarder_segments.contains(segment)
    }

    /// Where the target of the forwarder `qualified` is among its positional arguments.
    pub fn forwarder_target(&self, qualified: &str) -> Option<usize> {
        self.forwarders.get(qualified).copied()
    }

    /// Whether `qualified` is a context manager that tolerates uneven iteration counts.
    pub fn tolerates_uneven(&self, qualified: &str) -> bool {
        self.joins.iter().any(|j| j == qualified)
    }

    /// Whether `qualified` names a dtype.
    pub fn is_dtype(&self, qualified: &str) -> bool {
        self.dtypes.iter().any(|d| d == qualified)
    }

    /// The hooks the framework calls on a subclass of `base` under the name `method`.
    /// Whether the loop of entry point `path` runs per-step hooks of some row.
    pub fn runs_step_hooks(&self, path: &str) -> bool {
        self.hooks.iter().any(|h| h.per_step && h.entries.iter().any(|e| e == path))
    }

    /// The per-step hook rows ([`Hook::per_step`]) of framework class `base`.
    pub fn step_hooks<'a>(&'a self, base: &'a str) -> impl Iterator<Item = &'a Hook> {
        self.hooks.iter().filter(move |h| h.per_step && h.class == base)
    }

    pub fn hooks<'a>(&'a self, base: &'a str, method: &'a str) -> impl Iterator<Item = &'a Hook> {
        self.hooks
            .iter()
            .filter(move |h| h.class == base && h.methods.iter().any(|m| m == "*" || m == method))
    }
}

/// `a` and `a.b` for `a.b.c`.
fn proper_prefixes(name: &str) -> impl Iterator<Item = String> + '_ {
    name.match_indices('.').map(|(i, _)| name[..i].to_owned())
}

/// `torch` of `torch.distributed.all_reduce`.
fn root_segment(name: &str) -> &str {
    name.split_once('.').map_or(name, |(root, _)| root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_parses_and_every_row_cites_a_source() {
        let k = Knowledge::parse(TABLE).unwrap();
        assert!(k.apis().len() > 30);
        for api in k.apis() {
            assert!(!api.source.trim().is_empty(), "{:?} has no source", api.names);
            assert!(!api.names.is_empty());
            if api.role == Role::Collective {
                assert!(api.op.is_some(), "{:?}: a collective says what FR records", api.names);
            }
        }
        for shape in &k.shapes {
            let api =
                k.api(shape.0).unwrap_or_else(|| panic!("shape row {} has no api row", shape.0));
            assert_eq!(api.role, Role::Collective, "{}", shape.0);
        }
        for wrapper in k.forwards.keys() {
            assert_eq!(k.api(wrapper).map(|a| a.role), Some(Role::Wrapper), "{wrapper}");
        }
        for api in k.apis().iter().filter(|a| a.property) {
            assert_eq!(
                api.role,
                Role::Collective,
                "{:?}: only collectives are properties",
                api.names
            );
        }
        for (from, to) in &k.aliases {
            assert_ne!(from, to.as_str().get(..from.len()).unwrap_or(""), "alias {from} loops");
        }
    }

    #[test]
    fn role_words_cover_every_spelling_of_a_row() {
        let k = knowledge();
        let words = k.role_words(Role::Payload);
        for api in k.apis().iter().filter(|a| a.role == Role::Payload) {
            for name in &api.names {
                assert!(words.contains(&name.rsplit('.').next().unwrap().to_owned()), "{name}");
            }
        }
        // `torch.nn.parallel.DDP` is spelled `DDP` and canonicalises to a wrapper row.
        assert!(k.role_words(Role::Wrapper).contains(&"DDP".to_owned()));
        assert!(!words.contains(&"DDP".to_owned()));
        // A class's members: every whole-segment prefix of a row's name, nothing else.
        assert!(k.knows_class("torch.distributed"));
        assert!(!k.knows_class("torch.distrib"));
    }

    #[test]
    fn aliases_canonicalize_whole_segments_only() {
        let k = knowledge();
        assert_eq!(
            k.canonical("pytorch_lightning.LightningModule"),
            "lightning.pytorch.LightningModule"
        );
        assert_eq!(k.canonical("pytorch_lightningx.Foo"), "pytorch_lightningx.Foo");
        assert_eq!(
            k.canonical("torch.distributed.distributed_c10d.all_reduce"),
            "torch.distributed.all_reduce"
        );
        assert_eq!(
            k.api("torch.distributed.all_reduce").unwrap().op.as_deref(),
            Some("all_reduce")
        );
        assert_eq!(k.api("lightning.pytorch.Trainer.is_global_zero").unwrap().role, Role::Rank);
        assert_eq!(
            k.attribute_type("lightning.pytorch.LightningModule", "trainer"),
            Some("lightning.pytorch.Trainer")
        );
        assert!(k.hooks("lightning.pytorch.Callback", "on_validation_end").next().is_some());
    }

    #[test]
    fn the_lint_sections_answer() {
        let k = knowledge();
        assert_eq!(k.shape("torch.distributed.all_gather").map(|s| s.input), Some(1));
        assert_eq!(k.forward_op("torch.distributed.fsdp.fully_shard"), Some("all_gather"));
        assert_eq!(k.forward_op("torch.nn.parallel.DistributedDataParallel"), None);
        assert_eq!(k.launcher("torch.multiprocessing.spawn").map(|l| l.rank_parameter), Some(0));
        let init =
            k.rank_argument(&k.canonical("torch.distributed.distributed_c10d.init_process_group"));
        assert_eq!(init.map(|r| (r.keyword.as_str(), r.position)), Some(("rank", Some(4))));
        assert!(k.tolerates_uneven(&k.canonical("torch.distributed.algorithms.join.Join")));
        assert!(k.is_dtype("torch.bfloat16") && !k.is_dtype("torch.device"));
        assert!(k.api("lightning.pytorch.Trainer.log_dir").unwrap().property);
        assert_eq!(k.api("deepspeed.comm.send").unwrap().op.as_deref(), Some("p2p"));
        assert_eq!(
            k.api("deepspeed.initialize").unwrap().returns.first().map(String::as_str),
            Some("deepspeed.DeepSpeedEngine")
        );
    }
}
