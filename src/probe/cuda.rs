//! The measurements themselves: a null kernel from embedded PTX (no nvcc at build time),
//! launched through the driver API in synchronized bursts, unsynchronized bursts, and as a
//! CUDA graph. libcuda is loaded at run time (cudarc `dynamic-loading`), so this builds and
//! runs on machines without CUDA and answers exit 4 there; where the driver library loads
//! but no device is usable (NVIDIA libraries installed, no GPU passed in: common on CI
//! runners) it says exactly that.

use std::ffi::{c_void, CString};
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{result, sys, CudaContext, CudaStream, DriverError};

use super::{median, ProbeParams, CITED_LAUNCH_NS, CITED_LAUNCH_SOURCE, NO_DRIVER, SCHEMA_VERSION};
use crate::exit::{Error, Result};
use crate::wire::probe::{EndToEnd, GraphCost, ProbeReport};

const KERNEL: &str = "stepgate_null";

/// A kernel that does nothing: its wall time in a burst is the launch cost. PTX is JIT-compiled
/// by the driver for the device at hand; PTX ISA 7.0 / sm_75 loads on every driver from CUDA
/// 11.0 onwards and JITs forward to newer chips (Hopper included). A second variant targets
/// the device's own architecture in case a future driver drops the old target.
fn null_ptx(version: &str, target: &str) -> String {
    format!(
        ".version {version}\n.target {target}\n.address_size 64\n\n\
         .visible .entry {KERNEL}()\n{{\n\tret;\n}}\n"
    )
}

/// What this machine's CUDA driver offers, asked without creating a context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceStatus {
    /// libcuda could not be loaded.
    NoDriver,
    /// libcuda loads, but `call` (cuInit or cuDeviceGetCount) says no device is usable.
    NoDevice {
        /// The driver library's file, e.g. `libcuda.so.535.261.03`.
        library: String,
        /// The CUDA version the driver supports (`cuDriverGetVersion`), e.g. `12.2`.
        cuda_version: Option<String>,
        call: &'static str,
        /// What the call returned, e.g. `CUDA_ERROR_NO_DEVICE (no CUDA-capable device is
        /// detected)`, or `0 devices`.
        returned: String,
    },
    /// This many devices are visible.
    Usable(i32),
}

impl std::fmt::Display for DeviceStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceStatus::NoDriver => {
                f.write_str("no CUDA driver found (libcuda could not be loaded)")
            }
            DeviceStatus::NoDevice {
                library,
                cuda_version,
                call,
                returned,
            } => {
                let version = cuda_version
                    .as_ref()
                    .map(|v| format!(", CUDA {v}"))
                    .unwrap_or_default();
                write!(
                    f,
                    "CUDA driver found ({library}{version}) but no usable device: {call} returned \
                     {returned}"
                )
            }
            DeviceStatus::Usable(n) => write!(f, "{n} CUDA device(s) visible"),
        }
    }
}

/// Ask the driver whether a device is usable: load libcuda, cuInit, cuDeviceGetCount. A
/// driver too old for a call cudarc binds (a panic inside the bindings) counts as no driver.
pub fn device_status() -> DeviceStatus {
    // Safety: only tries to dlopen libcuda; nothing is called through it.
    if !unsafe { sys::is_culib_present() } {
        return DeviceStatus::NoDriver;
    }
    std::panic::catch_unwind(|| {
        let no_device = |call, returned| DeviceStatus::NoDevice {
            library: loaded_library().unwrap_or_else(|| "libcuda".into()),
            cuda_version: driver_cuda_version().ok(),
            call,
            returned,
        };
        if let Err(e) = result::init() {
            return no_device("cuInit", describe(&e));
        }
        match result::device::get_count() {
            Ok(n) if n > 0 => DeviceStatus::Usable(n),
            Ok(n) => no_device("cuDeviceGetCount", format!("{n} devices")),
            Err(e) => no_device("cuDeviceGetCount", describe(&e)),
        }
    })
    .unwrap_or(DeviceStatus::NoDriver)
}

/// `CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)`.
fn describe(e: &DriverError) -> String {
    match e.error_string() {
        Ok(s) => format!("{:?} ({})", e.0, s.to_string_lossy()),
        Err(_) => format!("{:?}", e.0),
    }
}

/// The CUDA version the driver supports, `12.8` (allowed before cuInit).
fn driver_cuda_version() -> std::result::Result<String, DriverError> {
    let mut v: std::ffi::c_int = 0;
    // Safety: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut v) }.result()?;
    Ok(format!("{}.{}", v / 1000, (v % 1000) / 10))
}

/// The file name of the driver library this process loaded (from /proc/self/maps, so the
/// real file behind `libcuda.so`'s links: `libcuda.so.535.261.03`).
fn loaded_library() -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    library_in_maps(&maps)
}

fn library_in_maps(maps: &str) -> Option<String> {
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter_map(|p| p.rsplit('/').next())
        .find(|name| name.starts_with("libcuda.so") || name.starts_with("nvcuda"))
        .map(str::to_owned)
}

