//! The user's methods a framework's loop calls on every rank once per step
//! (`LightningModule.training_step`, a Lightning callback's `on_train_batch_start`, a
//! `transformers.Trainer` subclass's `compute_loss`): the table's `[[hook]]` rows marked
//! `per_step`. When the ranks wait under a call of the framework's entry point
//! (`trainer.fit(...)`) and one rank stopped, whether that rank reached the next collective
//! was decided inside one of these methods, on no stack: a `return` or `raise` that leaves it
//! early on that rank (a `training_step` that returns `None` on a non-finite loss). The bridge
//! asks for these exits and judges the conditions that guard them.

use ruff_python_ast::{Expr, Stmt, StmtClassDef, StmtFunctionDef};
use ruff_text_size::Ranged;

use crate::names::bindings::Scope;
use crate::names::knowledge::knowledge;
use crate::syntax::module::Module;
use crate::values::Analysis;
use crate::values::resolve::Sym;
use crate::values::value::Eval;

/// One early exit from a per-step hook method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookExit {
    /// 1-based line of the `return` or `raise`.
    pub line: u32,
    /// `return` or `raise`.
    pub keyword: &'static str,
    /// The method (`training_step`) and the user's class defining it (`LoadForecaster`).
    pub method: String,
    pub class: String,
    /// The framework class whose hook it is (`lightning.pytorch.LightningModule`).
    pub framework_class: String,
    /// The entry points whose loop calls it (`lightning.pytorch.Trainer.fit`).
    pub entries: Vec<String>,
    /// For a `return` of nothing (`return`, `return None`): what the framework then does, as
    /// the table says.
    pub on_none: Option<String>,
}

impl Analysis<'_> {
    /// The framework entry points called on `line` of `module` whose loops run per-step hooks
    /// (`trainer.fit(model, loader)` → `lightning.pytorch.Trainer.fit`).
    pub fn hook_entry_points_at(&self, module: &Module, line: u32) -> Vec<String> {
        let scope = Scope::at(module, line);
        let mut eval = Eval::new(self, module, scope, 0);
        let mut out: Vec<String> = Vec::new();
        for call in module.calls_at(line) {
            if let Sym::Path(p) = eval.resolve(&call.func, call.start())
                && knowledge().runs_step_hooks(&p)
                && !out.contains(&p)
            {
                out.push(p);
            }
        }
        out
    }

    /// Every `return` and `raise` of `module` that leaves a per-step hook method before its
    /// end: those inside a compound statement of the method's body (an `if`, a `try`, a loop),
    /// which some passes take and others do not. The method's final statement is how every
    /// pass ends, not a decision.
    pub fn step_hook_exits(&self, module: &Module) -> Vec<HookExit> {
        let mut out = Vec::new();
        let mut classes: Vec<&StmtClassDef> = Vec::new();
        crate::syntax::tree::walk_all(module.body(), &mut |stmt| {
            if let Stmt::ClassDef(c) = stmt {
                classes.push(c);
            }
        });
        for class in classes {
            let mut eval = Eval::new(self, module, Scope::module(module), 0);
            let bases = eval.class_bases(class);
            for base in &bases {
                for hook in knowledge().step_hooks(base) {
                    for def in class.body.iter().filter_map(|s| match s {
                        Stmt::FunctionDef(d) => Some(d),
                        _ => None,
                    }) {
                        if !hook.methods.iter().any(|m| m == def.name.id.as_str()) {
                            continue;
                        }
                        for (line, keyword, returns_nothing) in early_exits(module, def) {
                            out.push(HookExit {
                                line,
                                keyword,
                                method: def.name.id.to_string(),
                                class: class.name.id.to_string(),
                                framework_class: base.clone(),
                                entries: hook.entries.clone(),
                                on_none: hook.on_none.clone().filter(|_| returns_nothing),
                            });
                        }
                    }
                }
            }
        }
        out.sort_by_key(|e| e.line);
        out.dedup_by_key(|e| e.line);
        out
    }
}

/// The `return`s and `raise`s of `def`'s body nested in a compound statement, with whether
/// each returns nothing. Nested functions and classes are their own scopes.
fn early_exits(module: &Module, def: &StmtFunctionDef) -> Vec<(u32, &'static str, bool)> {
    let mut out = Vec::new();
    for stmt in &def.body {
        for block in crate::syntax::tree::blocks(stmt) {
            collect_exits(module, block.suite, &mut out, 0);
        }
    }
    out
}

fn collect_exits(
    module: &Module,
    suite: &[Stmt],
    out: &mut Vec<(u32, &'static str, bool)>,
    depth: usize,
) {
    if depth >= crate::syntax::tree::MAX_DEPTH {
        return;
    }
    for stmt in suite {
        match stmt {
            Stmt::Return(r) => {
                let nothing = matches!(r.value.as_deref(), None | Some(Expr::NoneLiteral(_)));
                out.push((module.line_of(r.start()), "return", nothing));
            }
            Stmt::Raise(r) => out.push((module.line_of(r.start()), "raise", false)),
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            _ => {
                for block in crate::syntax::tree::blocks(stmt) {
                    collect_exits(module, block.suite, out, depth + 1);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Analysis, Module};

    #[test]
    fn guarded_exits_of_per_step_hooks_are_found_through_the_class_bases() {
        let src = "\
import lightning as L
from transformers import Trainer

class Segmenter(L.LightningModule):
    def training_step(self, batch, batch_idx):
        images, masks = batch
        if masks.sum() == 0:
            return
        loss = self.criterion(self(images), masks)
        return loss

    def configure_optimizers(self):
        if self.hparams.sgd:
            return None
        return None

class DistillTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        if inputs['labels'].numel() == 0:
            raise ValueError('empty batch')
        return model(**inputs).loss
";
        let module = Module::parse(src);
        let exits = Analysis::default().step_hook_exits(&module);
        let seen: Vec<(u32, &str, &str, bool)> = exits
            .iter()
            .map(|e| (e.line, e.keyword, e.method.as_str(), e.on_none.is_some()))
            .collect();
        // The final `return loss` is how every step ends; `configure_optimizers` is no step.
        assert_eq!(
            seen,
            [(8, "return", "training_step", true), (20, "raise", "compute_loss", false)]
        );
        assert_eq!(exits[0].entries, ["lightning.pytorch.Trainer.fit"]);
        assert_eq!(exits[1].framework_class, "transformers.Trainer");
    }
}
