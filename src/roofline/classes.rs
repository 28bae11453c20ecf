//! The step floor split by kernel class (docs/method.md §4.1): which of the step's
//! compulsory bytes and FLOPs each class of kernels moves, and the floor of each class on
//! its own roof. Pure arithmetic on a [`StepFloor`], no trace.
//!
//! Weight GEMMs stream the linear layers, the routed experts the step touches and lm_head;
//! attention reads the KV cache; the KV-cache writes store the new tokens; the rest (norms,
//! rope, activations, sampling, copies) reads the 2-byte norms, biases and routers;
//! activation quantize kernels move no compulsory bytes (floor 0).
//! Summed, these are the step's bytes Q. Communication moves the tensor-parallel
//! all-reduces over the interconnect, not HBM: its floor is those bytes over the GPU's
//! cited link bandwidth, or none where the GPU table has no figure.

use crate::wire::attribution::{Bound, KernelClass};
use crate::wire::roofline::{GpuSpec, StepFloor};

/// One class's share of a step floor (derived).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassFloor {
    pub class: KernelClass,
    /// Compulsory bytes on one GPU.
    pub bytes: f64,
    pub flops: f64,
    /// The bandwidth the bytes move at: β, or the interconnect for communication.
    pub roof_bytes_per_s: Option<f64>,
    /// max(bytes / roof, FLOPs / π), ns; None without a roof.
    pub floor_ns: Option<f64>,
    pub bound: Option<Bound>,
    /// How the floor was obtained, or why there is none.
    pub basis: String,
}

/// The per-class floors of one step on one GPU at tensor-parallel degree `tp`, in
/// [`KernelClass::ALL`] order.
pub fn class_floors(f: &StepFloor, gpu: &GpuSpec, tp: u32) -> Vec<ClassFloor> {
    let beta = f.hbm_bytes_per_s;
    let pi = f.peak_flops_per_s;
    let on_hbm = |class, bytes: f64, flops: f64, what: &str| {
        let (floor, bound) = roof(bytes / beta, flops / pi);
        ClassFloor {
            class,
            bytes,
            flops,
            roof_bytes_per_s: Some(beta),
            floor_ns: Some(floor * 1e9),
            bound: Some(bound),
            basis: format!(
                "derived: {what} / β{}",
                if bound == Bound::Compute {
                    ", FLOPs / π binds"
                } else {
                    ""
                }
            ),
        }
    };
    let comm = match (tp, gpu.interconnect) {
        (0 | 1, _) => ClassFloor {
            class: KernelClass::Communication,
            bytes: 0.0,
            flops: 0.0,
            roof_bytes_per_s: None,
            floor_ns: Some(0.0),
            bound: None,
            basis: "derived: TP 1 needs no collective".to_owned(),
        },
        (_, Some(link)) => {
            let bw = link.group_bytes_per_s(tp);
            ClassFloor {
                class: KernelClass::Communication,
                bytes: f.allreduce_bytes,
                flops: 0.0,
                roof_bytes_per_s: Some(bw),
                floor_ns: Some(f.allreduce_bytes / bw * 1e9),
                bound: Some(Bound::Memory),
                basis: format!(
                    "derived: 2 all-reduces per layer, 2(TP−1)/TP of T·d each, over the link (cited: {})",
                    link.source
                ),
            }
        }
        (_, None) => ClassFloor {
            class: KernelClass::Communication,
            bytes: f.allreduce_bytes,
            flops: 0.0,
            roof_bytes_per_s: None,
            floor_ns: None,
            bound: None,
            basis: format!(
                "no floor: the GPU table cites no interconnect bandwidth for {}",
                gpu.name
            ),
        },
    };
    vec![
        on_hbm(
            KernelClass::Weights,
            f.weights.gemm(),
            f.dense_flops,
            "linear, expert and lm_head weights",
        ),
        on_hbm(
            KernelClass::Attention,
            f.kv_read_bytes,
            f.attention_flops,
            "KV read",
        ),
        on_hbm(KernelClass::KvWrite, f.kv_write_bytes, 0.0, "KV write"),
        comm,
        // Activation quantization moves activations, which the byte model does not count
        // (weights and KV are priced in their stored dtype): no compulsory bytes, like the
        // elementwise kernels of the rest, so all its time is excess.
        ClassFloor {
            class: KernelClass::Quantize,
            bytes: 0.0,
            flops: 0.0,
            roof_bytes_per_s: Some(beta),
            floor_ns: Some(0.0),
            bound: Some(Bound::Memory),
            basis: "derived: activation (de)quantization moves no compulsory bytes (weights and KV are priced in their stored dtype)".to_owned(),
        },
        on_hbm(
            KernelClass::Rest,
            f.weights.small,
            0.0,
            "norm, bias and router weights",
        ),
    ]
}

