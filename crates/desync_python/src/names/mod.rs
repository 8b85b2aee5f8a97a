//! Layer 2, names: what a name refers to — scopes and bindings ([`bindings`]), the user's
//! project of sibling modules and packages ([`project`]), and what a framework's callee or
//! attribute *is* ([`knowledge`], the table of `frameworks.toml`). Reads only [`crate::syntax`].

pub(crate) mod bindings;
pub mod knowledge;
pub(crate) mod project;
