//! DSY001 on functions whose whole body runs on some ranks only because of a decorator of the
//! table (the `rank_only` role: Lightning's `@rank_zero_only`, which returns without calling
//! the function on every rank but global rank 0). A collective in such a body is one the other
//! ranks never issue, however plain the body looks: `@rank_zero_only def on_fit_start(self):
//! out = self.trainer.log_dir` is rank 0 alone in the broadcast behind `log_dir` (the hang of
//! Lightning-AI/pytorch-lightning issue 18148, the corpus' `lightning_log_dir_rank_zero_only`).
//!
//! Reported on the decorator, the line that sends the other ranks away. Point-to-point calls
//! are left out as in the `if` check: a decorated body cannot pair them with anything.

use super::Raw;
use crate::context::Context;
use crate::rule::Rule;

pub(super) fn check(ctx: &Context<'_>) -> Vec<Raw> {
    let mut out = Vec::new();
    for guarded in ctx.collectives.rank_only(ctx.module) {
        let first = ctx
            .sites_in(Some(guarded.def_line), guarded.def_line, guarded.end_line)
            .find(|s| !s.is_point_to_point());
        let Some(site) = first else { continue };
        out.push(Raw {
            rule: Rule::RankConditionalCollective,
            line: guarded.decorator_line,
            column: None,
            keyword: None,
            message: format!(
                "{} runs only on some ranks: `{}` runs the body of `{}` on some ranks only (the \
                 others return at once), so they never issue it and its peers wait",
                site.describe(),
                guarded.decorator,
                guarded.name,
            ),
            indirect: false,
        });
    }
    out
}
