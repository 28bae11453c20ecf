//! Synthetic captures for tests and benchmarks: [`writer::NsysWriter`] writes the real DDL
//! of three nsys generations, [`kineto::KinetoWriter`] writes PyTorch-profiler Chrome
//! traces, [`workload`] builds engine-step scenarios and returns the per-step values they
//! must produce, [`steps`] does the same for every step-marker form (vLLM, SGLang,
//! TensorRT-LLM, PyTorch, none) in both formats, [`replicate`] scales a real fixture in time,
//! [`planted`] writes decode and prefill steps with one diagnosable cause planted
//! ([`planted_point`]: an operating point only the launch grids show; [`planted_moe`]:
//! MoE and MLA decodes; [`planted_mixed`]: a prefill chunk beside decodes),
//! [`uncorrelated`] writes ops and calls of correlation id 0 in both formats, [`long_names`]
//! kernels with names of megabytes, [`training`] writes training ranks of every
//! parallelism, [`rocpd`] writes AMD rocpd databases from rocprofiler-sdk's DDL, [`augment`] adds GPU work to a real export captured
//! without a GPU.

pub mod augment;
pub mod kineto;
pub mod long_names;
pub mod planted;
pub mod planted_kinds;
pub mod planted_mixed;
pub mod planted_moe;
pub mod planted_point;
pub mod replicate;
pub mod rocpd;
pub mod steps;
pub mod training;
pub mod uncorrelated;
pub mod workload;
pub mod writer;

pub use writer::{Layout, NsysWriter};
