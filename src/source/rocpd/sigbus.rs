//! A memory-mapped read that ends in one line and exit 2, not a SIGBUS, when the file
//! shrinks under it. SQLite reads a mapped database by touching its pages; a page past
//! the file's new end (another process truncated or replaced it: a capture still being
//! written, a rerun writing the same name) raises SIGBUS, which kills the process by
//! default (sqlite.org/mmap.html). While a [`Guard`] lives, SIGBUS writes the line
//! prepared for that file to stderr and exits with [`crate::exit::INPUT`]: nothing else
//! is async-signal-safe, and a read cannot be resumed after the signal. Reading stops
//! before any output is staged, so no temporary file is left.

use std::path::Path;

/// SIGBUS is handled as described above until this is dropped.
pub(crate) struct Guard {
    _private: (),
}

/// Protect a mapped read of `path`.
pub(crate) fn guard(path: &Path) -> Guard {
    let line = format!(
        "stepgate: error: {}: the file shrank while it was being read (another process \
         truncated or replaced it: a capture still being written, or a rerun writing the \
         same name): wait until it is complete, or copy it and pass the copy\n",
        path.display()
    );
    #[cfg(unix)]
    imp::begin(line);
    #[cfg(not(unix))]
    drop(line);
    Guard { _private: () }
}

impl Drop for Guard {
    fn drop(&mut self) {
        #[cfg(unix)]
        imp::end();
    }
}

#[cfg(unix)]
mod imp {
    use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
    use std::sync::Mutex;

    #[cfg(any(target_os = "linux", target_os = "android"))]
    const SIGBUS: i32 = 7;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    const SIGBUS: i32 = 10;

    extern "C" {
        // libc, which std links already (as `capture::interrupt` uses it).
        fn signal(signum: i32, handler: usize) -> usize;
        fn write(fd: i32, buf: *const u8, count: usize) -> isize;
        fn _exit(status: i32) -> !;
    }

    /// The line the handler writes (leaked: it must outlive any signal).
    static LINE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
    static LEN: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn on_sigbus(_sig: i32) {
        let (p, n) = (LINE.load(Ordering::SeqCst), LEN.load(Ordering::SeqCst));
        // Safety: `p` is a leaked buffer of `n` bytes (or null); write(2) and _exit(2) are
        // async-signal-safe.
        unsafe {
            if !p.is_null() {
                write(2, p, n);
            }
            _exit(i32::from(crate::exit::INPUT));
        }
    }

    /// Guards alive and the handler the first one replaced.
    static DEPTH: Mutex<(usize, usize)> = Mutex::new((0, 0));

    pub(crate) fn begin(line: String) {
        let bytes: &'static mut [u8] = Box::leak(line.into_bytes().into_boxed_slice());
        LEN.store(0, Ordering::SeqCst);
        LINE.store(bytes.as_mut_ptr(), Ordering::SeqCst);
        LEN.store(bytes.len(), Ordering::SeqCst);
        let mut d = DEPTH.lock().unwrap_or_else(|e| e.into_inner());
        if d.0 == 0 {
            // Safety: installs a handler that only writes a prepared buffer and exits.
            d.1 = unsafe { signal(SIGBUS, on_sigbus as extern "C" fn(i32) as usize) };
        }
        d.0 += 1;
    }

    pub fn end() {
        let mut d = DEPTH.lock().unwrap_or_else(|e| e.into_inner());
        d.0 = d.0.saturating_sub(1);
        if d.0 == 0 {
            // Safety: puts back what `begin` replaced.
            unsafe {
                signal(SIGBUS, d.1);
            }
        }
    }
}
