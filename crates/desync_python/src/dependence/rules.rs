//! The classification rules, one method per kind of expression. Calls are matched on their
//! dotted callee against [`super::patterns`]; anything else passes its operands' dependence
//! through (`len(batch) > 0` depends on what `batch` depends on).

use ruff_python_ast::{Expr, ExprAttribute, ExprCall, ExprSubscript};
use ruff_text_size::{Ranged, TextSize};

use super::bindings::{self, Binding, Source};
use super::patterns::{self as p, has_word, is_rank_name};
use super::{Classifier, MAX_TRACE};
use crate::expr::{self, children, dotted, last_segment, names_dtype, snippet};
use crate::tree::MAX_DEPTH;
use crate::types::DependenceKind::{
    Environment, Exception, LocalData, Randomness, RankId, Time, Unknown,
};

impl<'m> Classifier<'m> {
    pub(super) fn visit(&mut self, e: &Expr, src: &str, at: TextSize, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match e {
            Expr::Name(n) => self.name(n.id.as_str(), at),
            Expr::Attribute(a) => self.attribute(e, a, src, at, depth),
            Expr::Subscript(s) => self.subscript(e, s, src, at, depth),
            Expr::Call(c) => self.call(e, c, src, at, depth),
            // A lambda's body runs later, elsewhere; a comprehension's loop variables are its own.
            Expr::Lambda(_) => {}
            _ => {
                for child in children(e) {
                    self.visit(child, src, at, depth + 1);
                }
            }
        }
    }

    fn quietly(&mut self, e: &Expr, src: &str, at: TextSize, depth: usize) {
        self.quiet += 1;
        self.visit(e, src, at, depth + 1);
        self.quiet -= 1;
    }

    fn name(&mut self, name: &str, at: TextSize) {
        if p::RANK_INVARIANT_NAMES.contains(&name) {
            return;
        }
        let (traced, loop_variable) = self.trace(name, at);
        // `for src_rank in range(world_size)` walks every rank in the same order everywhere:
        // a loop variable is what its iterable is, whatever its name says.
        if is_rank_name(name) && !loop_variable {
            self.add(RankId, format!("`{name}`"));
        }
        if p::is_data_name(name) {
            self.add(LocalData, format!("`{name}`"));
        }
        if has_word(name, p::TIME_WORDS) {
            self.add(Time, format!("`{name}`"));
        }
        if has_word(name, p::RANDOM_WORDS) {
            self.add(Randomness, format!("`{name}`"));
        }
        if let Some(unknown) = traced {
            self.unknown(unknown);
        }
    }

    /// Follows `name` to its binding; adds what the bound value depends on, with the binding as
    /// evidence. Returns the `Unknown` evidence to use when nothing better turns up, and
    /// whether the name is a loop variable.
    fn trace(&mut self, name: &str, at: TextSize) -> (Option<String>, bool) {
        let Some(binding) = bindings::lookup(self.module, self.scope, name, at) else {
            return (Some(format!("`{name}` (not assigned in this file)")), false);
        };
        let loop_variable = matches!(binding.source, Source::LoopCounter | Source::LoopItem(_));
        (self.trace_binding(name, binding), loop_variable)
    }

    fn trace_binding(&mut self, name: &str, binding: Binding<'m>) -> Option<String> {
        if self.tracing.contains(&binding.at) {
            return None;
        }
        if self.tracing.len() >= MAX_TRACE {
            return Some(format!("`{name}` (assigned {})", self.line_phrase(binding.at)));
        }
        if matches!(binding.source, Source::Parameter) && !self.parameters.iter().any(|p| p == name)
        {
            self.parameters.push(name.to_owned());
        }
        let described = self.describe(name, &binding);
        let outer_scope = std::mem::replace(&mut self.scope, binding.scope);
        self.tracing.push(binding.at);
        let (kinds, unknown) = self.isolated(|c| c.bound_value(name, &binding));
        self.tracing.pop();
        self.scope = outer_scope;
        for d in kinds {
            self.add(d.kind, format!("`{name}` ({described})"));
        }
        match binding.source {
            Source::Parameter => Some(format!("`{name}` ({described})")),
            _ => unknown.map(|_| format!("`{name}` ({described})")),
        }
    }

