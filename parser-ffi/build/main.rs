//! Build script: finds libpg_query inside the `pg_query` package, generates the
//! Rust definitions of its parse-node structs with bindgen, compiles our C glue
//! against the same headers, and generates the zero-copy view and the
//! C-tree-to-protobuf conversion from libpg_query's own field tables.

mod defs;
mod emit;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The exact pg_query release whose internals (`pg_query_raw_parse`, the
/// `*_defs.c` field tables) we build against; Cargo.toml pins the same.
const PG_QUERY_VERSION: &str = "18.1.0";

type BuildResult<T> = Result<T, Box<dyn std::error::Error>>;

fn main() {
    if let Err(err) = run() {
        eprintln!("parser-ffi build failed: {err}");
        std::process::exit(1);
    }
}

fn run() -> BuildResult<()> {
    println!("cargo:rerun-if-changed=build");
    println!("cargo:rerun-if-changed=src/glue.c");
    println!("cargo:rerun-if-changed=src/glue.h");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let package = pg_query_package()?;
    let lib = package.join("libpg_query");
    let includes = [
        lib.clone(),
        lib.join("src"),
        lib.join("src/include"),
        lib.join("src/postgres/include"),
        lib.join("vendor"),
    ];

    compile_glue(&includes)?;
    let bindings = generate_bindings(&includes, &out_dir)?;

    let tables = defs::Tables::read(&lib.join("src/include"))?;
    let protobuf_rs = std::fs::read_to_string(package.join("src/protobuf.rs"))?;
    let prost = emit::Prost::read(&protobuf_rs);
    let view = emit::view(&tables, &bindings) + &emit::rev_enums(&tables);
    std::fs::write(out_dir.join("view_generated.rs"), view)?;
    std::fs::write(
        out_dir.join("to_c_generated.rs"),
        emit::to_c(&tables, &prost),
    )?;
    std::fs::write(
        out_dir.join("convert_generated.rs"),
        emit::convert(&tables, &prost),
    )?;
    Ok(())
}

/// The `pg_query` package's directory, from `cargo metadata`.
///
/// pg_query has no `links` key, so it exports nothing to dependents' build
/// scripts; Cargo's metadata is the portable way to find its sources.
fn pg_query_package() -> BuildResult<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("Cargo.toml");
    let mut cmd = Command::new(cargo);
    cmd.args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(&manifest);
    if let Ok(target) = std::env::var("TARGET") {
        cmd.args(["--filter-platform", &target]);
    }
    let output = cmd.output()?;
    if !output.status.success() {
        return Err(format!(
            "`cargo metadata` failed, so the pg_query package cannot be found:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let packages = metadata["packages"]
        .as_array()
        .ok_or("`cargo metadata` printed no packages")?;
    for package in packages {
        if package["name"] == "pg_query" && package["version"] == PG_QUERY_VERSION {
            let manifest_path = package["manifest_path"]
                .as_str()
                .ok_or("pg_query has no manifest_path")?;
            let dir = Path::new(manifest_path)
                .parent()
                .ok_or("pg_query's manifest_path has no parent")?;
            if !dir.join("libpg_query/src/pg_query_internal.h").is_file() {
                return Err(format!(
                    "pg_query {PG_QUERY_VERSION} at {} does not ship libpg_query's sources",
                    dir.display()
                )
                .into());
            }
            return Ok(dir.to_path_buf());
        }
    }
    Err(format!("pg_query {PG_QUERY_VERSION} is not in `cargo metadata`'s package list").into())
}

/// Our C glue, compiled with the same headers and flags as pg_query compiles
/// libpg_query (the struct layouts must agree).
fn compile_glue(includes: &[PathBuf]) -> BuildResult<()> {
    let mut build = cc::Build::new();
    build
        .file("src/glue.c")
        .includes(includes)
        .flag_if_supported("-fno-strict-aliasing")
        .flag_if_supported("-fwrapv")
        .warnings(true)
        // Postgres's headers have unused parameters in inline functions.
        .flag_if_supported("-Wno-unused-parameter");
    // pg_query's build script defines this in debug builds; node structs do not
    // change with it, but match it anyway so both compile the same headers.
    if std::env::var("PROFILE").as_deref() == Ok("debug")
        || std::env::var("DEBUG").as_deref() == Ok("1")
    {
        build.define("USE_ASSERT_CHECKING", None);
    }
    build.try_compile("pgshard_glue")?;
    Ok(())
}

fn generate_bindings(includes: &[PathBuf], out_dir: &Path) -> BuildResult<String> {
    let mut builder = bindgen::Builder::default()
        .header("src/glue.h")
        .clang_args(includes.iter().map(|dir| format!("-I{}", dir.display())))
        .default_enum_style(bindgen::EnumVariation::ModuleConsts)
        .derive_default(false)
        .derive_debug(false)
        .layout_tests(true)
        .generate_comments(false)
        // The parse-node vocabulary and the glue's entry points; bindgen pulls in
        // whatever these reference.
        .allowlist_function("pgshard_.*")
        .allowlist_function(
            "pg_query_(fingerprint|normalize|scan_tokens|parse_protobuf|free_fingerprint_result|free_normalize_result|free_scan_tokens_result|free_protobuf_parse_result)",
        )
        .allowlist_var("PG_VERSION_NUM")
        .allowlist_type("NodeTag")
        .allowlist_type("List")
        .allowlist_type("ListCell")
        .allowlist_type("RawStmt")
        .allowlist_type("Integer|Float|Boolean|String|BitString|A_Const")
        .allowlist_file(".*/nodes/(parsenodes|primnodes|pg_list|value|nodes|lockoptions|bitmapset)\\.h")
        .allowlist_file(".*/(glue|pg_query)\\.h");
    if std::env::var("PROFILE").as_deref() == Ok("debug")
        || std::env::var("DEBUG").as_deref() == Ok("1")
    {
        builder = builder.clang_arg("-DUSE_ASSERT_CHECKING");
    }
    let bindings = builder
        .generate()
        .map_err(|err| format!("bindgen over libpg_query's headers failed: {err}"))?;
    let text = bindings.to_string();
    std::fs::write(out_dir.join("bindings.rs"), &text)?;
    Ok(text)
}