fn no_device(status: &DeviceStatus) -> Error {
    let what = match status {
        DeviceStatus::NoDriver => NO_DRIVER.to_owned(),
        other => format!("{other}; the cited 2.374 µs stands"),
    };
    Error::environment(format!(
        "{what}; run launch-probe where an NVIDIA GPU is visible to this process (nvidia-smi \
         lists it; a container needs the GPU passed in)"
    ))
}

fn driver(what: &str, e: DriverError) -> Error {
    Error::environment(format!(
        "CUDA driver call failed during launch-probe ({what}: {e}); check `nvidia-smi` on this host"
    ))
}

/// Measure on `params.device`. Panics inside the bindings (a symbol missing from a very old
/// libcuda) become an exit-4 error rather than a crash.
pub fn measure(params: &ProbeParams) -> Result<ProbeReport> {
    let status = device_status();
    if !matches!(status, DeviceStatus::Usable(_)) {
        return Err(no_device(&status));
    }
    let p = *params;
    match std::panic::catch_unwind(move || measure_inner(&p)) {
        Ok(r) => r,
        Err(_) => Err(Error::environment(
            "the CUDA driver lacks a call launch-probe needs (driver older than CUDA 12?); \
             update the NVIDIA driver, or keep the cited 2.374 µs",
        )),
    }
}

fn measure_inner(p: &ProbeParams) -> Result<ProbeReport> {
    result::init().map_err(|e| driver("cuInit", e))?;
    let count = result::device::get_count().map_err(|e| driver("cuDeviceGetCount", e))?;
    if p.device >= count as usize {
        return Err(Error::input(format!(
            "--device {} does not exist: the driver sees {count} device(s), numbered from 0",
            p.device
        )));
    }
    let ctx = CudaContext::new(p.device).map_err(|e| driver("create context", e))?;
    let device_name = ctx.name().map_err(|e| driver("device name", e))?;
    let cc_major = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        .map_err(|e| driver("compute capability", e))?;
    let cc_minor = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        .map_err(|e| driver("compute capability", e))?;
    let cuda_version = driver_cuda_version().map_err(|e| driver("cuDriverGetVersion", e))?;

    let own_target = format!("sm_{cc_major}{cc_minor}");
    let module = load_null_module(&[("7.0", "sm_75"), ("8.0", own_target.as_str())])?;
    let name = CString::new(KERNEL).expect("no NUL in a constant");
    // Safety: module is loaded and holds KERNEL.
    let func = unsafe { result::module::get_function(module, name) }
        .map_err(|e| driver("cuModuleGetFunction", e))?;
    let stream = ctx.new_stream().map_err(|e| driver("create stream", e))?;

    let out = bursts(p, &stream, func);
    // Safety: nothing uses the module after this; graphs holding it were dropped in bursts().
    let _ = unsafe { result::module::unload(module) };
    let (e2e, submit, graph) = out?;

    Ok(ProbeReport {
        schema_version: SCHEMA_VERSION,
        tool: Some(crate::wire::meta::Tool::current()),
        measured: true,
        device_ordinal: p.device,
        device_name,
        compute_capability: format!("{cc_major}.{cc_minor}"),
        driver_version: kernel_module_version(),
        cuda_version,
        iters_per_burst: p.iters,
        repeats: p.repeats,
        end_to_end_per_launch_ns: e2e,
        submit_only_per_launch_ns: submit,
        graph,
        cited_driver_only_ns: CITED_LAUNCH_NS,
        cited_source: CITED_LAUNCH_SOURCE.to_owned(),
    })
}

fn load_null_module(variants: &[(&str, &str)]) -> Result<sys::CUmodule> {
    let mut last = None;
    for (version, target) in variants {
        let src = CString::new(null_ptx(version, target)).expect("no NUL in PTX");
        // Safety: a NUL-terminated PTX string, as cuModuleLoadData requires.
        match unsafe { result::module::load_data(src.as_ptr() as *const c_void) } {
            Ok(m) => return Ok(m),
            Err(e) => last = Some(e),
        }
    }
    Err(driver(
        "load the null-kernel PTX",
        last.expect("at least one variant"),
    ))
}

type Measured = (EndToEnd, f64, GraphCost);

