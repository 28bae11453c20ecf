//! Cited GPU peaks (HBM bandwidth, dense tensor FLOP/s, SMs, memory) and matching of the
//! device names that reports carry (nsys `TARGET_INFO_GPU.name`, Kineto
//! `deviceProperties.name`) to a table entry.
//!
//! Every figure is a vendor datasheet peak (dense, i.e. without 2:4 sparsity), never a
//! measurement: a measured bandwidth (`--hbm-tb-s`) or FLOP rate (`--peak-tflops`) beats it.

use crate::wire::roofline::{GpuSpec, Interconnect};

impl Interconnect {
    /// Bytes/s one GPU can send to the other `tp − 1` GPUs of its group at once.
    pub(crate) fn group_bytes_per_s(&self, tp: u32) -> f64 {
        if self.mesh {
            self.per_direction_bytes_per_s * f64::from(tp.saturating_sub(1).max(1))
        } else {
            self.per_direction_bytes_per_s
        }
    }
}

/// NVLink 4 on HGX H100/H200 boards: 900 GB/s total per GPU, both directions together.
const NVLINK4: Interconnect = Interconnect {
    per_direction_bytes_per_s: 450.0e9,
    mesh: false,
    source: "NVLink 4 through NVSwitch: 900 GB/s per GPU bidirectional (NVIDIA H100/H200 datasheets), 450 GB/s each way",
};

/// NVLink 5 on HGX B200 boards: 1.8 TB/s total per GPU.
const NVLINK5: Interconnect = Interconnect {
    per_direction_bytes_per_s: 900.0e9,
    mesh: false,
    source: "NVLink 5 through NVSwitch: 1.8 TB/s per GPU bidirectional (NVIDIA DGX/HGX B200 datasheet), 900 GB/s each way",
};

/// NVLink 3 on HGX A100 boards: 600 GB/s total per GPU.
const NVLINK3: Interconnect = Interconnect {
    per_direction_bytes_per_s: 300.0e9,
    mesh: false,
    source: "NVLink 3 through NVSwitch: 600 GB/s per GPU bidirectional (NVIDIA A100 datasheet), 300 GB/s each way",
};

/// AMD Infinity Fabric on MI300-series OAM boards: seven links, one to each peer.
const INFINITY_FABRIC: Interconnect = Interconnect {
    per_direction_bytes_per_s: 64.0e9,
    mesh: true,
    source: "Infinity Fabric full mesh: 128 GB/s bidirectional per peer link (AMD Instinct MI300X/MI325X data sheets), 64 GB/s each way",
};

