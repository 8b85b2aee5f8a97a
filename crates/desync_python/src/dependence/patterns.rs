//! The name lists behind rank-dependence classification, in one place so the branch finder and
//! the linter agree on them. Matching is on Python spellings as written in training code:
//! dotted callee paths (`torch.distributed.get_rank`), their last segment (`get_rank`), and the
//! `snake_case` words of variable names (`val_loss` → `val`, `loss`).
//!
//! Lists are heuristics, tuned for `PyTorch` training loops: a hit is evidence, not proof, and
//! each is reported with the source text that matched.

/// Variable or attribute names that hold the rank id or a rank-derived flag.
pub const RANK_NAMES: &[&str] = &[
    "rank",
    "local_rank",
    "global_rank",
    "node_rank",
    "group_rank",
    "world_rank",
    "process_index",
    "local_process_index",
    "is_master",
    "is_main",
    "is_main_process",
    "is_local_main_process",
    "master_process",
    "is_rank_zero",
    "is_rank0",
    "is_chief",
    "is_leader",
    "is_global_zero",
    "is_local_zero",
    "is_world_process_zero",
    "is_local_process_zero",
];

/// Name suffix that marks a rank (`src_rank`, `peer_rank`, `data_parallel_rank`).
pub const RANK_NAME_SUFFIX: &str = "_rank";

/// Last segment of calls that return the rank id or a rank-derived flag
/// (`dist.get_rank()`, `hvd.local_rank()`, `accelerator.is_main_process()`, `xm.get_ordinal()`).
pub const RANK_CALLS: &[&str] = &[
    "get_rank",
    "get_local_rank",
    "get_global_rank",
    "get_group_rank",
    "get_node_local_rank",
    "get_ordinal",
    "get_local_ordinal",
    "rank",
    "local_rank",
    "is_main_process",
    "is_local_main_process",
    "is_master",
    "is_rank_zero",
    "is_global_zero",
    // The CUDA device index is the local rank under torchrun's one-GPU-per-process layout.
    "current_device",
];

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

/// Last segment of calls whose result is the same on every rank of a job.
pub const RANK_INVARIANT_CALLS: &[&str] = &[
    "get_world_size",
    "is_initialized",
    "is_available",
    "get_backend",
    "is_nccl_available",
    "is_gloo_available",
    "is_torchelastic_launched",
];

/// Names and attributes whose value is the same on every rank (`world_size`, `ctx.world_size`).
pub const RANK_INVARIANT_NAMES: &[&str] = &["world_size", "num_replicas"];

/// Words of variable names that hold rank-local data (losses, metrics, batches, shards).
pub const LOCAL_DATA_WORDS: &[&str] = &[
    "loss",
    "losses",
    "metric",
    "metrics",
    "grad",
    "grads",
    "gradient",
    "gradients",
    "batch",
    "batches",
    "data",
    "input",
    "inputs",
    "target",
    "targets",
    "label",
    "labels",
    "logits",
    "output",
    "outputs",
    "pred",
    "preds",
    "prediction",
    "predictions",
    "acc",
    "accuracy",
    "sample",
    "samples",
    "example",
    "examples",
    "token",
    "tokens",
    "reward",
    "rewards",
    "norm",
    "score",
    "scores",
    "nan",
    "nans",
    "inf",
    "infs",
    "finite",
    "overflow",
    "loader",
    "dataloader",
    "dataset",
    "iterator",
    "sampler",
    "shard",
    "local",
    "lengths",
    "images",
];

/// Last words that turn a data word into a shape or a type (`batch_size`, `data_dtype`,
/// `loss_fn`): those are configuration, the same on every rank.
pub const NON_DATA_LAST_WORDS: &[&str] =
    &["size", "sizes", "dim", "dims", "dtype", "type", "device", "fn", "func", "cls", "class"];

/// Last segment of calls whose result depends on their arguments only (builtins, tensor
/// constructors): a call to one of them with constant arguments is a constant.
pub const PURE_CALLS: &[&str] = &[
    "len",
    "range",
    "int",
    "float",
    "bool",
    "str",
    "abs",
    "min",
    "max",
    "sum",
    "round",
    "list",
    "tuple",
    "dict",
    "set",
    "sorted",
    "reversed",
    "enumerate",
    "zip",
    "isinstance",
    "divmod",
    "pow",
    "tensor",
    "as_tensor",
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "ceil",
    "floor",
    "sqrt",
    "log",
    "exp",
];