    fn bound_value(&mut self, name: &str, binding: &Binding<'_>) {
        let src = self.module.source();
        match binding.source {
            Source::Value(v) | Source::LoopItem(v) | Source::WithItem(v) => {
                self.visit(v, src, binding.at, 0);
            }
            Source::Augmented(v) => {
                self.visit(v, src, binding.at, 0);
                self.name(name, binding.at);
            }
            Source::Caught => self.add(Exception, "a caught exception".to_owned()),
            Source::LoopCounter | Source::Definition | Source::Parameter => {}
        }
    }

    fn describe(&self, name: &str, binding: &Binding<'_>) -> String {
        let text = |e: &Expr| snippet(self.module.text(e.range()));
        let at = self.line_phrase(binding.at);
        match binding.source {
            Source::Value(v) => format!("assigned from `{}` {at}", text(v)),
            Source::Augmented(v) => format!("accumulated from `{}` {at}", text(v)),
            Source::LoopItem(v) => format!("loop variable over `{}` {at}", text(v)),
            Source::WithItem(v) => format!("bound by `with {}` {at}", text(v)),
            Source::Caught => format!("the exception caught {at}"),
            Source::LoopCounter => format!("loop counter {at}"),
            Source::Definition => format!("`{name}` defined {at}"),
            Source::Parameter => match binding.scope.function {
                Some(def) => format!("parameter of `{}`", def.name.id),
                None => "parameter".to_owned(),
            },
        }
    }

    fn line_phrase(&self, at: TextSize) -> String {
        format!("at line {}", self.module.line_of(at))
    }

    fn attribute(&mut self, e: &Expr, a: &ExprAttribute, src: &str, at: TextSize, depth: usize) {
        let text = format!("`{}`", snippet(src_text(src, e)));
        let attr = a.attr.id.as_str();
        if is_rank_name(attr) {
            return self.add(RankId, text);
        }
        if p::RANK_INVARIANT_NAMES.contains(&attr) {
            return;
        }
        let path = dotted(e);
        if path.as_deref().is_some_and(|d| p::ENVIRONMENT_VALUES.contains(&d)) {
            if self.uniform_config && path.as_deref() == Some("sys.argv") {
                return;
            }
            return self.add(Environment, text);
        }
        if is_config_read(e) {
            if self.uniform_config {
                return;
            }
            return self.add(Environment, format!("{text} (configuration)"));
        }
        if self.is_imported_root(e, at) {
            // `dist.ReduceOp.SUM`, `torch.float32`: module constants, the same on every rank.
            return;
        }
        let before = self.found.len();
        self.quietly(&a.value, src, at, depth);
        if p::is_data_name(attr) {
            self.add(LocalData, text.clone());
        }
        if has_word(attr, p::TIME_WORDS) {
            self.add(Time, text.clone());
        }
        if self.found.len() == before {
            self.unknown(text);
        }
    }

    fn is_imported_root(&self, e: &Expr, at: TextSize) -> bool {
        let Some(root) = expr::root_name(e) else { return false };
        matches!(
            bindings::lookup(self.module, self.scope, root, at).map(|b| b.source),
            Some(Source::Definition)
        )
    }

    fn subscript(&mut self, e: &Expr, s: &ExprSubscript, src: &str, at: TextSize, depth: usize) {
        let text = format!("`{}`", snippet(src_text(src, e)));
        if dotted(&s.value).is_some_and(|d| p::ENVIRONMENT_VALUES.contains(&d.as_str())) {
            let kind = if is_rank_env(&s.slice) { RankId } else { Environment };
            return self.add(kind, text);
        }
        if is_config_read(e) {
            if self.uniform_config {
                return;
            }
            return self.add(Environment, format!("{text} (configuration)"));
        }
        self.visit(&s.value, src, at, depth + 1);
        self.visit(&s.slice, src, at, depth + 1);
    }