/// The table. Sources are in `source`; comments say where a number needs care.
pub const GPUS: &[GpuSpec] = &[
    // 3.35 TB/s and 989.4 TFLOP/s are the figures docs/method.md §1 cites and the golden cases use.
    GpuSpec {
        key: "h100-sxm",
        name: "NVIDIA H100 SXM5 80GB",
        hbm_bytes_per_s: 3.35e12,
        bf16_flops_per_s: 989.4e12,
        fp8_flops_per_s: Some(1978.9e12),
        sm_count: 132,
        memory_bytes: 80.0e9,
        source: "NVIDIA H100 Tensor Core GPU datasheet (SXM5; dense = half the sparse figure)",
        interconnect: Some(NVLINK4),
    },
    // docs/method.md §9 gives h100-pcie 2.0 TB/s.
    GpuSpec {
        key: "h100-pcie",
        name: "NVIDIA H100 PCIe 80GB",
        hbm_bytes_per_s: 2.0e12,
        bf16_flops_per_s: 756.0e12,
        fp8_flops_per_s: Some(1513.0e12),
        sm_count: 114,
        memory_bytes: 80.0e9,
        source: "NVIDIA H100 Tensor Core GPU datasheet (PCIe); docs/method.md §9",
        interconnect: None,
    },
    GpuSpec {
        key: "h200",
        name: "NVIDIA H200 SXM 141GB",
        hbm_bytes_per_s: 4.8e12,
        bf16_flops_per_s: 989.4e12,
        fp8_flops_per_s: Some(1978.9e12),
        sm_count: 132,
        memory_bytes: 141.0e9,
        source: "NVIDIA H200 Tensor Core GPU datasheet (SXM)",
        interconnect: Some(NVLINK4),
    },
    GpuSpec {
        key: "h20",
        name: "NVIDIA H20 96GB",
        hbm_bytes_per_s: 4.0e12,
        bf16_flops_per_s: 148.0e12,
        fp8_flops_per_s: Some(296.0e12),
        sm_count: 78,
        memory_bytes: 96.0e9,
        source: "NVIDIA H20 product brief (China-market Hopper)",
        interconnect: None,
    },
    GpuSpec {
        key: "a100-40gb",
        name: "NVIDIA A100 SXM4 40GB",
        hbm_bytes_per_s: 1.555e12,
        bf16_flops_per_s: 312.0e12,
        fp8_flops_per_s: None,
        sm_count: 108,
        memory_bytes: 40.0e9,
        source: "NVIDIA A100 Tensor Core GPU datasheet (SXM4 40GB)",
        interconnect: Some(NVLINK3),
    },
    // docs/method.md §9 gives a100-80 2.039 TB/s (the SXM4 part).
    GpuSpec {
        key: "a100-80gb",
        name: "NVIDIA A100 SXM4 80GB",
        hbm_bytes_per_s: 2.039e12,
        bf16_flops_per_s: 312.0e12,
        fp8_flops_per_s: None,
        sm_count: 108,
        memory_bytes: 80.0e9,
        source: "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB); docs/method.md §9",
        interconnect: Some(NVLINK3),
    },
    GpuSpec {
        key: "a100-80gb-pcie",
        name: "NVIDIA A100 PCIe 80GB",
        hbm_bytes_per_s: 1.935e12,
        bf16_flops_per_s: 312.0e12,
        fp8_flops_per_s: None,
        sm_count: 108,
        memory_bytes: 80.0e9,
        source: "NVIDIA A100 Tensor Core GPU datasheet (PCIe 80GB)",
        interconnect: None,
    },
    // NVIDIA publishes no A10G datasheet (AWS G5 part). Memory and bandwidth equal the A10's
    // 24 GB / 600 GB/s; its tensor peak is lower than the A10's 125 TFLOP/s.
    GpuSpec {
        key: "a10g",
        name: "NVIDIA A10G 24GB",
        hbm_bytes_per_s: 600.0e9,
        bf16_flops_per_s: 70.0e12,
        fp8_flops_per_s: None,
        sm_count: 80,
        memory_bytes: 24.0e9,
        source: "AWS G5 / third-party spec (baseten.co 'NVIDIA A10 vs A10G'); no NVIDIA datasheet",
        interconnect: None,
    },
    // docs/method.md §9 cites 300 GB/s and 121 TFLOP/s dense bf16 for the L4.
    GpuSpec {
        key: "l4",
        name: "NVIDIA L4 24GB",
        hbm_bytes_per_s: 300.0e9,
        bf16_flops_per_s: 121.0e12,
        fp8_flops_per_s: Some(242.5e12),
        sm_count: 58,
        memory_bytes: 24.0e9,
        source: "NVIDIA L4 Tensor Core GPU datasheet; docs/method.md §9",
        interconnect: None,
    },
    // docs/method.md §9 gives l40s 0.864 TB/s.
    GpuSpec {
        key: "l40s",
        name: "NVIDIA L40S 48GB",
        hbm_bytes_per_s: 864.0e9,
        bf16_flops_per_s: 362.05e12,
        fp8_flops_per_s: Some(733.0e12),
        sm_count: 142,
        memory_bytes: 48.0e9,
        source: "NVIDIA L40S datasheet; docs/method.md §9",
        interconnect: None,
    },
    // GeForce parts run bf16 with FP32 accumulate at half the FP16-accumulate rate.
    GpuSpec {
        key: "rtx-4090",
        name: "NVIDIA GeForce RTX 4090 24GB",
        hbm_bytes_per_s: 1.008e12,
        bf16_flops_per_s: 165.2e12,
        fp8_flops_per_s: Some(330.3e12),
        sm_count: 128,
        memory_bytes: 24.0e9,
        source: "NVIDIA Ada Lovelace architecture whitepaper, Table (RTX 4090, FP32 accumulate)",
        interconnect: None,
    },
    GpuSpec {
        key: "b200",
        name: "NVIDIA B200 180GB",
        hbm_bytes_per_s: 8.0e12,
        bf16_flops_per_s: 2250.0e12,
        fp8_flops_per_s: Some(4500.0e12),
        sm_count: 148,
        memory_bytes: 180.0e9,
        source: "NVIDIA DGX/HGX B200 datasheet (per GPU, dense)",
        interconnect: Some(NVLINK5),
    },
    GpuSpec {
        key: "mi300x",
        name: "AMD Instinct MI300X 192GB",
        hbm_bytes_per_s: 5.3e12,
        bf16_flops_per_s: 1307.4e12,
        fp8_flops_per_s: Some(2614.9e12),
        sm_count: 304,
        memory_bytes: 192.0e9,
        source: "AMD Instinct MI300X data sheet (dense; 304 CUs)",
        interconnect: Some(INFINITY_FABRIC),
    },
    GpuSpec {
        key: "mi325x",
        name: "AMD Instinct MI325X 256GB",
        hbm_bytes_per_s: 6.0e12,
        bf16_flops_per_s: 1307.4e12,
        fp8_flops_per_s: Some(2614.9e12),
        sm_count: 304,
        memory_bytes: 256.0e9,
        source: "AMD Instinct MI325X data sheet (dense; 304 CUs)",
        interconnect: Some(INFINITY_FABRIC),
    },
];

