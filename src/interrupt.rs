//! Ctrl-C (SIGINT) and SIGTERM become a flag the capture loops poll, so a server started
//! under nsys is shut down (its whole process group) instead of being orphaned; and, while
//! stepgate writes its output files, a flag the writer checks so it can remove its
//! temporary files before exiting instead of dying with one half-written.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Signals received since the process started (the writer compares before and after).
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

/// Whether SIGINT or SIGTERM arrived since [`install`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

#[cfg(unix)]
mod imp {
    use super::{INTERRUPTED, SIGNALS};
    use std::sync::atomic::Ordering;
    use std::sync::Mutex;

    pub const SIGINT: i32 = 2;
    const SIGTERM: i32 = 15;

    extern "C" {
        // libc's signal(2); std links libc already, so no new dependency. glibc gives it BSD
        // semantics (handler stays installed, SA_RESTART).
        fn signal(signum: i32, handler: usize) -> usize;
        #[cfg(test)]
        pub fn raise(sig: i32) -> i32;
    }

    extern "C" fn on_signal(_sig: i32) {
        // Only atomic stores: async-signal-safe.
        INTERRUPTED.store(true, Ordering::SeqCst);
        SIGNALS.fetch_add(1, Ordering::SeqCst);
    }

    fn handler() -> usize {
        on_signal as extern "C" fn(i32) as usize
    }

    pub fn install() {
        // Safety: installs a handler that only stores to atomics.
        unsafe {
            signal(SIGINT, handler());
            signal(SIGTERM, handler());
        }
    }

    /// Deferral depth and the handlers it replaced: the first guard installs, the last
    /// restores, so overlapping writers (threads) never leave the flag handler behind.
    static DEFER: Mutex<(usize, usize, usize)> = Mutex::new((0, 0, 0));

    pub(crate) fn defer_begin() {
        let mut d = DEFER.lock().unwrap_or_else(|e| e.into_inner());
        if d.0 == 0 {
            // Safety: as in `install`; the previous handlers are kept to restore.
            unsafe {
                d.1 = signal(SIGINT, handler());
                d.2 = signal(SIGTERM, handler());
            }
        }
        d.0 += 1;
    }

    pub(crate) fn defer_end() {
        let mut d = DEFER.lock().unwrap_or_else(|e| e.into_inner());
        d.0 = d.0.saturating_sub(1);
        if d.0 == 0 {
            // Safety: puts back what `defer_begin` replaced.
            unsafe {
                signal(SIGINT, d.1);
                signal(SIGTERM, d.2);
            }
        }
    }
}

/// Catch SIGINT/SIGTERM from now on (the capture command calls this once).
pub fn install() {
    #[cfg(unix)]
    imp::install();
}

/// While alive, SIGINT/SIGTERM are recorded instead of killing the process, so the writer
/// can clean up; dropping it restores what was there before (default: die).
pub(crate) struct Deferred {
    start: usize,
}

/// Defer SIGINT/SIGTERM until the returned guard is dropped.
pub(crate) fn defer() -> Deferred {
    #[cfg(unix)]
    imp::defer_begin();
    Deferred {
        start: SIGNALS.load(Ordering::SeqCst),
    }
}

impl Deferred {
    /// Whether a signal arrived since this guard was made.
    pub fn interrupted(&self) -> bool {
        SIGNALS.load(Ordering::SeqCst) != self.start
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        #[cfg(unix)]
        imp::defer_end();
    }
}

/// Send this process SIGINT (what Ctrl-C does), for tests of the cleanup.
#[cfg(unix)]
#[cfg(test)]
pub(crate) fn raise_sigint() {
    // Safety: raise(3) with a valid signal number.
    unsafe {
        imp::raise(imp::SIGINT);
    }
}