/// Last segment of calls whose result depends on the tensor or data they inspect.
pub const LOCAL_DATA_CALLS: &[&str] = &[
    "isfinite",
    "isnan",
    "isinf",
    "isneginf",
    "isposinf",
    "item",
    "tolist",
    "numel",
    "nonzero",
    "count_nonzero",
    "any",
    "all",
    "next",
    "anext",
    "clip_grad_norm_",
];

/// Words in a callee's name that mark a forward pass or a loss computation on local data
/// (`model(batch)`, `self.criterion(out, y)`, `compute_loss(...)`).
pub const MODEL_CALLEE_WORDS: &[&str] = &[
    "model",
    "net",
    "criterion",
    "loss",
    "forward",
    "evaluate",
    "validate",
    "predict",
    "generate",
    "policy",
];

/// First words of callees that build or fetch a model rather than run it (`build_model()`).
pub const FACTORY_WORDS: &[&str] =
    &["build", "create", "make", "get", "load", "init", "setup", "wrap", "prepare", "save"];

/// Dotted expressions that read the process environment or host (`os.environ`, `sys.argv`).
pub const ENVIRONMENT_VALUES: &[&str] = &["os.environ", "environ", "sys.platform", "sys.argv"];

/// Prefixes of dotted callees that read the environment, the host, the file system or a
/// configuration file.
pub const ENVIRONMENT_CALL_PREFIXES: &[&str] = &[
    "os.getenv",
    "getenv",
    "os.environ.",
    "socket.",
    "platform.",
    "os.path.",
    "os.uname",
    "os.listdir",
    "os.scandir",
    "os.stat",
    "os.cpu_count",
    "os.getpid",
    "getpass.",
    "psutil.",
    "shutil.",
    "glob.",
    "pathlib.",
    "Path",
    "torch.cuda.device_count",
    "torch.cuda.get_device_name",
    "torch.cuda.get_device_properties",
    "torch.cuda.get_device_capability",
    "torch.cuda.mem_get_info",
    "torch.cuda.memory_",
    "torch.cuda.max_memory_",
    "torch.cuda.is_available",
    "multiprocessing.cpu_count",
    "open",
    "json.load",
    "yaml.",
    "toml.load",
    "tomllib.load",
    "configparser.",
    "OmegaConf.",
];

/// Last segment of method calls that query the file system or host (`ckpt.exists()`).
pub const ENVIRONMENT_METHODS: &[&str] = &[
    "exists",
    "is_file",
    "is_dir",
    "isfile",
    "isdir",
    "getsize",
    "getmtime",
    "read_text",
    "read_bytes",
    "gethostname",
    "getfqdn",
    "getenv",
];

/// Names whose attributes and items are configuration reads (`cfg.log_every`, `args.debug`).
pub const CONFIG_ROOTS: &[&str] =
    &["config", "cfg", "conf", "settings", "hparams", "opts", "options", "args", "flags", "FLAGS"];

/// Dotted-callee suffixes that read a clock.
pub const TIME_CALL_SUFFIXES: &[&str] = &[
    "time.time",
    "time.time_ns",
    "datetime.now",
    "datetime.utcnow",
    "datetime.today",
    "date.today",
];

/// Last segment of calls that read a clock (also when imported bare: `perf_counter()`).
pub const TIME_CALLS: &[&str] = &[
    "perf_counter",
    "perf_counter_ns",
    "monotonic",
    "monotonic_ns",
    "time_ns",
    "process_time",
    "default_timer",
    "elapsed_time",
];

/// Words of variable names that hold a time.
pub const TIME_WORDS: &[&str] = &["elapsed", "deadline", "timestamp", "walltime", "now"];

/// Prefixes of dotted callees that draw random numbers.
pub const RANDOM_CALL_PREFIXES: &[&str] =
    &["random.", "np.random.", "numpy.random.", "secrets.", "uuid.uuid1", "uuid.uuid4", "rng."];

/// Last segment of `torch.*` calls that draw random numbers.
pub const TORCH_RANDOM_CALLS: &[&str] = &[
    "rand",
    "randn",
    "randint",
    "randperm",
    "rand_like",
    "randn_like",
    "randint_like",
    "bernoulli",
    "multinomial",
    "normal",
    "poisson",
];

