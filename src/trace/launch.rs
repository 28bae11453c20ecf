//! Which host API calls launch GPU work, shared by every source.

/// Launch-call classification shared by every source: kernel and graph launches count,
/// copies and syncs do not (the CUDA runtime and driver launch entry points, and the hip
/// twins Kineto traces on ROCm carry).
pub fn is_launch_call(name: &str) -> bool {
    // Runtime names carry a version suffix (`cudaLaunchKernel_v7000`,
    // `cudaLaunchKernelExC_v11060`, `cudaGraphLaunch_v10000`): prefixes cover them and
    // every Ex/C variant; driver and HIP names are exact.
    name.starts_with("cudaLaunchKernel")
        || name.starts_with("cudaLaunchCooperativeKernel")
        || name.starts_with("cudaGraphLaunch")
        || matches!(
            name,
            "cuLaunchKernel"
                | "cuLaunchKernelEx"
                | "cuLaunchCooperativeKernel"
                | "cuLaunchCooperativeKernelMultiDevice"
                | "cuGraphLaunch"
                | "hipLaunchKernel"
                | "hipExtLaunchKernel"
                | "hipModuleLaunchKernel"
                | "hipExtModuleLaunchKernel"
                | "hipLaunchCooperativeKernel"
                | "hipGraphLaunch"
        )
}

/// Whether a launch call is a CUDA/HIP graph launch.
pub fn is_graph_launch_call(name: &str) -> bool {
    name.starts_with("cudaGraphLaunch") || name == "cuGraphLaunch" || name == "hipGraphLaunch"
}

/// A runtime API name without its ABI version suffix, for sentences a user reads
/// (`cudaStreamSynchronize_v3020` → `cudaStreamSynchronize`): the suffix is the entry
/// point's version, not part of the call a user searches their code for. The report keeps
/// the full name.
pub fn display_call_name(name: &str) -> &str {
    match name.rsplit_once("_v") {
        Some((base, ver))
            if !base.is_empty() && !ver.is_empty() && ver.bytes().all(|b| b.is_ascii_digit()) =>
        {
            base
        }
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn display_name_drops_only_a_numeric_version_suffix() {
        assert_eq!(
            display_call_name("cudaStreamSynchronize_v3020"),
            "cudaStreamSynchronize"
        );
        assert_eq!(
            display_call_name("cudaLaunchKernelExC_v11060"),
            "cudaLaunchKernelExC"
        );
        assert_eq!(
            display_call_name("cuStreamSynchronize"),
            "cuStreamSynchronize"
        );
        assert_eq!(display_call_name("hipMemcpy_vx"), "hipMemcpy_vx");
        assert_eq!(display_call_name("_v100"), "_v100");
        assert_eq!(display_call_name("foo_v"), "foo_v");
    }

    use super::*;

    #[test]
    fn launch_names_with_version_suffix() {
        assert!(is_launch_call("cudaLaunchKernel_v7000"));
        assert!(is_launch_call("cudaLaunchKernelExC_v11060"));
        assert!(is_launch_call("cuLaunchKernelEx"));
        assert!(is_launch_call("cudaGraphLaunch_v10000"));
        assert!(is_launch_call("hipExtModuleLaunchKernel"));
        assert!(!is_launch_call("cudaMemcpyAsync_v3020"));
        assert!(!is_launch_call("cudaStreamSynchronize_v3020"));
        assert!(!is_launch_call("cudaEventRecord_v3020"));
        assert!(!is_launch_call("cudaLaunchHostFunc_v10000"));
        assert!(is_launch_call("cudaLaunchCooperativeKernel_v9000"));
        assert!(is_launch_call("hipGraphLaunch"));
    }
}
