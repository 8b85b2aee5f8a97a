//! Qualified names: what a callee or attribute in user code *is*, whatever the user called it.
//! `dist.all_reduce` after `import torch.distributed as dist` is `torch.distributed.all_reduce`;
//! `self.trainer.is_global_zero` in a subclass of `pl.LightningModule` is
//! `lightning.pytorch.Trainer.is_global_zero` (the table gives `LightningModule.trainer` its
//! type); `shard_batches` imported from the project's `common.py` is that function.

use std::sync::Arc;

use ruff_python_ast::{Expr, ExprCall, Stmt, StmtClassDef, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};

use super::value::Eval;
use crate::names::bindings::{self, Scope, Source};
use crate::names::knowledge::{Role, knowledge};
use crate::syntax::module::Module;
use crate::syntax::tree::MAX_DEPTH;

/// A function of the project: where its `def` is.
#[derive(Clone)]
pub(crate) struct FnRef {
    /// `None`: the module being evaluated.
    pub module: Option<Arc<Module>>,
    pub def: TextSize,
    /// Called through an instance (`self.helper(x)`): the first parameter is the receiver.
    pub is_method: bool,
}

/// A class: a framework class by qualified name, or one of the project's own.
#[derive(Clone, Default)]
pub(crate) struct ClassRef {
    pub qualified: Option<String>,
    /// Start of the project class's `class` statement.
    pub local: Option<TextSize>,
    /// The module holding `local`; `None`: the module being evaluated.
    pub module: Option<Arc<Module>>,
}

#[derive(Clone)]
pub(crate) enum Sym {
    /// A library module, function, class or attribute by canonical qualified name.
    Path(String),
    /// A module of the project.
    Module(Arc<Module>),
    Function(FnRef),
    Class(ClassRef),
    Instance(ClassRef),
    Unknown,
}

