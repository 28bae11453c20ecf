//! `stepgate-synth`'s command line (the generator's flags, parsed once here into the
//! generator's plain options): writes synthetic nsys exports for tests and benchmarks —
//! engine-step workloads with their expected per-step values, and real fixtures
//! replicated in time.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::{Error, Result};
use crate::source::nsys::{self, LoadOptions};
use crate::synth::workload::{self, LaunchMode};
use crate::synth::{long_names, planted, replicate, steps, Layout};
use clap::{Parser, Subcommand, ValueEnum};

/// Synthetic Nsight Systems SQLite exports (not captures: every file says so in its
/// export metadata where the layout has that table).
#[derive(Debug, Parser)]
#[command(name = "stepgate-synth", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// N decode steps of K kernels each, vLLM `execute_…` ranges, one process per TP rank.
    ///
    /// Example: stepgate-synth workload --steps 10000 --kernels 400 -o decode_4m.sqlite
    Workload {
        #[arg(long, default_value_t = 100)]
        steps: usize,
        #[arg(long, default_value_t = 400)]
        kernels: usize,
        #[arg(long, default_value_t = 1)]
        ranks: u32,
        #[arg(long, value_enum, default_value_t = Mode::Node)]
        mode: Mode,
        #[arg(long, value_enum, default_value_t = LayoutArg::V2026_2)]
        layout: LayoutArg,
        /// Write the expected per-step and per-device values here as JSON.
        #[arg(long)]
        expected: Option<PathBuf>,
        #[arg(short, long)]
        out: PathBuf,
    },
    /// Replicate a real export in time (shifted timestamps, offset correlation ids, same DDL).
    ///
    /// Example: stepgate-synth replicate tests/fixtures/nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite --kernels 1000000 -o bench_1m.sqlite
    Replicate {
        fixture: PathBuf,
        /// Number of copies (the original counts as one).
        #[arg(long, conflicts_with = "kernels")]
        copies: Option<u64>,
        /// Make enough copies to reach at least this many kernel rows.
        #[arg(long)]
        kernels: Option<u64>,
        #[arg(short, long)]
        out: PathBuf,
    },
    /// One engine-step scenario per step-marker form (vLLM python stack or annotations,
    /// SGLang, TensorRT-LLM, PyTorch ProfilerStep, emit_nvtx, none), as a Kineto trace or an
    /// nsys export, with the steps it must yield.
    ///
    /// Example: stepgate-synth steps --scenario vllm-v1-python --format kineto -o vllm_tp4 --truth truth.json
    Steps {
        /// Scenario name; `--list` prints them with the formats each has.
        #[arg(long, required_unless_present = "list")]
        scenario: Option<String>,
        #[arg(long, value_enum, default_value_t = FormatArg::Kineto)]
        format: FormatArg,
        /// Write the expected steps (per series: count, kind, found_by, GPU window, busy,
        /// tail) here as JSON.
        #[arg(long)]
        truth: Option<PathBuf>,
        /// Print every scenario and its formats, then exit.
        #[arg(long)]
        list: bool,
        /// Output file (a directory for multi-rank Kineto scenarios, one file per rank).
        #[arg(short, long, required_unless_present = "list")]
        out: Option<PathBuf>,
    },
    /// Decode (and prefill) steps of a dense, MoE or MLA model whose kernel durations follow
    /// its bytes, with one cause planted (slow-attention-small-batch, gemms-at-roof, tp4,
    /// prefill-among-decodes, batch-in-grid, straggling-all-reduce, split-k-gemms,
    /// moe-slow-experts, moe-at-roof, mla-decode).
    ///
    /// Example: stepgate-synth planted --cause tp4 -o tp4.sqlite
    Planted {
        #[arg(long)]
        cause: String,
        /// Steps per rank (prefill-among-decodes always writes 12).
        #[arg(long, default_value_t = 12)]
        steps: usize,
        #[arg(short, long)]
        out: PathBuf,
    },
    /// A small capture with two kernel names of BYTES bytes each (equal but for their
    /// last bytes), to measure what huge names cost.
    ///
    /// Example: stepgate-synth long-names --bytes 20000000 --format nsys -o long.sqlite
    LongNames {
        #[arg(long, default_value_t = 20_000_000)]
        bytes: usize,
        #[arg(long, value_enum, default_value_t = FormatArg::Nsys)]
        format: FormatArg,
        #[arg(short, long)]
        out: PathBuf,
    },
    /// An AMD rocpd database (rocprofv3, schema 3, rocprofiler-sdk's DDL): one GPU per
    /// process, a ROCTx range per decode step around its HIP launches.
    ///
    /// Example: stepgate-synth rocpd --processes 2 --steps 50 -o decode.db
    Rocpd {
        #[arg(long, default_value_t = 1)]
        processes: usize,
        #[arg(long, default_value_t = 20)]
        steps: usize,
        #[arg(long, default_value_t = 8)]
        kernels: usize,
        #[arg(short, long)]
        out: PathBuf,
    },
    /// Time the nsys loader on a file (rows read and seconds; for benchmarks).
    ///
    /// Example: stepgate-synth time-load bench_1m.sqlite --ops-only
    TimeLoad {
        file: PathBuf,
        /// Read GPU ops only (what `analyze` reads).
        #[arg(long)]
        ops_only: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Mode {
    /// Node-mode CUDA graphs: kernels share the cudaGraphLaunch correlation id.
    Node,
    /// Graph-mode tracing: one opaque GRAPH_TRACE interval per replay.
    Graph,
    /// One cudaLaunchKernel per kernel.
    Eager,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FormatArg {
    /// PyTorch-profiler Chrome trace (.json, or gzip when the name ends in .gz).
    Kineto,
    /// Nsight Systems SQLite export (2026.2 layout).
    Nsys,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LayoutArg {
    #[value(name = "2026.2")]
    V2026_2,
    #[value(name = "2022.2")]
    V2022_2,
    #[value(name = "2022.1")]
    V2022_1,
    #[value(name = "2020.5")]
    V2020_5,
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Workload {
            steps,
            kernels,
            ranks,
            mode,
            layout,
            expected,
            out,
        } => {
            let layout = match layout {
                LayoutArg::V2026_2 => Layout::Nsys2026_2,
                LayoutArg::V2022_2 => Layout::Nsys2022_2,
                LayoutArg::V2022_1 => Layout::Nsys2022_1,
                LayoutArg::V2020_5 => Layout::Nsys2020_5,
            };
            let mut scn = workload::decode_benchmark(layout, ranks, steps, kernels);
            let m = match mode {
                Mode::Node => LaunchMode::GraphNode,
                Mode::Graph => LaunchMode::GraphOpaque,
                Mode::Eager => LaunchMode::Eager,
            };
            for s in &mut scn.steps {
                s.mode = m;
            }
            let exp = workload::build(&scn, &out)?;
            if let Some(p) = expected {
                let json = serde_json::to_string_pretty(&exp)
                    .map_err(|e| Error::input(format!("expected values: {e}")))?;
                std::fs::write(&p, json)?;
            }
            let k: u64 = exp.devices.iter().map(|d| d.kernels).sum();
            eprintln!(
                "wrote {} ({} steps x {} ranks, {k} kernel rows)",
                out.display(),
                steps,
                ranks
            );
        }
        Command::Replicate {
            fixture,
            copies,
            kernels,
            out,
        } => {
            let copies = match (copies, kernels) {
                (Some(c), _) => c,
                (None, Some(k)) => replicate::copies_for_kernels(&fixture, k)?,
                (None, None) => return Err(Error::input("give --copies N or --kernels N")),
            };
            let r = replicate::replicate(&fixture, copies, &out)?;
            let rows: Vec<String> = r.rows.iter().map(|(t, n)| format!("{t}={n}")).collect();
            eprintln!(
                "wrote {} ({} copies, period {} ns): {}",
                out.display(),
                r.copies,
                r.period_ns,
                rows.join(" ")
            );
        }
        Command::Steps {
            scenario,
            format,
            truth,
            list,
            out,
        } => {
            if list {
                for s in steps::Scenario::ALL {
                    let f: Vec<&str> = s.formats().iter().map(|f| f.as_str()).collect();
                    println!("{:<24} {}", s.name(), f.join(", "));
                }
                return Ok(());
            }
            let (Some(scenario), Some(out)) = (scenario, out) else {
                return Err(Error::input("give --scenario NAME and -o PATH (or --list)"));
            };
            let scn = steps::Scenario::from_name(&scenario)?;
            let format = match format {
                FormatArg::Kineto => crate::wire::synth::Format::Kineto,
                FormatArg::Nsys => crate::wire::synth::Format::Nsys,
            };
            let t = steps::build(scn, format, &out)?;
            if let Some(p) = truth {
                let json = serde_json::to_string_pretty(&t)
                    .map_err(|e| Error::input(format!("truth: {e}")))?;
                std::fs::write(&p, json)?;
            }
            let n: usize = t.series.iter().map(|s| s.steps.len()).sum();
            eprintln!(
                "wrote {} ({} {}, {} series, {n} steps, found by {})",
                out.display(),
                t.scenario,
                format.as_str(),
                t.series.len(),
                t.found_by
            );
        }
        Command::Planted { cause, steps, out } => {
            let Some((_, c)) = planted::CAUSES.iter().find(|(n, _)| *n == cause) else {
                let names: Vec<&str> = planted::CAUSES.iter().map(|(n, _)| *n).collect();
                return Err(Error::input(format!(
                    "unknown cause `{cause}`; use one of {}",
                    names.join(", ")
                )));
            };
            let exp = workload::build(&planted::scenario(*c, steps), &out)?;
            eprintln!(
                "wrote {} ({cause}: {} steps x {} ranks)",
                out.display(),
                exp.steps.len() / exp.devices.len().max(1),
                exp.devices.len()
            );
        }
        Command::LongNames { bytes, format, out } => {
            let format = match format {
                FormatArg::Kineto => long_names::Format::Kineto,
                FormatArg::Nsys => long_names::Format::Nsys,
            };
            long_names::write(&out, format, bytes)?;
            eprintln!("wrote {} (two names of {bytes} bytes)", out.display());
        }
        Command::Rocpd {
            processes,
            steps,
            kernels,
            out,
        } => {
            let spec = crate::synth::rocpd::Spec {
                processes,
                steps,
                kernels_per_step: kernels,
                ..Default::default()
            };
            if out.exists() {
                return Err(Error::usage(format!(
                    "{} exists; give a new path",
                    out.display()
                )));
            }
            let truth = crate::synth::rocpd::write(&out, &spec)
                .map_err(|e| Error::output(&out, std::io::Error::other(e.to_string())))?;
            eprintln!(
                "wrote {}: {} dispatches, {} copies; busy per GPU (ns, the generator's union): {:?}",
                out.display(),
                truth.dispatches,
                truth.copies,
                truth.busy_ns
            );
        }
        Command::TimeLoad { file, ops_only } => {
            let opts = if ops_only {
                LoadOptions::ops_only()
            } else {
                LoadOptions::all()
            };
            let t0 = std::time::Instant::now();
            let t = nsys::load_with(&file, &opts)?;
            println!(
                "ops={} calls={} ranges={} strings={} seconds={:.3} (measured)",
                t.ops.height(),
                t.calls.height(),
                t.ranges.height(),
                t.strings.len(),
                t0.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}

/// The generator binary's `main`.
pub fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stepgate-synth: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
