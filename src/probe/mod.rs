//! `launch-probe`: this machine's kernel-launch cost, measured with a null kernel through the
//! CUDA driver (cudarc, libcuda loaded at run time), and the JSON file `steps --launch-cost`
//! reads in place of the cited 2.374 µs.

pub mod cuda;

use std::path::Path;

use crate::exit::{Error, Result};
use crate::wire::probe::ProbeReport;

/// The cited driver-only `cudaLaunchKernel` cost: Vellaisamy et al., "Characterizing GPU
/// Kernel Launch Overheads", ISPASS 2025, arXiv:2504.11750, Table V (H100, CUDA 12.6);
/// docs/method.md §8.1 applies it. Cited, not measured here.
pub(crate) const CITED_LAUNCH_NS: f64 = 2374.0;

/// Where [`CITED_LAUNCH_NS`] comes from, for labels.
pub(crate) const CITED_LAUNCH_SOURCE: &str =
    "arXiv:2504.11750 Table V (driver-only, H100, CUDA 12.6)";

/// Version of the JSON wire type below; bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// The message (and exit code 4) when there is nothing to measure on.
pub(crate) const NO_DRIVER: &str = "no CUDA driver found; the cited 2.374 µs stands";

/// Launch-probe settings (the defaults follow docs/method.md §8.1: 2,000 launches per burst, 5 bursts;
/// 330 graph nodes is docs/method.md §8.1's launch count of one TP=1 Llama-3-8B decode step).
#[derive(Debug, Clone, Copy)]
pub struct ProbeParams {
    pub device: usize,
    pub iters: u32,
    pub repeats: u32,
    pub graph_nodes: u32,
    pub graph_launches: u32,
}

impl Default for ProbeParams {
    fn default() -> Self {
        ProbeParams {
            device: 0,
            iters: 2000,
            repeats: 5,
            graph_nodes: 330,
            graph_launches: 200,
        }
    }
}

/// The measured per-launch cost `steps --launch-cost FILE` reads (distinct from
/// [`crate::wire::attribution::LaunchCost`], the cost attribution prices with, whatever its
/// source): the minimum end-to-end per-launch time of a probe file (the seed's `--launchcost` is the same min).
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredLaunchCost {
    pub per_launch_ns: f64,
    pub device_name: String,
}

impl MeasuredLaunchCost {
    /// Read a file written by `launch-probe --format json -o FILE`. Bad files are input
    /// errors (exit 2).
    pub fn from_file(path: &Path) -> Result<MeasuredLaunchCost> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::input(format!(
                "cannot read launch-cost file {}: {e}; write one with `stepgate launch-probe --format json -o FILE`",
                path.display()
            ))
        })?;
        let r: ProbeReport = serde_json::from_str(&text).map_err(|e| {
            Error::input(format!(
                "{} is not a launch-probe JSON file ({e}); write one with `stepgate launch-probe --format json -o FILE`",
                path.display()
            ))
        })?;
        if r.schema_version != SCHEMA_VERSION {
            return Err(Error::input(format!(
                "{} has launch-probe schema_version {}, this stepgate reads {SCHEMA_VERSION}; re-run launch-probe",
                path.display(),
                r.schema_version
            )));
        }
        let v = r.end_to_end_per_launch_ns.min;
        if !r.measured || !v.is_finite() || v <= 0.0 {
            return Err(Error::input(format!(
                "{} holds no measured per-launch cost; re-run launch-probe on the GPU host",
                path.display()
            )));
        }
        Ok(MeasuredLaunchCost {
            per_launch_ns: v,
            device_name: r.device_name,
        })
    }

    /// How a table labels this figure.
    pub fn label(&self) -> String {
        format!("measured by launch-probe on {}", self.device_name)
    }
}

/// Median of a non-empty slice of per-launch values (upper median for even counts, as the
/// seed's `sorted(x)[len(x)//2]`).
pub fn median(values: &[f64]) -> f64 {
    crate::stats::upper_median(values).unwrap_or(f64::NAN)
}

/// Run the probe on this machine; exit-4 error when there is no driver or device.
pub fn run(params: &ProbeParams) -> Result<ProbeReport> {
    cuda::measure(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_is_the_upper_middle() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 3.0);
    }
}
