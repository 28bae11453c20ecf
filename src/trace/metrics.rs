//! Measured GPU counters (nsys GPU metrics): which ones stepgate reads and their samples.

/// A measured GPU counter stepgate reads (nsys GPU metrics, docs/nsys-format.md §10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GpuMetric {
    /// `DRAM Read Bandwidth` (`VRAM Read Bandwidth` on GPUs with GDDR): the share of
    /// elapsed cycles the DRAM interface was reading, % of peak.
    DramRead,
    /// `DRAM Write Bandwidth` / `VRAM Write Bandwidth`, % of peak.
    DramWrite,
    /// `SMs Active`: cycles with at least one warp resident on an SM, % (averaged over SMs).
    SmActive,
    /// `SM Issue`: cycles the SM sub-partitions issued an instruction, %.
    SmIssue,
}

/// One measured counter of one GPU, sample by sample (measured values, as exported).
#[derive(Debug, Clone, PartialEq)]
pub struct GpuMetricSeries {
    /// Device id as the ops carry it.
    pub device: i64,
    /// True when `device` is inferred (the sample's target matched no GPU of the
    /// report, so its low byte was taken as the device id); false when read.
    pub device_inferred: bool,
    pub metric: GpuMetric,
    /// The metric's name as exported (`DRAM Read Bandwidth [Throughput %]`).
    pub name: String,
    /// The unit: the name's bracketed suffix (`Throughput %`), else `%` (the unit NVIDIA
    /// documents for these metrics).
    pub unit: String,
    /// `(timestamp_ns, value)`, sorted by time; each value covers the sampling period
    /// that ends at its timestamp.
    pub samples: Vec<(i64, f64)>,
}

impl GpuMetricSeries {
    /// The sampling period (derived): the median spacing of the samples.
    pub fn interval_ns(&self) -> Option<i64> {
        let mut d: Vec<i64> = self.samples.windows(2).map(|w| w[1].0 - w[0].0).collect();
        if d.is_empty() {
            return None;
        }
        let mid = d.len() / 2;
        Some(*d.select_nth_unstable(mid).1)
    }

    /// Mean value (derived) of the samples taken in `[start_ns, end_ns)`, `None` when
    /// there are none.
    pub fn mean_in(&self, start_ns: i64, end_ns: i64) -> Option<f64> {
        let lo = self.samples.partition_point(|s| s.0 < start_ns);
        let hi = self.samples.partition_point(|s| s.0 < end_ns);
        let window = self.samples.get(lo..hi).filter(|w| !w.is_empty())?;
        Some(window.iter().map(|s| s.1).sum::<f64>() / window.len() as f64)
    }
}
