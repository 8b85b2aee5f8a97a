//! What desync knows about PyTorch and the frameworks on top of it, as data
//! (`frameworks.toml`, compiled in): which qualified names issue collectives and what Flight
//! Recorder records for them, which give the rank id or a rank flag, which are the same on
//! every rank, which read the host, the clock or a random generator, which are data sources,
//! and the attribute types and hook parameters that let a call in user code be resolved to a
//! qualified name (`self.trainer.is_global_zero` in a `LightningModule`). The bridge to code and
//! `desync lint` read the same table, so a framework added here is known to both.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde::Deserialize;

const TABLE: &str = include_str!("frameworks.toml");

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
    /// The call issues a collective only when this keyword argument is true (`sync_dist`).
    pub when_keyword: Option<String>,
    /// For data sources: "uniform" when the length is the same on every rank by construction.
    pub length: Option<String>,
    /// For payload setup: what it changes in later collectives (`dtype`, `size`, `group`).
    pub affects: Option<String>,
    /// Where the fact comes from: a file of the package and its version.
    pub source: String,
}

impl Api {
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
}

/// The table, indexed.
#[derive(Debug)]
pub struct Knowledge {
    /// Longest prefix first.
    aliases: Vec<(String, String)>,
    conventional: BTreeMap<String, String>,
    apis: Vec<Api>,
    by_name: HashMap<String, usize>,
    types: HashMap<String, TypeInfo>,
    hooks: Vec<Hook>,
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
        let mut by_name = HashMap::new();
        for (i, api) in raw.api.iter().enumerate() {
            for name in &api.names {
                by_name.insert(name.clone(), i);
            }
        }
        let types = raw.types.into_iter().map(|t| (t.name.clone(), t)).collect();
        Ok(Knowledge {
            aliases,
            conventional: raw.conventional_imports,
            apis: raw.api,
            by_name,
            types,
            hooks: raw.hook,
        })
    }

    /// `pytorch_lightning.LightningModule` → `lightning.pytorch.LightningModule`: the longest
    /// alias that is a whole-segment prefix of `name` is replaced.
    pub fn canonical(&self, name: &str) -> String {
        for (from, to) in &self.aliases {
            if let Some(rest) = name.strip_prefix(from.as_str())
                && (rest.is_empty() || rest.starts_with('.'))
            {
                return format!("{to}{rest}");
            }
        }
        name.to_owned()
    }

    /// The module a name conventionally stands for when a file uses it without binding it
    /// (`dist` → `torch.distributed`); the name itself otherwise.
    pub fn unbound(&self, name: &str) -> String {
        self.conventional.get(name).map_or_else(|| self.canonical(name), |m| self.canonical(m))
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
        let prefix = format!("{class}.");
        self.types.contains_key(class) || self.by_name.keys().any(|k| k.starts_with(&prefix))
    }

    /// The hooks the framework calls on a subclass of `base` under the name `method`.
    pub fn hooks<'a>(&'a self, base: &'a str, method: &'a str) -> impl Iterator<Item = &'a Hook> {
        self.hooks
            .iter()
            .filter(move |h| h.class == base && h.methods.iter().any(|m| m == "*" || m == method))
    }
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
        for (from, to) in &k.aliases {
            assert_ne!(from, to.as_str().get(..from.len()).unwrap_or(""), "alias {from} loops");
        }
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
}
