//! The gate's vocabulary, one place for it: what a step metric is called and how a
//! relative change reads. Headlines, the comparison's reason lines, group notes, tables and
//! chart axes all say `wall +16.7%`, never `wall_ns +16.7%` in one place and `wall` in
//! another.

use std::borrow::Cow;

use crate::text::group_thousands;
use crate::wire::baseline::metric;

/// The display name of a metric no row of the step-metric table declares (a step
/// metric's label is its row's, `baseline::metrics`): `excess_ns.CLASS` reads `CLASS
/// excess (derived)`, `kernel:NAME` and `category:NAME` (trend's metrics) read `kernel
/// NAME`; any other keeps its field name.
pub(crate) fn metric_name(name: &str) -> Cow<'_, str> {
    if let Some(class) = name.strip_prefix(metric::CLASS_EXCESS_PREFIX) {
        return Cow::Owned(format!("{class} excess (derived)"));
    }
    for prefix in ["kernel:", "category:"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            return Cow::Owned(format!("{} {rest}", &prefix[..prefix.len() - 1]));
        }
    }
    Cow::Borrowed(name)
}

/// A relative change with one decimal, signed with + or − (U+2212), thousands separated:
/// `+4,700.0%`, `−9.1%`; infinite changes as `+∞`; no ratio (a zero baseline) as `from 0`.
pub(crate) fn fmt_rel(r: Option<f64>) -> String {
    match r {
        None => "from 0".to_owned(),
        Some(r) if r.is_infinite() => if r > 0.0 { "+∞" } else { "−∞" }.to_owned(),
        Some(r) => {
            let sign = if r < 0.0 { "−" } else { "+" };
            format!(
                "{sign}{}%",
                group_thousands(&format!("{:.1}", r.abs() * 100.0))
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_name_per_metric() {
        assert_eq!(metric_name("excess_ns.weights"), "weights excess (derived)");
        assert_eq!(metric_name("kernel:fused_moe"), "kernel fused_moe");
        assert_eq!(metric_name("category:attention"), "category attention");
        assert_eq!(metric_name("tokens_per_s"), "tokens_per_s");
    }

    #[test]
    fn relative_changes() {
        assert_eq!(fmt_rel(Some(47.0)), "+4,700.0%");
        assert_eq!(fmt_rel(Some(-0.0912)), "−9.1%");
        assert_eq!(fmt_rel(Some(0.0)), "+0.0%");
        assert_eq!(fmt_rel(Some(f64::INFINITY)), "+∞");
        assert_eq!(fmt_rel(None), "from 0");
    }
}
