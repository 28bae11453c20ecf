//! GPU metrics (`nsys profile --gpu-metrics-devices`): the DRAM bandwidth and SM activity
//! series of each sampled GPU. TARGET_INFO_GPU_METRICS names the metrics per target; only
//! the ones stepgate uses are read from GPU_METRICS, never every counter
//! (docs/nsys-format.md §10).

use std::collections::HashMap;
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use super::super::queries::{self, Fill};
use super::super::schema::Schema;
use super::open::sql_error;
use super::{cursor, int, prepare, time};
use crate::exit::Result;
use crate::trace::{GpuMetric, GpuMetricSeries};

/// The metric a GPU-metrics name denotes, and its unit. Names are `DRAM Read Bandwidth`
/// in older nsys and `DRAM Read Bandwidth [Throughput %]` in newer; GPUs with GDDR say
/// `VRAM` instead of `DRAM`.
pub fn classify(name: &str) -> Option<(GpuMetric, String)> {
    let (base, unit) = match name.split_once(" [") {
        Some((b, rest)) => (b, rest.strip_suffix(']').unwrap_or(rest)),
        None => (name, "%"),
    };
    let metric = match base.trim() {
        "DRAM Read Bandwidth" | "VRAM Read Bandwidth" => GpuMetric::DramRead,
        "DRAM Write Bandwidth" | "VRAM Write Bandwidth" => GpuMetric::DramWrite,
        "SMs Active" => GpuMetric::SmActive,
        "SM Issue" => GpuMetric::SmIssue,
        _ => return None,
    };
    Some((metric, unit.to_owned()))
}

/// The GPU a metrics target samples: its `typeId`'s low byte is the PerfWorks GPU id,
/// mapped to the device id through TARGET_INFO_GPU (`pw_ids` = `(pwGpuId, id)`). Without a
/// match the low byte itself is taken (inferred).
fn device_of(type_id: i64, pw_ids: &[(i64, i64)]) -> (i64, bool) {
    let pw = type_id & 0xFF;
    match pw_ids.iter().find(|(p, _)| *p == pw) {
        Some(&(_, id)) => (id, false),
        None => (pw, true),
    }
}

/// Every DRAM-bandwidth and SM-activity series the export holds, samples sorted by time.
/// Rows whose timestamp or value is unreadable are left out, with one warning.
pub(super) fn load_gpu_metrics(
    conn: &Connection,
    schema: &Schema,
    path: &Path,
    pw_ids: &[(i64, i64)],
    warnings: &mut Vec<String>,
) -> Result<Vec<GpuMetricSeries>> {
    let mut series: Vec<GpuMetricSeries> = Vec::new();
    // (typeId, metricId) → series.
    let mut index: HashMap<(i64, i64), usize> = HashMap::new();
    let mut ids: Vec<i64> = Vec::new();
    if let Some(mut st) = prepare(conn, schema, &queries::GPU_METRIC_NAMES, path)? {
        let err = |e| sql_error(path, "gpu_metric_names", e);
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let (Some(type_id), Some(metric_id)) =
                (int(r, 0).map_err(err)?, int(r, 1).map_err(err)?)
            else {
                continue;
            };
            let Some(name) = r.get::<_, Option<String>>(2).ok().flatten() else {
                continue;
            };
            let Some((metric, unit)) = classify(&name) else {
                continue;
            };
            if index.contains_key(&(type_id, metric_id)) {
                continue;
            }
            let (device, device_inferred) = device_of(type_id, pw_ids);
            if device_inferred
                && !series
                    .iter()
                    .any(|s| s.device_inferred && s.device == device)
            {
                warnings.push(format!(
                    "GPU metrics target {type_id:#x} matches no TARGET_INFO_GPU row by \
                     pwGpuId; its samples are given to device {device}, its low byte \
                     (inferred)"
                ));
            }
            index.insert((type_id, metric_id), series.len());
            series.push(GpuMetricSeries {
                device,
                device_inferred,
                metric,
                name,
                unit,
                samples: Vec::new(),
            });
            if !ids.contains(&metric_id) {
                ids.push(metric_id);
            }
        }
    }
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let fill = Fill {
        ids: &ids,
        ..Fill::default()
    };
    let mut bad = 0u64;
    if let Some(mut r) = cursor(conn, schema, &queries::GPU_METRICS, path, &fill)? {
        let err = |e| sql_error(path, "gpu_metrics", e);
        while r.next().map_err(err)? {
            let r = &r;
            let key = (int(r, 1).map_err(err)?, int(r, 2).map_err(err)?);
            let Some(&k) = key.0.zip(key.1).and_then(|k| index.get(&k)) else {
                continue; // the same metric id of a target the name table does not list
            };
            let value = match r.cell(3).map_err(err)? {
                ValueRef::Integer(v) => Some(v as f64),
                ValueRef::Real(v) if v.is_finite() => Some(v),
                _ => None,
            };
            match (time(r, 0).map_err(err)?, value) {
                (Some(t), Some(v)) => series[k].samples.push((t, v)),
                _ => bad += 1,
            }
        }
    }
    if bad > 0 {
        warnings.push(format!(
            "{bad} GPU_METRICS row(s) had a NULL, non-numeric or out-of-range timestamp or \
             value and were left out"
        ));
    }
    for s in &mut series {
        if !s.samples.is_sorted_by_key(|x| x.0) {
            s.samples.sort_by_key(|x| x.0);
        }
    }
    series.retain(|s| !s.samples.is_empty());
    series.sort_by_key(|s| (s.device, s.metric));
    Ok(series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_both_generations() {
        assert_eq!(
            classify("DRAM Read Bandwidth [Throughput %]"),
            Some((GpuMetric::DramRead, "Throughput %".to_owned()))
        );
        assert_eq!(
            classify("DRAM Write Bandwidth"),
            Some((GpuMetric::DramWrite, "%".to_owned()))
        );
        assert_eq!(
            classify("VRAM Read Bandwidth [Throughput %]").map(|c| c.0),
            Some(GpuMetric::DramRead)
        );
        assert_eq!(
            classify("SMs Active").map(|c| c.0),
            Some(GpuMetric::SmActive)
        );
        assert_eq!(
            classify("SM Issue [Throughput %]").map(|c| c.0),
            Some(GpuMetric::SmIssue)
        );
        assert_eq!(classify("GPC Clock Frequency [MHz]"), None);
        assert_eq!(classify("Tensor Active [Throughput %]"), None);
        assert_eq!(classify("SM Active"), None);
    }

    #[test]
    fn targets_map_through_the_perfworks_id() {
        // Public readers' layout: a 0x1000100000000 base plus the PerfWorks GPU id.
        let pw = [(0, 2), (1, 3), (2, 0)];
        assert_eq!(device_of(0x1_0001_0000_0002, &pw), (0, false));
        assert_eq!(device_of(0x1_0001_0000_0000, &pw), (2, false));
        assert_eq!(device_of(0x1_0001_0000_0007, &pw), (7, true));
    }
}
