//! Standard output, written by the command layer only: the library returns documents and
//! diagnostics, and the commands print them here.

use std::io::Write;

use crate::exit::{Error, Result};

/// Print to standard output through one locked handle. A closed pipe (`| head -1`) is
/// not an error: the rest is dropped quietly, as ripgrep does, and the command still
/// returns its own exit code (0, or `gate`'s verdict, which a pipe must never turn into
/// a pass or a crash). Any other write error (a full disk) is one line with exit 5.
pub fn print(s: &str) -> Result<()> {
    print_to(&mut std::io::stdout().lock(), s)
}

/// [`print()`] on any writer (the tests use a failing one).
fn print_to(w: &mut dyn Write, s: &str) -> Result<()> {
    match w.write_all(s.as_bytes()).and_then(|()| w.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::stdout(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_drops_a_closed_pipe_and_reports_other_errors() {
        struct Fails(std::io::ErrorKind);
        impl Write for Fails {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::from(self.0))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        assert!(print_to(&mut Fails(std::io::ErrorKind::BrokenPipe), "x").is_ok());
        let e = print_to(&mut Fails(std::io::ErrorKind::StorageFull), "x").unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::OUTPUT);
        assert!(e.message.starts_with("cannot write to standard output"));
    }
}