/// Aliases accepted by `--gpu` besides the keys (the golden files use `a100-80`).
const ALIASES: &[(&str, &str)] = &[
    ("a100-80", "a100-80gb"),
    ("a100", "a100-80gb"),
    ("a100-40", "a100-40gb"),
    ("h100", "h100-sxm"),
    ("4090", "rtx-4090"),
];

/// A preset by key or alias (case-insensitive, `_` and ` ` read as `-`).
pub fn lookup(name: &str) -> Option<GpuSpec> {
    let n = name.trim().to_ascii_lowercase().replace(['_', ' '], "-");
    let key = ALIASES
        .iter()
        .find(|(a, _)| *a == n)
        .map(|(_, k)| *k)
        .unwrap_or(n.as_str());
    GPUS.iter().find(|g| g.key == key).cloned()
}

/// The preset for a device name as a report carries it, e.g. `NVIDIA H100 80GB HBM3`,
/// `NVIDIA A100-SXM4-40GB`, `AMD Instinct MI300X`. None when no entry matches.
pub(crate) fn from_report_name(name: &str) -> Option<GpuSpec> {
    let n = name.to_ascii_lowercase();
    let has = |s: &str| n.contains(s);
    // Order matters: longer model numbers first (h200 before h20, l40s before l4).
    let key = if has("mi325") {
        "mi325x"
    } else if has("mi300") {
        "mi300x"
    } else if has("b200") {
        "b200"
    } else if has("h200") {
        "h200"
    } else if has("h100") {
        // "NVIDIA H100 PCIe"; SXM parts report "NVIDIA H100 80GB HBM3".
        if has("pcie") {
            "h100-pcie"
        } else {
            "h100-sxm"
        }
    } else if has_word(&n, "h20") {
        "h20"
    } else if has("a100") {
        if has("40gb") {
            "a100-40gb"
        } else if has("pcie") {
            "a100-80gb-pcie"
        } else {
            "a100-80gb"
        }
    } else if has("a10g") {
        "a10g"
    } else if has("l40s") {
        "l40s"
    } else if has_word(&n, "l4") {
        "l4"
    } else if has("4090") {
        "rtx-4090"
    } else {
        return None;
    };
    lookup(key)
}

/// Device memory a report states may differ from the datasheet's by this fraction (the
/// datasheet's "192 GB" is 192 GiB on MI300X, 206.1e9 bytes; an H100's 80 GB reads 85.0e9).
pub(crate) const MEMORY_TOLERANCE: f64 = 0.10;

/// The one preset whose SM (CU) count equals `sm_count` and whose memory is within
/// [`MEMORY_TOLERANCE`] of `memory_bytes`, for a report whose device has no name (ROCm
/// Kineto writes `"name": ""`). None when no preset or more than one fits: an inference
/// is made only where the properties leave one answer.
pub(crate) fn from_properties(sm_count: i64, memory_bytes: i64) -> Option<GpuSpec> {
    let m = memory_bytes as f64;
    let mut fits = GPUS.iter().filter(|g| {
        i64::from(g.sm_count) == sm_count
            && m > 0.0
            && (m - g.memory_bytes).abs() <= MEMORY_TOLERANCE * g.memory_bytes
    });
    let one = fits.next()?;
    fits.next().is_none().then(|| one.clone())
}

