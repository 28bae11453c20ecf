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

#[cfg(test)]
mod tests {
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
