"""The ``stepgate`` console command: the Rust binary's ``main``, entered through the extension."""

import signal
import sys


def main() -> None:
    # As the native binary: Ctrl-C ends the run at once (stepgate's own handler takes over
    # while it writes output files), instead of waiting for Rust to return to Python.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    from stepgate import _native

    sys.exit(_native.main(sys.argv))


if __name__ == "__main__":
    main()
