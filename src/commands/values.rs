//! The clap value lists of the library enums a flag takes (`--format`, `--moe-routing`,
//! `--history-mode`), implemented here so that clap stays in the command layer. The names
//! and help lines are the flags' documented values; a test checks each name parses back.

use clap::builder::PossibleValue;
use clap::ValueEnum;

use crate::dataset::HistoryMode;
use crate::report::Format;
use crate::wire::roofline::MoeRouting;

impl ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Self] {
        &[Format::Table, Format::Markdown, Format::Json, Format::Csv]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Format::Table => {
                PossibleValue::new("table").help("Aligned plain-text tables for the terminal")
            }
            Format::Markdown => PossibleValue::new("markdown")
                .help("GitHub-flavoured markdown (PR comments, `$GITHUB_STEP_SUMMARY`)"),
            Format::Json => PossibleValue::new("json").help("The versioned JSON wire type"),
            Format::Csv => {
                PossibleValue::new("csv").help("Comma-separated rows (one table per command)")
            }
        })
    }
}

impl ValueEnum for MoeRouting {
    fn value_variants<'a>() -> &'a [Self] {
        &[MoeRouting::Uniform, MoeRouting::Spread, MoeRouting::Packed]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            MoeRouting::Uniform => PossibleValue::new("uniform").help(
                "Expected distinct experts under uniform independent routing: E·(1−(1−k/E)^T)",
            ),
            MoeRouting::Spread => PossibleValue::new("spread")
                .help("min(T·k, E): vLLM's perfect-balance convention (its golden cases use it)"),
            MoeRouting::Packed => PossibleValue::new("packed")
                .help("k: every token picks the same experts; the true lower bound"),
        })
    }
}

impl ValueEnum for HistoryMode {
    fn value_variants<'a>() -> &'a [Self] {
        &[HistoryMode::Steps, HistoryMode::Runs]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            HistoryMode::Steps => {
                PossibleValue::new("steps").help("Pool the steps of the matching runs per group")
            }
            HistoryMode::Runs => PossibleValue::new("runs").help("One sample per run: its median"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant has a value that parses back to it (clap's `from_str` walks the list).
    fn round_trips<T: ValueEnum + PartialEq + std::fmt::Debug>() {
        for v in T::value_variants() {
            let name = v.to_possible_value().unwrap().get_name().to_owned();
            assert_eq!(&T::from_str(&name, false).unwrap(), v, "{name}");
        }
    }

    #[test]
    fn every_value_parses_back() {
        round_trips::<Format>();
        round_trips::<MoeRouting>();
        round_trips::<HistoryMode>();
        assert_eq!(
            Format::value_variants().len() + MoeRouting::value_variants().len(),
            7
        );
    }
}
