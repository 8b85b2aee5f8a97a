//! One module per verb; each returns an [`Outcome`](crate::Outcome) or an error.

mod analyze;

use crate::Outcome;
use crate::cli::{Args, Command};

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    match args.command {
        Command::Analyze(a) => analyze::run(&a),
    }
}
