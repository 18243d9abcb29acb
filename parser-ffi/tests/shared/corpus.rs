//! The statement corpus loader, shared by parser-ffi's tests and the router's
//! engine comparison (`#[path]`-included there): `parser-ffi/tests/corpus/*.sql`,
//! entries separated by `----` lines, as (`file#index`, SQL).

/// Every corpus entry, files in name order.
pub fn corpus() -> Vec<(String, String)> {
    // From either crate's manifest dir: both sit beside `parser-ffi/`.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../parser-ffi/tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    let mut entries = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, entry) in text.split("\n----\n").enumerate() {
            let entry = entry.trim_matches('\n');
            if !entry.trim().is_empty() {
                entries.push((format!("{name}#{i}"), entry.to_owned()));
            }
        }
    }
    entries
}
