//! `stepgate-synth`: the synthetic-report generator's binary; its command line lives in
//! `stepgate::cli::synth`.

fn main() -> std::process::ExitCode {
    stepgate::cli::synth::main()
}