/// Words of variable names that hold random draws or generators.
pub const RANDOM_WORDS: &[&str] = &["rng", "random", "rand", "noise"];

/// Last segment of calls that read the exception being handled.
pub const EXCEPTION_CALLS: &[&str] = &["exc_info", "format_exc", "exception"];

/// `torch.distributed` collectives and point-to-point calls (last segment of the callee).
pub const COLLECTIVES: &[&str] = &[
    "all_reduce",
    "all_reduce_coalesced",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_gather_coalesced",
    "_all_gather_base",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "_reduce_scatter_base",
    "broadcast",
    "broadcast_object_list",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "monitored_barrier",
    "gather",
    "gather_object",
    "scatter",
    "scatter_object_list",
    "send",
    "recv",
    "isend",
    "irecv",
    "batch_isend_irecv",
    "send_object_list",
    "recv_object_list",
];

/// Calls that issue collectives indirectly (DDP/FSDP gradient hooks, FSDP norm clipping).
pub const IMPLICIT_COLLECTIVES: &[&str] =
    &["backward", "clip_grad_norm_", "full_tensor", "redistribute"];

/// Keyword arguments that only place a value on a device (`device_ids=[local_rank]`): the
/// value is the same on every rank wherever it lives.
pub const DEVICE_KEYWORDS: &[&str] =
    &["device", "device_ids", "output_device", "map_location", "non_blocking", "memory_format"];

/// Methods that move a tensor or module between devices; only a dtype argument changes the
/// value (`x.to(comm_dtype)`), a device argument (`x.to(local_rank)`) does not.
pub const PLACEMENT_METHODS: &[&str] = &["to", "cuda", "xpu", "npu", "mps", "cpu", "pin_memory"];

/// `torch.<name>` dtypes.
pub const TORCH_DTYPES: &[&str] = &[
    "float",
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "half",
    "double",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "long",
    "short",
    "bool",
    "complex64",
    "complex128",
    "float8_e4m3fn",
    "float8_e5m2",
];

/// Rank-name endings of collections indexed by rank (`bytes_per_rank`), which are the same
/// on every rank unless indexed by the rank itself.
const PER_RANK_SUFFIXES: &[&str] = &["per_rank", "by_rank", "for_each_rank"];

/// Snake-case words of a name, lowercased (`valLoss` stays one word).
pub fn words(name: &str) -> impl Iterator<Item = String> + '_ {
    name.split('_').filter(|w| !w.is_empty()).map(str::to_ascii_lowercase)
}

/// True when a variable or attribute name holds the rank id or a rank flag.
pub fn is_rank_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    RANK_NAMES.contains(&lower.as_str())
        || (lower.ends_with(RANK_NAME_SUFFIX)
            && !PER_RANK_SUFFIXES.iter().any(|s| lower.ends_with(s)))
}

/// True when one of `name`'s words is in `list`.
pub fn has_word(name: &str, list: &[&str]) -> bool {
    words(name).any(|w| list.contains(&w.as_str()))
}

/// True when a variable name reads as rank-local data (`val_loss`, `train_loader`), and not as
/// a shape, type or function of it (`batch_size`, `loss_fn`) or a rank (`local_rank`).
pub fn is_data_name(name: &str) -> bool {
    let last = words(name).last();
    has_word(name, LOCAL_DATA_WORDS)
        && !last.is_some_and(|w| NON_DATA_LAST_WORDS.contains(&w.as_str()))
        && !is_rank_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_names() {
        for n in ["rank", "local_rank", "LOCAL_RANK", "dp_rank", "is_main_process"] {
            assert!(is_rank_name(n), "{n}");
        }
        for n in
            ["world_size", "ranks", "rank_loss", "num_ranks", "bytes_per_rank", "_shards_by_rank"]
        {
            assert!(!is_rank_name(n), "{n}");
        }
    }

    #[test]
    fn words_split_snake_case() {
        assert!(has_word("val_loss", LOCAL_DATA_WORDS));
        assert!(has_word("train_loader", LOCAL_DATA_WORDS));
        assert!(!has_word("step", LOCAL_DATA_WORDS));
        assert!(!has_word("lossy", LOCAL_DATA_WORDS));
        assert!(is_data_name("grad_norm"));
        assert!(!is_data_name("batch_size"));
        assert!(!is_data_name("loss_fn"));
    }
}
