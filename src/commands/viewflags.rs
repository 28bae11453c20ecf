//! The output flags several commands share, declared once: `--format` (what stdout
//! gets), `--wide` (whole kernel names) and the comparison's row counts (`gate`, `diff`).

use crate::commands::headings::OUTPUT;
use crate::report::Format;

/// `--format`: what to print on stdout.
#[derive(Debug, Clone, clap::Args)]
pub struct FormatFlag {
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table, help_heading = OUTPUT)]
    pub format: Format,
}

/// `--wide`: kernel names whole.
#[derive(Debug, Clone, clap::Args)]
pub struct WideFlag {
    /// Full kernel names in the tables (default: shortened to fit a terminal, full names
    /// listed below the table where they were cut).
    #[arg(long, help_heading = OUTPUT, hide_short_help = true)]
    pub wide: bool,
}

/// How many rows a comparison shows (`gate`, `diff`).
#[derive(Debug, Clone, clap::Args)]
pub struct ComparisonRows {
    /// Kernel rows per list in the report.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true, value_parser = crate::commands::numbers::rows_flag, help_heading = OUTPUT, hide_short_help = true)]
    pub top: usize,
    /// Waterfall rows (largest |Δ mean| first) before the rest fold into "N others".
    #[arg(long, default_value_t = 8, value_name = "N", allow_negative_numbers = true, value_parser = crate::commands::numbers::waterfall_rows_flag, help_heading = OUTPUT, hide_short_help = true)]
    pub waterfall_top: usize,
    #[command(flatten)]
    pub names: WideFlag,
}