    fn call(&mut self, e: &Expr, c: &ExprCall, src: &str, at: TextSize, depth: usize) {
        let text = format!("`{}`", snippet(src_text(src, e)));
        let path = dotted(&c.func).unwrap_or_default();
        let last = last_segment(&c.func).unwrap_or_default();
        if let Some(kind) = direct_call_kind(&path, last, c) {
            if kind != Unknown {
                self.add(kind, text);
            }
            return;
        }
        let before = self.found.len();
        // Only a call *of* the model is a forward pass: `model.parameters()` and
        // `build_model()` give values that are replicated on every rank. Its output is local
        // data first of all, whatever its inputs depend on.
        let forward = has_word(last, p::MODEL_CALLEE_WORDS)
            && !p::words(last).next().is_some_and(|w| p::FACTORY_WORDS.contains(&w.as_str()));
        if forward {
            self.add(LocalData, format!("{text} (model or loss output)"));
        }
        // Where a value lives is not what it is: `model.to(local_rank)` and
        // `DDP(model, device_ids=[local_rank])` hold the same values on every rank.
        let placement =
            matches!(&*c.func, Expr::Attribute(_)) && p::PLACEMENT_METHODS.contains(&last);
        for arg in c.arguments.args.iter().filter(|a| !placement || names_dtype(a)) {
            self.visit(arg, src, at, depth + 1);
        }
        for kw in &c.arguments.keywords {
            if kw.arg.as_ref().is_some_and(|k| p::DEVICE_KEYWORDS.contains(&k.as_str())) {
                continue;
            }
            self.visit(&kw.value, src, at, depth + 1);
        }
        if let Expr::Attribute(a) = &*c.func {
            self.quietly(&a.value, src, at, depth);
        }
        // Inspections (`isfinite`, `.item()`) come last: what they inspect says more.
        if p::LOCAL_DATA_CALLS.contains(&last) {
            self.add(LocalData, text.clone());
        }
        if self.found.len() == before && !p::PURE_CALLS.contains(&last) {
            self.unknown(format!("{text} (result of a call desync does not follow)"));
        }
    }
}

/// Calls whose result kind is decided by the callee alone. `Some(Unknown)` marks calls that
/// are rank-invariant (`dist.get_world_size()`): nothing to add, nothing to look into.
fn direct_call_kind(path: &str, last: &str, c: &ExprCall) -> Option<crate::types::DependenceKind> {
    if p::RANK_CALLS.contains(&last) {
        return Some(RankId);
    }
    if p::RANK_INVARIANT_CALLS.contains(&last) {
        return Some(Unknown);
    }
    let env_get = ["os.getenv", "getenv", "os.environ.get", "environ.get"].contains(&path);
    if env_get {
        let rank = c.arguments.args.first().is_some_and(is_rank_env);
        return Some(if rank { RankId } else { Environment });
    }
    if path == "time"
        || p::TIME_CALLS.contains(&last)
        || p::TIME_CALL_SUFFIXES.iter().any(|s| path == *s || path.ends_with(&format!(".{s}")))
    {
        return Some(Time);
    }
    let root = path.split('.').next().unwrap_or_default();
    if p::RANDOM_CALL_PREFIXES.iter().any(|pre| path.starts_with(pre))
        || (root == "torch" && p::TORCH_RANDOM_CALLS.contains(&last))
        || path.split('.').rev().skip(1).any(|seg| has_word(seg, p::RANDOM_WORDS))
    {
        return Some(Randomness);
    }
    let env_prefix = p::ENVIRONMENT_CALL_PREFIXES
        .iter()
        .any(|pre| if pre.ends_with(['.', '_']) { path.starts_with(pre) } else { path == *pre });
    if env_prefix || p::ENVIRONMENT_METHODS.contains(&last) {
        return Some(Environment);
    }
    if p::EXCEPTION_CALLS.contains(&last) {
        return Some(Exception);
    }
    None
}

/// `os.environ["RANK"]`-style keys that launchers set per rank.
fn is_rank_env(key: &Expr) -> bool {
    matches!(key, Expr::StringLiteral(s) if p::RANK_ENV_VARS.contains(&s.value.to_str()))
}

/// `cfg.x`, `args["x"]`, `self.config.x`: reads of a configuration object.
fn is_config_read(e: &Expr) -> bool {
    let base = match e {
        Expr::Attribute(a) => &*a.value,
        Expr::Subscript(s) => &*s.value,
        _ => return false,
    };
    let last = match base {
        Expr::Name(n) => n.id.as_str(),
        Expr::Attribute(a) => a.attr.id.as_str(),
        _ => return false,
    };
    p::CONFIG_ROOTS.contains(&last) && expr::root_name(base).is_some()
}

fn src_text<'s>(src: &'s str, e: &Expr) -> &'s str {
    let r = e.range();
    src.get(r.start().to_usize()..r.end().to_usize()).unwrap_or("")
}
