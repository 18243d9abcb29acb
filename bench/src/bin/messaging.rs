//! `messaging`: the end-to-end messaging bench's command line (flags in
//! `bench::messaging::options`); exits non-zero when a check fails.

#![forbid(unsafe_code)]

use clap::Parser;

use bench::messaging::{report, run_all, Options};

#[global_allocator]
static ALLOCATOR: bench::Allocator = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let options = Options::parse();
    let report = run_all(&options)?;
    println!("{}", report::table(&report.results));
    if let Some(path) = &options.json {
        report.write_json(path)?;
        println!("results written to {}", path.display());
    }
    if !report.passed() {
        eprintln!(
            "messaging: a check failed (gap, duplicate, lost message or failed task): see above"
        );
        std::process::exit(1);
    }
    Ok(())
}
