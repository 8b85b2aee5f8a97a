//! Framework loop flags the user's code sets (`trainer.should_stop = True`,
//! `control.should_training_stop = True`): rows of the knowledge table with role `stop`. A
//! rank that sets one leaves the framework's loop at its next check while its peers go on, and
//! the line that set it is on no stack by then; the bridge asks for these writes when the
//! ranks' stacks part only inside a framework.

use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

use crate::names::knowledge::{Role, knowledge};
use crate::syntax::module::Module;
use crate::values::Analysis;

/// One assignment of a stop flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagWrite {
    /// 1-based line of the assignment.
    pub line: u32,
    /// The target as written (`trainer.should_stop`).
    pub target: String,
    /// Its qualified name in the table (`lightning.pytorch.Trainer.should_stop`).
    pub flag: String,
}

/// One assignment of an attribute (`<receiver>.<name> = value`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributeWrite {
    pub line: u32,
    /// The target as written (`trainer.stop_requested`).
    pub target: String,
    /// The class whose method assigns it through its own first parameter (`self.x = ...`);
    /// `None` for another receiver (`trainer.x = ...`) or outside a method.
    pub owner: Option<String>,
    /// Written in `__init__` (the initial value, not a decision).
    pub initial: bool,
}

impl Analysis<'_> {
    /// Every assignment in `module` of an attribute called `name`, on any receiver.
    pub fn attribute_writes(&self, module: &Module, name: &str) -> Vec<AttributeWrite> {
        let mut out = Vec::new();
        crate::syntax::tree::walk_all(module.body(), &mut |stmt| {
            let targets: Vec<&Expr> = match stmt {
                Stmt::Assign(a) => a.targets.iter().collect(),
                Stmt::AnnAssign(a) if a.value.is_some() => vec![&*a.target],
                Stmt::AugAssign(a) => vec![&*a.target],
                _ => return,
            };
            for target in targets {
                let Expr::Attribute(attr) = target else { continue };
                if attr.attr.id.as_str() != name {
                    continue;
                }
                let line = module.line_of(target.start());
                let function = module.function_at(line);
                let through_self = function.as_ref().is_some_and(|f| {
                    module.is_method(f.def_line)
                        && matches!(&*attr.value, Expr::Name(n)
                            if f.parameters.first().is_some_and(|p| p == n.id.as_str()))
                });
                out.push(AttributeWrite {
                    line,
                    target: module.source()[target.range()].to_owned(),
                    owner: if through_self { module.class_at(line) } else { None },
                    initial: function.as_ref().is_some_and(|f| f.name == "__init__"),
                });
            }
        });
        out
    }

    /// The lines of `module` that take the function or method `name` as a value, not calling
    /// it: `bus.subscribe("step_end", writer.on_step_end)`, `hooks.append(on_step_end)`,
    /// `callbacks = [flush]`. That is how a function gets registered with a dispatcher that
    /// calls it later through a variable; whether it runs on a rank is decided there.
    pub fn value_references(&self, module: &Module, name: &str) -> Vec<u32> {
        let mut out = Vec::new();
        crate::syntax::tree::walk_all(module.body(), &mut |stmt| {
            if matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                return;
            }
            for e in crate::syntax::tree::header_exprs(stmt) {
                let mut called = Vec::new();
                let mut named = Vec::new();
                crate::syntax::expr::walk(e, &mut |x| match x {
                    Expr::Call(c) => called.push(c.func.range()),
                    Expr::Attribute(a) if a.attr.id.as_str() == name && a.ctx.is_load() => {
                        named.push(x.range());
                    }
                    Expr::Name(n) if n.id.as_str() == name && n.ctx.is_load() => {
                        named.push(x.range());
                    }
                    _ => {}
                });
                for range in named.into_iter().filter(|r| !called.contains(r)) {
                    let line = module.line_of(range.start());
                    if !out.contains(&line) {
                        out.push(line);
                    }
                }
            }
        });
        out
    }

    /// Every assignment in `module` of a table `stop` flag to anything but a literal false
    /// (`False`, `None`, `0`): clearing a flag stops nothing.
    pub fn stop_flag_writes(&self, module: &Module) -> Vec<FlagWrite> {
        let mut out = Vec::new();
        crate::syntax::tree::walk_all(module.body(), &mut |stmt| {
            let (targets, value): (Vec<&Expr>, &Expr) = match stmt {
                Stmt::Assign(a) => (a.targets.iter().collect(), &a.value),
                Stmt::AnnAssign(a) => match &a.value {
                    Some(v) => (vec![&*a.target], v),
                    None => return,
                },
                _ => return,
            };
            if is_literal_false(value) {
                return;
            }
            for target in targets {
                let Expr::Attribute(_) = target else { continue };
                let line = module.line_of(target.start());
                let text = &module.source()[target.range()];
                let Some(flag) = self.qualified_name(module, line, text) else { continue };
                if knowledge().api(&flag).is_some_and(|api| api.role == Role::Stop) {
                    out.push(FlagWrite { line, target: text.to_owned(), flag });
                }
            }
        });
        out
    }
}

fn is_literal_false(e: &Expr) -> bool {
    match e {
        Expr::BooleanLiteral(b) => !b.value,
        Expr::NoneLiteral(_) => true,
        Expr::NumberLiteral(n) => {
            matches!(&n.value, ruff_python_ast::Number::Int(i) if i.as_u8() == Some(0))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::{Analysis, Module};

    fn writes(src: &str) -> Vec<(u32, String)> {
        let module = Module::parse(src);
        Analysis::default()
            .stop_flag_writes(&module)
            .into_iter()
            .map(|w| (w.line, w.flag))
            .collect()
    }

    #[test]
    fn lightning_and_transformers_flags_are_found_through_hook_types() {
        let src = "\
import pytorch_lightning as pl
from transformers import TrainerCallback

class Converged(pl.Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if float(outputs['loss']) < 0.1:
            trainer.should_stop = True

class Module(pl.LightningModule):
    def on_validation_epoch_end(self):
        self.trainer.should_stop = False

class Guard(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        control.should_training_stop = True
        return control
";
        assert_eq!(
            writes(src),
            vec![
                (7, "lightning.pytorch.Trainer.should_stop".to_owned()),
                (15, "transformers.TrainerControl.should_training_stop".to_owned()),
            ]
        );
    }

    #[test]
    fn attribute_writes_say_which_class_owns_the_attribute() {
        let src = "\
class Loop:
    def __init__(self):
        self.halt = False

    def run(self):
        while not self.halt:
            self.step()

class Watchdog:
    def check(self, loop, late):
        if late:
            loop.halt = True
";
        let module = Module::parse(src);
        let writes = Analysis::default().attribute_writes(&module, "halt");
        let seen: Vec<(u32, Option<&str>, bool)> =
            writes.iter().map(|w| (w.line, w.owner.as_deref(), w.initial)).collect();
        assert_eq!(seen, vec![(3, Some("Loop"), true), (12, None, false)]);
        assert_eq!(writes[1].target, "loop.halt");
    }

    #[test]
    fn a_flag_of_the_users_own_object_is_not_a_framework_flag() {
        let src = "\
class Loop:
    def step(self):
        self.should_stop = True
        trainer = object()
        trainer.should_stop = True
";
        assert!(writes(src).is_empty());
    }
}