/// `word` occurs delimited by non-alphanumerics (so `l4` does not match `l40`).
fn has_word(hay: &str, word: &str) -> bool {
    hay.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| w == word)
}

impl GpuSpec {
    /// The dense tensor peak for a weight/compute dtype: fp8 weights use the fp8 tensor
    /// path where the part has one, everything else the bf16 peak.
    pub fn peak_flops_per_s(&self, fp8: bool) -> f64 {
        match (fp8, self.fp8_flops_per_s) {
            (true, Some(p)) => p,
            _ => self.bf16_flops_per_s,
        }
    }

    /// The ridge point pi/beta (FLOP per byte) at the bf16 peak.
    pub fn ridge_flop_per_byte(&self) -> f64 {
        self.bf16_flops_per_s / self.hbm_bytes_per_s
    }

    /// All preset keys, for error messages and `--help`.
    pub fn keys() -> Vec<&'static str> {
        GPUS.iter().map(|g| g.key).collect()
    }

    /// Every name `--gpu` accepts: the keys, then the aliases (for "did you mean").
    pub(crate) fn accepted_names() -> impl Iterator<Item = &'static str> {
        GPUS.iter()
            .map(|g| g.key)
            .chain(ALIASES.iter().map(|(a, _)| *a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unnamed_devices_match_only_a_unique_preset() {
        let k = |sms: i64, mem: i64| from_properties(sms, mem).map(|g| g.key);
        // vLLM's ROCm Kineto trace: 304 CUs, 206,141,652,992 bytes (192 GiB).
        assert_eq!(k(304, 206_141_652_992), Some("mi300x"));
        // MI325X: 256 GiB.
        assert_eq!(k(304, 274_877_906_944), Some("mi325x"));
        // CUDA's totalGlobalMem of an H100 SXM and an H200.
        assert_eq!(k(132, 85_029_158_912), Some("h100-sxm"));
        assert_eq!(k(132, 150_110_011_392), Some("h200"));
        // A100 80GB SXM and PCIe share SMs and memory: no guess.
        assert_eq!(k(108, 85_899_345_920), None);
        // Nothing fits, or nothing stated.
        assert_eq!(k(100, 85_899_345_920), None);
        assert_eq!(k(304, 0), None);
    }

    #[test]
    fn report_names_match() {
        let k = |s: &str| from_report_name(s).map(|g| g.key);
        assert_eq!(k("NVIDIA H100 80GB HBM3"), Some("h100-sxm"));
        assert_eq!(k("NVIDIA H100 PCIe"), Some("h100-pcie"));
        assert_eq!(k("NVIDIA H200"), Some("h200"));
        assert_eq!(k("NVIDIA H20"), Some("h20"));
        assert_eq!(k("NVIDIA A100-SXM4-40GB"), Some("a100-40gb"));
        assert_eq!(k("NVIDIA A100-SXM4-80GB"), Some("a100-80gb"));
        assert_eq!(k("NVIDIA A100 80GB PCIe"), Some("a100-80gb-pcie"));
        assert_eq!(k("NVIDIA A10G"), Some("a10g"));
        assert_eq!(k("NVIDIA L4"), Some("l4"));
        assert_eq!(k("NVIDIA L40S"), Some("l40s"));
        assert_eq!(k("NVIDIA GeForce RTX 4090"), Some("rtx-4090"));
        assert_eq!(k("NVIDIA B200"), Some("b200"));
        assert_eq!(k("AMD Instinct MI300X"), Some("mi300x"));
        assert_eq!(k("AMD Instinct MI325X"), Some("mi325x"));
        assert_eq!(k("Tesla V100-SXM2-16GB"), None);
    }

    #[test]
    fn aliases_and_ridge() {
        assert_eq!(lookup("a100-80").unwrap().hbm_bytes_per_s, 2.039e12);
        assert_eq!(lookup("H100_SXM").unwrap().key, "h100-sxm");
        assert!(lookup("v100").is_none());
        // docs/method.md §3: I* = 989.4 / 3.35 = 295.34 FLOP/byte.
        let r = lookup("h100-sxm").unwrap().ridge_flop_per_byte();
        assert!((r - 295.343_283_582).abs() < 1e-6);
    }
}