impl<'m> Eval<'_, 'm> {
    pub(crate) fn resolve(&mut self, e: &Expr, at: TextSize) -> Sym {
        self.resolve_depth(e, at, 0)
    }

    /// For a call of a forwarder of the table (`asyncio.to_thread(dist.broadcast_object_list,
    /// objs, src=0)`), the call it makes (`dist.broadcast_object_list(objs, src=0)`), placed
    /// where the forwarder's call is.
    pub(crate) fn forwarded(&mut self, c: &ExprCall) -> Option<ExprCall> {
        let segment = crate::syntax::expr::last_segment(&c.func)?;
        if !knowledge().may_forward(segment) {
            return None;
        }
        let Sym::Path(p) = self.resolve(&c.func, c.start()) else { return None };
        let target = knowledge().forwarder_target(&p)?;
        let func = c.arguments.args.get(target)?;
        if matches!(func, Expr::Starred(_)) {
            return None;
        }
        Some(ExprCall {
            node_index: ruff_python_ast::AtomicNodeIndex::default(),
            range_start: c.range_start,
            func: Box::new(func.clone()),
            arguments: ruff_python_ast::Arguments {
                range: c.arguments.range,
                node_index: ruff_python_ast::AtomicNodeIndex::default(),
                args: c.arguments.args[target + 1..].to_vec().into_boxed_slice(),
                keywords: c.arguments.keywords.clone(),
            },
        })
    }

    fn resolve_depth(&mut self, e: &Expr, at: TextSize, depth: usize) -> Sym {
        if depth > MAX_DEPTH / 4 {
            return Sym::Unknown;
        }
        match e {
            Expr::Name(n) => self.resolve_name(n.id.as_str(), at, depth),
            // `super().save(model)` in a method: the method a base class of the enclosing
            // class defines (the project's bases first, then the table's framework bases).
            Expr::Attribute(a) if is_super_call(&a.value) => self.base_member(a.attr.id.as_str()),
            Expr::Attribute(a) => {
                let base = self.resolve_depth(&a.value, at, depth + 1);
                self.member(base, a.attr.id.as_str(), depth)
            }
            Expr::Call(c) => match self.resolve_depth(&c.func, at, depth + 1) {
                Sym::Class(class) => Sym::Instance(class),
                Sym::Path(p) if is_class_path(&p) => {
                    Sym::Instance(ClassRef { qualified: Some(p), ..ClassRef::default() })
                }
                Sym::Path(p) => returned(&p, 0),
                _ => Sym::Unknown,
            },
            // `_gather_objects if dist.is_initialized() else None`: what a call of it runs,
            // when it runs anything.
            Expr::If(i) => match self.resolve_depth(&i.body, at, depth + 1) {
                Sym::Unknown => self.resolve_depth(&i.orelse, at, depth + 1),
                sym => sym,
            },
            _ => Sym::Unknown,
        }
    }

    fn resolve_name(&mut self, name: &str, at: TextSize, depth: usize) -> Sym {
        let Some(binding) = bindings::lookup(self.module, self.scope, name, at) else {
            // A builtin (`open`, `len`), or a module a star import or the snippet's context
            // brings in: taken as the name it is written as.
            return Sym::Path(knowledge().unbound(name));
        };
        match binding.source {
            Source::Import { module, name: imported, level } => {
                let key = (super::key_of(self.module), binding.at);
                let known = self.cx.imports.borrow().get(&key).and_then(|names| {
                    names.iter().find(|(n, _)| &**n == name).map(|(_, sym)| sym.clone())
                });
                known.unwrap_or_else(|| {
                    let sym = self.import(module, imported, level);
                    self.cx
                        .imports
                        .borrow_mut()
                        .entry(key)
                        .or_default()
                        .push((name.into(), sym.clone()));
                    sym
                })
            }
            Source::Function(def) => {
                Sym::Function(FnRef { module: None, def: def.start(), is_method: false })
            }
            Source::Class(class) => {
                Sym::Class(ClassRef { local: Some(class.start()), ..ClassRef::default() })
            }
            Source::Parameter => self.parameter_type(name, binding.scope, depth),
            Source::Value(v) | Source::WithItem(v) => {
                let outer = std::mem::replace(&mut self.scope, binding.scope);
                let sym = self.resolve_depth(v, binding.at, depth + 1);
                self.scope = outer;
                sym
            }
            // `engine, _, loader, _ = deepspeed.initialize(...)`: what the table says the
            // call returns in that position.
            Source::Element(Expr::Call(c), i) => {
                let outer = std::mem::replace(&mut self.scope, binding.scope);
                let sym = self.resolve_depth(&c.func, binding.at, depth + 1);
                self.scope = outer;
                match sym {
                    Sym::Path(p) => returned(&p, i),
                    _ => Sym::Unknown,
                }
            }
            _ => Sym::Unknown,
        }
    }

    /// An imported name: a module or definition of the project, else a library path. A
    /// collective of the table, or a module holding some (`torch.distributed`,
    /// `deepspeed.comm`), is that library path even where the project holds its source (linting
    /// a framework itself): the table says what its calls issue, which the wrappers'
    /// code does not show (`cdb.all_reduce` on a backend chosen at run time).
    fn import(&mut self, module: &str, imported: Option<&str>, level: u32) -> Sym {
        let full = || match imported {
            Some(name) if !module.is_empty() => format!("{module}.{name}"),
            Some(name) => name.to_owned(),
            None => module.to_owned(),
        };
        let written = if module.is_empty() { imported.unwrap_or_default() } else { module };
        if level == 0 && knowledge().may_describe_collectives(written) {
            let canonical = knowledge().canonical(&full());
            if knowledge().describes_collectives(&canonical) {
                return Sym::Path(canonical);
            }
        }
        if let Some(project) = self.cx.project() {
            if let Some(m) = project.import(self.module, module, level) {
                let m = self.cx.keep(m);
                return match imported {
                    None => Sym::Module(m),
                    Some(name) => self.exported(&m, name, 0).unwrap_or_else(|| {
                        // `from trainer import metrics`: a submodule.
                        let sub = if module.is_empty() {
                            name.to_owned()
                        } else {
                            format!("{module}.{name}")
                        };
                        project
                            .import(self.module, &sub, level)
                            .map_or(Sym::Unknown, |s| Sym::Module(self.cx.keep(s)))
                    }),
                };
            }
            if let Some(name) = imported {
                let sub =
                    if module.is_empty() { name.to_owned() } else { format!("{module}.{name}") };
                if let Some(m) = project.import(self.module, &sub, level) {
                    return Sym::Module(self.cx.keep(m));
                }
            }
        }
        if level > 0 {
            // A relative import outside the project's view.
            return Sym::Unknown;
        }
        Sym::Path(knowledge().canonical(&full()))
    }

    /// What module `m` offers as `name`: a function or class it defines, or one it imports at
    /// its top level and so re-exports (`from .file_helpers import get_file` in a package's
    /// `__init__.py`, followed up to [`MAX_REEXPORTS`] modules deep).
    fn exported(&mut self, m: &Arc<Module>, name: &str, hops: usize) -> Option<Sym> {
        if let Some(sym) = top_level(m, name) {
            return Some(sym);
        }
        if hops >= MAX_REEXPORTS {
            return None;
        }
        let (from, imported, level) = m.body().iter().find_map(|stmt| match stmt {
            Stmt::ImportFrom(i) => i.names.iter().find_map(|alias| {
                let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                (bound.id.as_str() == name && alias.name.id.as_str() != "*").then(|| {
                    let from = i.module.as_ref().map_or("", |x| x.id.as_str());
                    (from, alias.name.id.as_str(), i.level)
                })
            }),
            _ => None,
        })?;
        let project = self.cx.project()?;
        match project.import(m, from, level) {
            Some(target) => {
                let target = self.cx.keep(target);
                self.exported(&target, imported, hops + 1)
            }
            // A library name re-exported by the project (`from torch.distributed import
            // barrier`).
            None if level == 0 && !from.is_empty() => {
                Some(Sym::Path(knowledge().canonical(&format!("{from}.{imported}"))))
            }
            None => None,
        }
    }

    /// `self` in a method, an annotated parameter, or a parameter a framework hook fills.
    fn parameter_type(&mut self, name: &str, scope: Scope<'_>, depth: usize) -> Sym {
        let Some(def) = scope.function else { return Sym::Unknown };
        let params: Vec<&ruff_python_ast::Parameter> =
            def.parameters.iter_non_variadic_params().map(|p| &p.parameter).collect();
        let Some(index) = params.iter().position(|p| p.name.id.as_str() == name) else {
            return Sym::Unknown;
        };
        let class = class_of(self.module, def);
        if index == 0
            && let Some(class) = class
            && !is_static(def)
        {
            return Sym::Instance(ClassRef { local: Some(class.start()), ..ClassRef::default() });
        }
        if let Some(annotation) = &params[index].annotation {
            // Python evaluates an annotation where the `def` is, not inside the function: in
            // `def __init__(self, dict: dict)` the annotation is the builtin, not the
            // parameter (resolving it in the function's scope looped until the stack ran out).
            let outer = std::mem::replace(&mut self.scope, Scope::module(self.module));
            let sym = self.resolve_depth(annotation, def.start(), depth + 1);
            self.scope = outer;
            match sym {
                Sym::Class(c) => return Sym::Instance(c),
                Sym::Path(p) => {
                    return Sym::Instance(ClassRef { qualified: Some(p), ..ClassRef::default() });
                }
                _ => {}
            }
        }
        if let Some(class) = class
            && index > 0
        {
            let bases = self.class_bases(class);
            for base in &bases {
                for hook in knowledge().hooks(base, def.name.id.as_str()) {
                    if let Some(t) = hook.positional.get(index - 1) {
                        return Sym::Instance(ClassRef {
                            qualified: Some(t.clone()),
                            ..ClassRef::default()
                        });
                    }
                }
            }
        }
        Sym::Unknown
    }

    /// `base.attr`.
    fn member(&mut self, base: Sym, attr: &str, depth: usize) -> Sym {
        match base {
            Sym::Path(p) => Sym::Path(knowledge().canonical(&format!("{p}.{attr}"))),
            Sym::Module(m) => self.exported(&m, attr, 0).unwrap_or(Sym::Unknown),
            Sym::Class(c) | Sym::Instance(c) => self.class_member(&c, attr, depth),
            Sym::Function(_) | Sym::Unknown => Sym::Unknown,
        }
    }

    fn class_member(&mut self, class: &ClassRef, attr: &str, depth: usize) -> Sym {
        if let Some(q) = &class.qualified {
            return framework_member(q, attr);
        }
        let (Some(at), None) = (class.local, &class.module) else {
            // A class of another project module: its methods, without following its bases.
            if let (Some(at), Some(m)) = (class.local, &class.module)
                && let Some(def) = class_at(m, at).and_then(|c| method(c, attr))
            {
                return Sym::Function(FnRef {
                    module: Some(m.clone()),
                    def: def.start(),
                    is_method: true,
                });
            }
            return Sym::Unknown;
        };
        let key = (super::key_of(self.module), at, attr.to_owned());
        if let Some(known) = self.cx.members.borrow().get(&key) {
            return known.clone().unwrap_or(Sym::Unknown);
        }
        self.cx.members.borrow_mut().insert(key.clone(), None);
        let sym = self.own_class_member(at, attr, depth);
        self.cx.members.borrow_mut().insert(key, Some(sym.clone()));
        sym
    }

    /// A method `cls` inherits from a project class (`class RowParallel(Layer)` calling
    /// `self._is_bias_param` defined in `Layer`), bases searched depth first, left to right
    /// (Python's order for hierarchies without diamonds); a base of another module is searched
    /// for its own methods only.
    fn project_base_method(&mut self, cls: &StmtClassDef, attr: &str, depth: usize) -> Option<Sym> {
        if depth > 8 {
            return None;
        }
        for base in cls.bases() {
            match self.resolve(base, cls.start()) {
                Sym::Class(ClassRef { local: Some(at), module: None, .. }) => {
                    let Some(inner) = class_at(self.module, at) else { continue };
                    if let Some(def) = method(inner, attr) {
                        return Some(Sym::Function(FnRef {
                            module: None,
                            def: def.start(),
                            is_method: true,
                        }));
                    }
                    if let Some(found) = self.project_base_method(inner, attr, depth + 1) {
                        return Some(found);
                    }
                }
                Sym::Class(ClassRef { local: Some(at), module: Some(m), .. }) => {
                    if let Some(def) = class_at(&m, at).and_then(|c| method(c, attr)) {
                        return Some(Sym::Function(FnRef {
                            module: Some(m.clone()),
                            def: def.start(),
                            is_method: true,
                        }));
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// `attr` of the bases of the class whose method is being evaluated: what `super().attr`
    /// names there.
    fn base_member(&mut self, attr: &str) -> Sym {
        let Some(cls) = self.scope.function.and_then(|f| class_of(self.module, f)) else {
            return Sym::Unknown;
        };
        self.inherited_member(cls, attr)
    }

    /// `attr` as `cls` inherits it: a method of a project base, else a member of a framework
    /// base the table knows.
    fn inherited_member(&mut self, cls: &'m StmtClassDef, attr: &str) -> Sym {
        if let Some(inherited) = self.project_base_method(cls, attr, 0) {
            return inherited;
        }
        for base in self.class_bases(cls) {
            let sym = framework_member(&base, attr);
            if !matches!(sym, Sym::Unknown) {
                return sym;
            }
        }
        Sym::Unknown
    }

    /// [`Self::class_member`] of a class of the module being evaluated, not memoised.
    fn own_class_member(&mut self, at: TextSize, attr: &str, depth: usize) -> Sym {
        let Some(cls) = class_at(self.module, at) else { return Sym::Unknown };
        if let Some(def) = method(cls, attr) {
            return Sym::Function(FnRef { module: None, def: def.start(), is_method: true });
        }
        let inherited = self.inherited_member(cls, attr);
        if !matches!(inherited, Sym::Unknown) {
            return inherited;
        }
        // `self.accelerator = Accelerator(...)` in `__init__`.
        for stmt in &cls.body {
            let Stmt::FunctionDef(m) = stmt else { continue };
            let Some(self_name) = crate::syntax::tree::first_parameter(m) else { continue };
            let mut values: Vec<&Expr> = Vec::new();
            crate::syntax::tree::walk_scope(&m.body, &mut |s, _| {
                if let Stmt::Assign(a) = s
                    && a.targets.iter().any(|t| matches!(t, Expr::Attribute(ta) if ta.attr.id.as_str() == attr && matches!(&*ta.value, Expr::Name(n) if n.id.as_str() == self_name)))
                {
                    values.push(&a.value);
                }
            });
            for v in values {
                let outer =
                    std::mem::replace(&mut self.scope, Scope { function: Some(m), suite: &m.body });
                let sym = self.resolve_depth(v, v.start(), depth + 1);
                self.scope = outer;
                if !matches!(sym, Sym::Unknown) {
                    return sym;
                }
            }
        }
        Sym::Unknown
    }
}

/// `super()` or `super(Cls, self)`.
fn is_super_call(e: &Expr) -> bool {
    matches!(e, Expr::Call(c) if matches!(&*c.func, Expr::Name(n) if n.id.as_str() == "super"))
}

/// A member of a framework class: a row of the table, or an attribute whose type it gives.
fn framework_member(class: &str, attr: &str) -> Sym {
    let k = knowledge();
    let path = format!("{class}.{attr}");
    if k.api(&path).is_some() {
        return Sym::Path(path);
    }
    if let Some(t) = k.attribute_type(class, attr) {
        return Sym::Instance(ClassRef { qualified: Some(t.to_owned()), ..ClassRef::default() });
    }
    Sym::Unknown
}

/// The instance a call of `path` returns (element `index` of a returned tuple), when the table
/// gives its type.
fn returned(path: &str, index: usize) -> Sym {
    match knowledge().api(path).and_then(|a| a.returns.get(index)) {
        Some(t) if !t.is_empty() => {
            Sym::Instance(ClassRef { qualified: Some(t.clone()), ..ClassRef::default() })
        }
        _ => Sym::Unknown,
    }
}

/// Whether calling `path` makes an instance the table knows members of.
fn is_class_path(path: &str) -> bool {
    let k = knowledge();
    k.knows_class(path) || k.api(path).is_some_and(|a| matches!(a.role, Role::Data | Role::Wrapper))
}

/// A module-level `def` or `class` named `name`.
/// How many re-exporting modules [`Eval::exported`] follows (`pkg/__init__.py` importing from
/// `pkg/utils/__init__.py` importing from `pkg/utils/file_helpers.py` is two).
const MAX_REEXPORTS: usize = 3;

fn top_level(module: &Arc<Module>, name: &str) -> Option<Sym> {
    for stmt in module.body() {
        match stmt {
            Stmt::FunctionDef(d) if d.name.id.as_str() == name => {
                return Some(Sym::Function(FnRef {
                    module: Some(module.clone()),
                    def: d.start(),
                    is_method: false,
                }));
            }
            Stmt::ClassDef(c) if c.name.id.as_str() == name => {
                return Some(Sym::Class(ClassRef {
                    local: Some(c.start()),
                    module: Some(module.clone()),
                    qualified: None,
                }));
            }
            _ => {}
        }
    }
    None
}

/// The method `name` defined in `class`'s own body.
pub(crate) fn method<'m>(class: &'m StmtClassDef, name: &str) -> Option<&'m StmtFunctionDef> {
    class.body.iter().find_map(|s| match s {
        Stmt::FunctionDef(d) if d.name.id.as_str() == name => Some(d),
        _ => None,
    })
}

fn is_static(def: &StmtFunctionDef) -> bool {
    def.decorator_list
        .iter()
        .any(|d| matches!(&d.expression, Expr::Name(n) if n.id.as_str() == "staticmethod"))
}

/// The class whose body holds `def` directly (a method), if any.
pub(crate) fn class_of<'m>(module: &'m Module, def: &StmtFunctionDef) -> Option<&'m StmtClassDef> {
    let path = module.path(module.line_of(def.name.start()))?;
    let level = path.function_level(module)?;
    match path.levels.get(level)?.owner {
        Some(Stmt::ClassDef(c)) => Some(c),
        _ => None,
    }
}

/// The `class` statement starting at `at`: found by descending through the blocks that hold
/// `at` (a walk of the whole module per lookup made files with many classes quadratic:
/// transformers' `cache_utils.py` took minutes).
pub(crate) fn class_at(module: &Module, at: TextSize) -> Option<&StmtClassDef> {
    match crate::syntax::tree::stmt_starting_at(module.body(), at)? {
        Stmt::ClassDef(c) => Some(c),
        _ => None,
    }
}

/// The `def` starting at `at`.
pub(crate) fn def_at(module: &Module, at: TextSize) -> Option<&StmtFunctionDef> {
    match crate::syntax::tree::stmt_starting_at(module.body(), at)? {
        Stmt::FunctionDef(d) => Some(d),
        _ => None,
    }
}