/// (max(memory, compute) in seconds, which binds).
fn roof(memory_s: f64, compute_s: f64) -> (f64, Bound) {
    if compute_s > memory_s {
        (compute_s, Bound::Compute)
    } else {
        (memory_s, Bound::Memory)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roofline::floor::step_floor;
    use crate::roofline::{gpu, presets};
    use crate::wire::roofline::{FloorOptions, StepComposition};

    #[test]
    fn memory_bound_classes_sum_to_the_step_bytes() {
        // Llama-3-8B, B=32, s=2048 on an H100: weights 15,009,849,344 B of which lm_head
        // is 128,256·4096·2 = 1,050,673,152 B and the norms (65 × 4096 × 2) 532,480 B.
        let m = presets::preset("llama-3-8b").unwrap();
        let g = gpu::lookup("h100-sxm").unwrap();
        let f = step_floor(
            &m,
            &g,
            &StepComposition::decode(32, 2048),
            &FloorOptions::default(),
        );
        let c = class_floors(&f, &g, 1);
        let by = |k| c.iter().find(|x| x.class == k).unwrap();
        assert_eq!(by(KernelClass::Rest).bytes, 65.0 * 4096.0 * 2.0);
        assert_eq!(
            by(KernelClass::Weights).bytes,
            15_009_849_344.0 - 65.0 * 4096.0 * 2.0
        );
        assert_eq!(by(KernelClass::Attention).bytes, 8_589_934_592.0);
        assert_eq!(by(KernelClass::KvWrite).bytes, 4_194_304.0);
        let sum: f64 = c.iter().map(|x| x.floor_ns.unwrap()).sum();
        assert!((sum - f.floor_ns).abs() < 1e-3, "{sum} vs {}", f.floor_ns);
        assert_eq!(by(KernelClass::Communication).floor_ns, Some(0.0));
        // One floor per class, in table order; quantize prices no bytes.
        let order: Vec<KernelClass> = c.iter().map(|x| x.class).collect();
        assert_eq!(order, KernelClass::ALL);
        assert_eq!(by(KernelClass::Quantize).bytes, 0.0);
        assert_eq!(by(KernelClass::Quantize).floor_ns, Some(0.0));
    }

    #[test]
    fn communication_floor_needs_a_cited_link() {
        // Llama-3-70B at TP 4, 32 decode tokens: 2 · 80 layers · 32 · 8192 · 2 B, times
        // 2·3/4 on the wire = 125,829,120 B; over NVLink's 450 GB/s each way.
        let m = presets::preset("llama-3-70b").unwrap();
        let opts = FloorOptions {
            tp: 4,
            ..FloorOptions::default()
        };
        let comp = StepComposition::decode(32, 1010);
        let h100 = gpu::lookup("h100-sxm").unwrap();
        let f = step_floor(&m, &h100, &comp, &opts);
        assert_eq!(f.allreduce_bytes, 2.0 * 80.0 * 32.0 * 8192.0 * 2.0 * 1.5);
        let c = class_floors(&f, &h100, 4);
        assert_eq!(c[3].class, KernelClass::Communication);
        assert_eq!(c[3].floor_ns, Some(125_829_120.0 / 450e9 * 1e9));
        // The PCIe part has no cited link: no floor, and it says so.
        let pcie = gpu::lookup("h100-pcie").unwrap();
        let c = class_floors(&step_floor(&m, &pcie, &comp, &opts), &pcie, 4);
        assert_eq!(c[3].floor_ns, None);
        assert!(c[3].basis.starts_with("no floor"), "{}", c[3].basis);
        // A full mesh (MI300X) sends to the other three peers at once: 3 × 64 GB/s.
        let mi = gpu::lookup("mi300x").unwrap();
        let f = step_floor(&m, &mi, &comp, &opts);
        let c = class_floors(&f, &mi, 4);
        assert_eq!(c[3].roof_bytes_per_s, Some(3.0 * 64e9));
    }
}
