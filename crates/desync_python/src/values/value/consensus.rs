//! Consensus: where a value passed through a collective that leaves it identical on every
//! rank.

#[allow(clippy::wildcard_imports)]
use super::*;

impl<'m> Eval<'_, 'm> {
    /// "`flag` agreed by `dist.all_reduce(flag, ...)` at line 14" when, between the binding
    /// and the use, a statement of the same scope passes `name` to a collective (or to a
    /// project function) that leaves it identical on every rank.
    pub(crate) fn agreed_between(
        &mut self,
        name: &str,
        binding: &Binding<'m>,
        use_at: TextSize,
    ) -> Option<String> {
        if binding.effective > use_at
            || !matches!(
                binding.source,
                Source::Value(_) | Source::Element(..) | Source::Augmented(_) | Source::Parameter
            )
        {
            return None;
        }
        let index = self.module.scope_index(binding.scope.suite);
        // The calls between the binding and the use (noted in source order), at most the last
        // few: asked at each of thousands of calls of one name, all of them was quadratic.
        let starts = index.first_argument_calls.of(name);
        let from = starts.partition_point(|&at| at < binding.effective);
        let to = starts.partition_point(|&at| at < use_at).max(from);
        let window = &starts[from..to];
        let window = &window[window.len().saturating_sub(MAX_AGREEING_CALLS)..];
        let calls = window
            .iter()
            .filter_map(|&at| crate::syntax::tree::stmt_starting_at(binding.scope.suite, at))
            .filter(|stmt| stmt.end() <= use_at)
            .filter_map(|stmt| match stmt {
                Stmt::Expr(s) => match crate::names::bindings::awaited(&s.value) {
                    Expr::Call(c) => Some(c),
                    _ => None,
                },
                _ => None,
            });
        for c in calls {
            // `await asyncio.to_thread(dist.broadcast_object_list, objs, src=0)`.
            let forwarded = self.forwarded(c);
            let c = forwarded.as_ref().unwrap_or(c);
            let agrees = self.call_agrees(c, name);
            if agrees {
                return Some(format!(
                    "`{name}` agreed by `{}` at line {}",
                    crate::syntax::expr::snippet(self.module.text(c.range())),
                    self.line_of(c.start())
                ));
            }
        }
        None
    }

    /// Whether the call `c` leaves `name`, passed first (or by the keyword of that parameter),
    /// identical on every rank in place: a table collective that agrees its first argument
    /// (`broadcast_object_list(objs, src=0)`), or a project function whose summary agrees its
    /// first parameter.
    pub(crate) fn call_agrees(&mut self, c: &ExprCall, name: &str) -> bool {
        let is_name = |e: Option<&Expr>| matches!(e, Some(Expr::Name(n)) if n.id.as_str() == name);
        match self.resolve(&c.func, c.start()) {
            Sym::Path(p) => knowledge().api(&p).is_some_and(|a| is_name(a.agreed_argument(c))),
            Sym::Function(f) => self.summary(&f).is_some_and(|s| {
                s.agrees_params.contains(&0)
                    && s.parameters
                        .first()
                        .is_some_and(|first| is_name(argument_for(&s.parameters, false, c, first)))
            }),
            _ => false,
        }
    }
}
