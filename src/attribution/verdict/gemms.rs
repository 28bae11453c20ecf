//! The rules that read the decode layer's GEMMs (the layer map, split-K reductions folded
//! in): the GEMMs below the roof ranked by their excess per step, not by their time, and a
//! dominant kernel's own fraction of β.

use super::{pct, time_proof, us, Evidence, Fired, AT_ROOF_OF_BETA, DASH};
use crate::wire::attribution::{LayerGemm, LayerMap, Shape};
use crate::wire::verdict::{ProofBasis, ShareOf};

/// "; GEMMs by excess: …" when the largest group's layers were mapped.
pub(super) fn by_excess_suffix(e: &Evidence<'_>) -> String {
    let named = e
        .group
        .and_then(|g| g.layers.as_ref())
        .map(|m| gemms_by_excess(&below_roof(m)))
        .unwrap_or_default();
    if named.is_empty() {
        String::new()
    } else {
        format!("; GEMMs by excess: {}", named.join(", "))
    }
}

/// The mapped GEMMs below the roof with an excess, largest excess per step first.
fn below_roof(map: &LayerMap) -> Vec<(&LayerGemm, f64, f64)> {
    let mut by: Vec<(&LayerGemm, f64, f64)> = map
        .gemms
        .iter()
        .filter_map(|g| Some((g, g.excess_per_step_ns?, g.roof_fraction?)))
        .filter(|x| x.1 > 0.0 && x.2 < AT_ROOF_OF_BETA)
        .collect();
    by.sort_by(|a, b| b.1.total_cmp(&a.1));
    by
}

/// The two mapped GEMMs below the roof with the largest excess per step, in words (a
/// split-K GEMM with its reduction): where a faster GEMM wins the most.
fn gemms_by_excess(below: &[(&LayerGemm, f64, f64)]) -> Vec<String> {
    below
        .iter()
        .take(2)
        .map(|(g, x, f)| {
            let role = g
                .role
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            let split = if g.split_k_reduction.is_some() {
                " with its split-K reduction"
            } else {
                ""
            };
            format!(
                "{}{role}{split} {} per step ({} × {}) at {} of β",
                g.kernel,
                us(x.round() as i64),
                g.launches_per_step,
                us(g.excess_ns.unwrap_or(0.0).round() as i64),
                pct(*f)
            )
        })
        .collect()
}

/// Mapped GEMMs below 80% of β whose excess is at least this share of the step's wall:
/// worth a line even when the step as a whole is near its floor.
pub const GEMM_EXCESS_SHARE: f64 = 0.05;

pub(super) fn gemms_below_roof(e: &Evidence<'_>) -> Option<Fired> {
    let g = e.group?;
    let map = g.layers.as_ref().filter(|m| m.ambiguous.is_none())?;
    let below = below_roof(map);
    let total: f64 = below.iter().map(|x| x.1).sum();
    let wall = g.waterfall.wall_ns as f64;
    if below.is_empty() || wall <= 0.0 || total < GEMM_EXCESS_SHARE * wall {
        return None;
    }
    let split = below.iter().any(|x| x.0.split_k_reduction.is_some());
    let how = if split {
        format!(
            "a split-K GEMM pays for its separate reduction: try its shape without split-K (another algorithm from the BLAS library's heuristic, or a tuned kernel), and take the others to {}",
            e.profiler.name
        )
    } else {
        format!(
            "take these to {}, not the GEMMs at the roof",
            e.profiler.name
        )
    };
    // Under the "at the memory roof" shape the line qualifies it.
    let but = if e.shape == Some(Shape::AtMemoryRoof) {
        "but "
    } else {
        ""
    };
    Some(
        Fired::act(
            format!(
                "{but}GEMMs below {} of β hold {} per step of the median {} step ({} of its wall, derived): {}",
                pct(AT_ROOF_OF_BETA),
                us(total.round() as i64),
                g.group,
                pct(total / wall),
                gemms_by_excess(&below).join(", "),
            ),
            DASH,
            how,
        )
        .proved(time_proof(
            total,
            ProofBasis::Derived,
            format!(
                "the excess per step of the {} layer GEMMs below {} of β in the median {} step",
                below.len(),
                pct(AT_ROOF_OF_BETA),
                g.group
            ),
            Some((total / wall, ShareOf::Wall)),
        )),
    )
}

/// The dominant kernel's own row in the largest group's layer map, when it was mapped to
/// one role only (a kernel that runs two roles has no one fraction of β).
pub(super) fn mapped_gemm<'e>(e: &'e Evidence<'_>, raw: &str) -> Option<&'e LayerGemm> {
    let map = e.group?.layers.as_ref()?;
    let shown = crate::timing::labels::display_name("", raw);
    let mut rows = map.gemms.iter().filter(|g| g.kernel == shown);
    let one = rows.next()?;
    rows.next().is_none().then_some(one)
}