fn bursts(p: &ProbeParams, stream: &Arc<CudaStream>, func: sys::CUfunction) -> Result<Measured> {
    let cu_stream = stream.cu_stream();
    let launch = || -> Result<()> {
        // Safety: a valid function with no parameters, one thread, on a live stream.
        unsafe { result::launch_kernel(func, (1, 1, 1), (1, 1, 1), 0, cu_stream, &mut []) }
            .map_err(|e| driver("cuLaunchKernel", e))
    };
    let sync = || stream.synchronize().map_err(|e| driver("synchronize", e));
    let iters = p.iters.max(1);
    let repeats = p.repeats.max(1);

    // Warm up: module JIT, first-launch setup (the reference method does the same with 200 launches).
    for _ in 0..200 {
        launch()?;
    }
    sync()?;

    // End to end: the host waits for the device at the end of each burst, so burst time /
    // launches is what one launch costs while the host stays ahead of the device.
    let mut bursts_ns = Vec::with_capacity(repeats as usize);
    for _ in 0..repeats {
        sync()?;
        let t0 = Instant::now();
        for _ in 0..iters {
            launch()?;
        }
        sync()?;
        bursts_ns.push(t0.elapsed().as_nanos() as i64);
    }
    let per: Vec<f64> = bursts_ns.iter().map(|&b| b as f64 / iters as f64).collect();
    let e2e = EndToEnd {
        min: per.iter().copied().fold(f64::INFINITY, f64::min),
        median: median(&per),
        bursts_ns,
    };

    // Submit only: the host clock stops before the synchronize, so this is the rate at which
    // the host can issue launches with the device behind (a full launch queue throttles it).
    let mut submit = f64::INFINITY;
    for _ in 0..repeats {
        sync()?;
        let t0 = Instant::now();
        for _ in 0..iters {
            launch()?;
        }
        let ns = t0.elapsed().as_nanos() as f64;
        sync()?;
        submit = submit.min(ns / iters as f64);
    }

    // A CUDA graph of `nodes` null kernels, captured on the stream and replayed.
    let nodes = p.graph_nodes.max(1);
    let launches = p.graph_launches.max(1);
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .map_err(|e| driver("cuStreamBeginCapture", e))?;
    let captured = (0..nodes).try_for_each(|_| launch());
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .map_err(|e| driver("cuStreamEndCapture", e))?;
    captured?;
    let graph = graph.ok_or_else(|| {
        Error::environment(
            "stream capture produced no CUDA graph; check the driver with `nvidia-smi`",
        )
    })?;
    graph.upload().map_err(|e| driver("cuGraphUpload", e))?;
    let glaunch = || graph.launch().map_err(|e| driver("cuGraphLaunch", e));
    for _ in 0..10 {
        glaunch()?;
    }
    sync()?;
    let mut gbursts = Vec::with_capacity(repeats as usize);
    for _ in 0..repeats {
        sync()?;
        let t0 = Instant::now();
        for _ in 0..launches {
            glaunch()?;
        }
        sync()?;
        gbursts.push(t0.elapsed().as_nanos() as i64);
    }
    let best = *gbursts.iter().min().expect("repeats >= 1") as f64 / launches as f64;
    let graph_cost = GraphCost {
        nodes,
        launches_per_burst: launches,
        per_graph_launch_ns: best,
        per_node_ns: best / nodes as f64,
        bursts_ns: gbursts,
    };
    drop(graph);
    Ok((e2e, submit, graph_cost))
}

/// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  ..." → "570.124.06".
fn kernel_module_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    parse_kernel_module_version(&text)
}

fn parse_kernel_module_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.contains("Kernel Module"))?;
    let rest = line.split("Kernel Module").nth(1)?;
    rest.split_whitespace()
        .find(|t| t.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_is_a_parameterless_entry() {
        let p = null_ptx("7.0", "sm_75");
        assert!(p.starts_with(".version 7.0\n.target sm_75\n.address_size 64\n"));
        assert!(p.contains(".visible .entry stepgate_null()\n{\n\tret;\n}"));
    }

    #[test]
    fn the_driver_library_is_named_by_its_real_file() {
        let maps = "7f00-7f01 r-xp 00000000 fd:01 123 /usr/lib/x86_64-linux-gnu/libc.so.6\n\
                    7f02-7f03 r-xp 00000000 fd:01 456 /usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03\n\
                    7f04-7f05 rw-p 00000000 00:00 0 \n";
        assert_eq!(
            library_in_maps(maps).as_deref(),
            Some("libcuda.so.535.261.03")
        );
        assert_eq!(
            library_in_maps("7f00-7f01 r-xp 0 0 0 /lib/libc.so.6\n"),
            None
        );
    }

    #[test]
    fn no_usable_device_says_what_was_found() {
        let s = DeviceStatus::NoDevice {
            library: "libcuda.so.535.261.03".into(),
            cuda_version: Some("12.2".into()),
            call: "cuInit",
            returned: "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".into(),
        };
        assert_eq!(
            s.to_string(),
            "CUDA driver found (libcuda.so.535.261.03, CUDA 12.2) but no usable device: cuInit \
             returned CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"
        );
        let e = no_device(&s);
        assert_eq!(e.exit_code(), crate::exit::ENVIRONMENT);
        assert!(
            e.message.contains("the cited 2.374 µs stands"),
            "{}",
            e.message
        );
        assert!(!e.message.contains("no CUDA driver found"), "{}", e.message);
        let e = no_device(&DeviceStatus::NoDriver);
        assert!(e.message.starts_with(NO_DRIVER), "{}", e.message);
    }

    #[test]
    fn driver_version_from_proc() {
        let t = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  Wed Feb 26 2025\n\
                 GCC version:  gcc version 12.2.0\n";
        assert_eq!(
            parse_kernel_module_version(t).as_deref(),
            Some("570.124.06")
        );
        let open =
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release Build\n";
        assert_eq!(
            parse_kernel_module_version(open).as_deref(),
            Some("575.57.08")
        );
        assert_eq!(parse_kernel_module_version("nothing"), None);
    }
}
