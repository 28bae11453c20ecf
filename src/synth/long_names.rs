//! A small capture with two huge kernel names (templates expanded without end, or a name
//! written by a broken tool), in both formats: the names differ only in their last
//! bytes, so a reader that bounds names must still keep them two (docs/ingest.md,
//! "Name memory"). A few ordinary kernels surround them.

use std::path::Path;

use crate::exit::Result;
use crate::synth::kineto::{DeviceProps, JId, KinetoWriter};
use crate::synth::writer::{CallRec, KernelRec};
use crate::synth::{Layout, NsysWriter};

/// Which format to write.
pub use crate::synth::uncorrelated::Format;

/// The two long names: `bytes` bytes each, equal but for their last two.
pub fn names(bytes: usize) -> [String; 2] {
    let body = "void at::native::kernel<".to_owned() + &"float, ".repeat(bytes / 7 + 1);
    let cut = &body[..bytes.saturating_sub(2)];
    [format!("{cut}>A"), format!("{cut}>B")]
}

const ORDINARY: [&str; 2] = ["gemm_kernel", "rmsnorm_kernel"];
const PID: i64 = 77;

/// (name, start ns, end ns, correlation) of every kernel: each name twice.
fn kernels(long: &[String; 2]) -> Vec<(&str, i64, i64, i64)> {
    let all: Vec<&str> = ORDINARY
        .iter()
        .copied()
        .chain(long.iter().map(String::as_str))
        .collect();
    (0..8)
        .map(|i| {
            let s = 1_000_000 + i as i64 * 100_000;
            (all[i % all.len()], s, s + 40_000, i as i64 + 1)
        })
        .collect()
}

/// Write the capture with names of `bytes` bytes; returns the two long names.
pub fn write(path: &Path, format: Format, bytes: usize) -> Result<[String; 2]> {
    let long = names(bytes);
    let ks = kernels(&long);
    match format {
        Format::Nsys => {
            let mut w = NsysWriter::create(path, Layout::Nsys2026_2)?;
            let launch = w.string("cudaLaunchKernel_v7000")?;
            for &(name, s, e, corr) in &ks {
                let n = w.string(name)?;
                w.call(&CallRec {
                    start_ns: s - 20_000,
                    end_ns: s - 15_000,
                    pid: PID,
                    tid: PID,
                    correlation_id: Some(corr),
                    name: launch,
                    ..CallRec::default()
                })?;
                w.kernel(&KernelRec {
                    start_ns: s,
                    end_ns: e,
                    device: 0,
                    stream: 7,
                    pid: PID,
                    correlation_id: Some(corr),
                    demangled_name: n,
                    short_name: n,
                    ..KernelRec::default()
                })?;
            }
            w.finish()?;
        }
        Format::Kineto => {
            let mut w = KinetoWriter::new(1_767_189_312_000_000_000);
            w.device(DeviceProps::h100(0));
            for &(name, s, e, corr) in &ks {
                let c = format!("\"correlation\": {corr}");
                w.complete(
                    "cuda_runtime",
                    "cudaLaunchKernel",
                    JId::Num(PID),
                    JId::Num(PID),
                    s - 20_000,
                    5_000,
                    &c,
                );
                w.complete(
                    "kernel",
                    name,
                    JId::Num(0),
                    JId::Num(7),
                    s,
                    e - s,
                    &format!("\"device\": 0, \"stream\": 7, {c}"),
                );
            }
            w.finish(path)?;
        }
    }
    Ok(long)
}
