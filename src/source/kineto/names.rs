//! Short kernel names for `ops.short_id`: Kineto writes only the full demangled signature,
//! so the base name is cut out of it the way nsys's `shortName` ("Base kernel function
//! name", docs/nsys-format.md) reads: no return type, namespaces, template arguments or
//! parameters. Used for kernels only; memcpy/memset keep their full name. Mangled (`_ZN5aiter…`) and plain names are kept whole, as nsys keeps them.

/// `void at::native::(anonymous namespace)::foo<int, 4>(float*)` → `foo`.
pub fn short_name(full: &str) -> &str {
    // Cut at the first `<` or `(` that is not part of "(anonymous namespace)".
    let bytes = full.as_bytes();
    let mut cut = full.len();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'(' if full[i..].starts_with("(anonymous namespace)") => {
                i += "(anonymous namespace)".len();
                continue;
            }
            b'<' | b'(' => {
                cut = i;
                break;
            }
            _ => {}
        }
        i += 1;
    }
    let head = full[..cut].trim_end();
    // Drop the qualification (`ns::`) and the return type (`void `).
    let after_ns = head.rfind("::").map_or(head, |p| &head[p + 2..]);
    let base = after_ns.rsplit(' ').next().unwrap_or(after_ns);
    if base.is_empty() {
        full
    } else {
        base
    }
}

#[cfg(test)]
mod tests {
    use super::short_name;

    #[test]
    fn base_names_as_nsys_writes_them() {
        // Expected values are the shortName column of the converted nsys fixture.
        assert_eq!(
            short_name("void (anonymous namespace)::store_kvcache<2048l, 4, false, long>((anonymous namespace)::StoreKVCacheParams)"),
            "store_kvcache"
        );
        assert_eq!(
            short_name("void at::native::elementwise_kernel_manual_unroll<128, 4, at::native::gpu_kernel_impl<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#1}> >(int, float)"),
            "elementwise_kernel_manual_unroll"
        );
        assert_eq!(
            short_name("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2> >(int)"),
            "multi_tensor_apply_kernel"
        );
        assert_eq!(
            short_name("create_flashinfer_kv_indices_triton"),
            "create_flashinfer_kv_indices_triton"
        );
        assert_eq!(
            short_name("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bEEvPT0_"),
            "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bEEvPT0_"
        );
        assert_eq!(
            short_name("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "ncclDevKernel_AllGather_RING_LL"
        );
    }
}
