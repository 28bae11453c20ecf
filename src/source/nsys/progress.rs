//! A row-count spinner on stderr, shown only when stderr is a terminal and the load has
//! already taken more than a moment (no flicker for small files, nothing in pipes or CI).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Delay before the spinner appears.
const SHOW_AFTER: Duration = Duration::from_millis(700);

/// Shared by the loader threads (`ProgressBar` is an `Arc` inside).
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    shown: AtomicBool,
}

impl Progress {
    pub fn new(message: &'static str) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg}: {human_pos} rows") {
                b.set_style(style);
            }
            b.set_message(message);
            b
        });
        Progress {
            bar,
            started: Instant::now(),
            shown: AtomicBool::new(false),
        }
    }

    /// Count `n` more rows read.
    pub(crate) fn inc(&self, n: u64) {
        let Some(bar) = &self.bar else { return };
        bar.inc(n);
        if !self.shown.load(Ordering::Relaxed) && self.started.elapsed() > SHOW_AFTER {
            self.shown.store(true, Ordering::Relaxed);
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
