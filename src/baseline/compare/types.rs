//! The comparison's output types (defined in [`crate::wire::gate`], what `gate --format
//! json` and `diff --format json` print) and the verdict's exit code.

use crate::exit;
use crate::wire::gate::Verdict;

impl Verdict {
    /// The exit code of `crate::exit` for this verdict.
    pub fn exit_code(self, inconclusive_fails: bool) -> u8 {
        match self {
            Verdict::Pass => exit::OK,
            Verdict::Regression => exit::REGRESSION,
            Verdict::Inconclusive if inconclusive_fails => exit::REGRESSION,
            Verdict::Inconclusive => exit::INCONCLUSIVE,
            Verdict::Incomparable => exit::INCOMPARABLE,
        }
    }
}
