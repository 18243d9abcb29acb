//! `messaging`: the end-to-end messaging bench's command line (flags in
//! `bench::messaging::options`); exits non-zero when a check fails.

#![forbid(unsafe_code)]

use anyhow::Context;
use clap::Parser;

use bench::messaging::{plot, report, run_all, Options};

#[global_allocator]
static ALLOCATOR: bench::Allocator = parser_ffi::Allocator;

fn main() -> anyhow::Result<()> {
    let options = Options::parse();
    if options.print_sharding {
        print!(
            "{}",
            bench::messaging::schema::sharding_toml(&options.dbname)
        );
        return Ok(());
    }
    if let (Some(json), Some(svg)) = (&options.plot_from, &options.svg) {
        let text =
            std::fs::read_to_string(json).with_context(|| format!("read {}", json.display()))?;
        let results = serde_json::from_str(&text).context("parse the results JSON")?;
        write(svg, &plot::svg(&results)?)?;
        println!("chart written to {}", svg.display());
        return Ok(());
    }
    let report = run_all(&options)?;
    println!("{}", report::table(&report.results));
    if let Some(path) = &options.json {
        let text = serde_json::to_string_pretty(&report).context("encode the results")?;
        write(path, &text)?;
        println!("results written to {}", path.display());
    }
    if let Some(path) = &options.svg {
        let results = serde_json::to_value(&report).context("encode the results")?;
        write(path, &plot::svg(&results)?)?;
        println!("chart written to {}", path.display());
    }
    if !report.passed() {
        eprintln!(
            "messaging: a check failed (gap, duplicate, lost message or failed task): see above"
        );
        std::process::exit(1);
    }
    Ok(())
}

/// Write `text` to `path`, creating its directory.
fn write(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("write {}", path.display()))
}
