//! Layer 1, syntax: one parsed Python file and what its text and tree alone say — the module
//! and its line index ([`module`]), statement navigation ([`tree`]), expression helpers
//! ([`expr`]), the nesting and token limits checked before parsing ([`nesting`]), the public
//! vocabulary of answers ([`types`]) and the word lists of text gates ([`patterns`]).
//! Nothing here knows what a name refers to, what a value is, or what a call issues.

pub(crate) mod code_objects;
pub(crate) mod expr;
pub(crate) mod module;
pub(crate) mod nesting;
pub mod patterns;
pub(crate) mod tree;
pub(crate) mod types;
