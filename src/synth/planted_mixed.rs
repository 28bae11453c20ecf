//! A mixed step as vLLM's chunked prefill runs one on an H100 with no step marker: a
//! prefill chunk and decodes in one forward, its KV-cache writes' grid counting every new
//! token, and paged attention's grid `(heads, sequences, partitions)` beside the prefill's
//! FlashAttention counting the sequences; the steps after it decodes of one request.
//! Written through [`super::workload`], kernels and durations from [`super::planted`].

use super::planted::{self, Dense, Speeds, ATTENTION, PAGED_V2};
use super::workload::{KernelSpec, Scenario};
use super::Layout;

/// Tokens the mixed step 0 writes.
pub const MIXED_TOKENS: u64 = 1049;

/// Sequences in it (one prefill chunk beside one decode: the only split of 2).
pub const MIXED_SEQUENCES: u64 = 2;

/// `steps` steps: step 0 mixed, the others decodes of one request at `context`.
pub fn scenario(steps: usize, context: u64) -> Scenario {
    let d = Dense::LLAMA_3_8B;
    let s = Speeds::default();
    let kernels = |i: usize| {
        if i > 0 {
            let ks = planted::step_kernels(&d, 1, 1, 1, context, &s);
            return planted::paged_v2(ks, &d, 1, 1, context, 2_000);
        }
        let ks = planted::step_kernels(&d, 1, 1, MIXED_TOKENS, MIXED_TOKENS, &s);
        let parts = context.div_ceil(512) as u32;
        ks.into_iter()
            .flat_map(|k| {
                let paged = (k.name == ATTENTION).then(|| {
                    KernelSpec::new(PAGED_V2, 5_000).with_grid([
                        d.heads as u32,
                        MIXED_SEQUENCES as u32,
                        parts,
                    ])
                });
                std::iter::once(k).chain(paged)
            })
            .collect()
    };
    Scenario::new(
        Layout::Nsys2026_2,
        1,
        planted::unmarked((0..steps).map(kernels).collect()),
    )
}
