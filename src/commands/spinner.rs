//! The command line's row-count spinner on stderr for a load's progress
//! ([`crate::source::progress::RowSink`]): shown only when stderr is a terminal and the
//! load has already taken more than a moment (no flicker for small files, nothing in pipes
//! or CI).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::source::progress::{Progress, RowSink};

/// Delay before the spinner appears.
const SHOW_AFTER: Duration = Duration::from_millis(700);

/// The spinner of the load under way, if stderr is a terminal.
#[derive(Default)]
struct Spinner {
    now: Mutex<Option<Shown>>,
}

/// One load's bar (`ProgressBar` is an `Arc` inside, so reader threads share it).
struct Shown {
    bar: ProgressBar,
    started: Instant,
    visible: AtomicBool,
}

/// The progress a command line's loads report: a spinner on stderr.
pub(crate) fn on_stderr() -> Progress {
    Progress::to(Arc::new(Spinner::default()))
}

impl Spinner {
    fn now(&self) -> std::sync::MutexGuard<'_, Option<Shown>> {
        self.now.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl RowSink for Spinner {
    fn start(&self, what: &'static str) {
        let shown = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg}: {human_pos} rows") {
                bar.set_style(style);
            }
            bar.set_message(what);
            Shown {
                bar,
                started: Instant::now(),
                visible: AtomicBool::new(false),
            }
        });
        *self.now() = shown;
    }

    fn rows(&self, n: u64) {
        let now = self.now();
        let Some(s) = now.as_ref() else { return };
        s.bar.inc(n);
        if !s.visible.load(Ordering::Relaxed) && s.started.elapsed() > SHOW_AFTER {
            s.visible.store(true, Ordering::Relaxed);
            s.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    fn finish(&self) {
        if let Some(s) = self.now().take() {
            s.bar.finish_and_clear();
        }
    }
}
