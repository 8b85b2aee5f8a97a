//! The CLI's progress bar: indicatif on stderr, drawn only on a terminal and only once work
//! has taken a moment, so quick runs and pipes stay clean.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Bar {
    bar: ProgressBar,
}

impl Bar {
    pub fn new(enabled: bool) -> Self {
        let bar = ProgressBar::with_draw_target(
            None,
            if enabled { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() },
        );
        Self { bar }
    }
}

impl desync_core::Progress for Bar {
    fn start(&self, total: u64, what: &str) {
        self.bar.set_length(total);
        self.bar.set_message(what.to_owned());
        let style = ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        self.bar.set_style(style.progress_chars("=> "));
        // Draw after a short delay: loading a handful of files should not flash a bar.
        self.bar.enable_steady_tick(Duration::from_millis(200));
    }

    fn advance(&self, n: u64) {
        self.bar.inc(n);
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
