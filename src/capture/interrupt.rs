//! Ctrl-C (SIGINT) and SIGTERM become a flag the capture loops poll, so a server started
//! under nsys is shut down (its whole process group) instead of being orphaned.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether SIGINT or SIGTERM arrived since [`install`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

#[cfg(unix)]
mod imp {
    use super::INTERRUPTED;
    use std::sync::atomic::Ordering;

    const SIGINT: i32 = 2;
    const SIGTERM: i32 = 15;

    extern "C" {
        // libc's signal(2); std links libc already, so no new dependency. glibc gives it BSD
        // semantics (handler stays installed, SA_RESTART).
        fn signal(signum: i32, handler: usize) -> usize;
    }

    extern "C" fn on_signal(_sig: i32) {
        // Only an atomic store: async-signal-safe.
        INTERRUPTED.store(true, Ordering::SeqCst);
    }

    pub fn install() {
        let h = on_signal as extern "C" fn(i32) as usize;
        // Safety: installs a handler that only stores to an atomic.
        unsafe {
            signal(SIGINT, h);
            signal(SIGTERM, h);
        }
    }
}

/// Catch SIGINT/SIGTERM from now on (the capture command calls this once).
pub fn install() {
    #[cfg(unix)]
    imp::install();
}
