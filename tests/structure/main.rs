//! The shape of the source tree, checked from its files (docs/design.md §1.1):
//!
//! - no import cycle between the modules of a crate (the core, the server, its load generator,
//!   the wasm bindings); `cycles.rs` says what counts as one. A failure names each cycle and
//!   the line that makes each of its steps.
//! - no source file over 900 lines (Rust, JavaScript, TypeScript, shell; generated output and
//!   lock files are not sources).

mod cycles;
mod scan;

use scan::Crate;
use std::fs;
use std::path::{Path, PathBuf};

/// Longest source file, in lines.
const MAX_LINES: usize = 900;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The crates of the workspace, by their root files.
fn crates() -> Vec<Crate> {
    let r = root();
    [
        ("ibexdb", "src/lib.rs"),
        ("ibexdb-server", "server/src/main.rs"),
        ("ibexdb-load", "server/src/load/main.rs"),
        ("ibexdb-wasm", "bindings/wasm/src/lib.rs"),
    ]
    .iter()
    .map(|(name, file)| Crate::read(name, &r, Path::new(file)))
    .collect()
}

#[test]
fn no_import_cycles() {
    let found: Vec<String> = crates().iter().flat_map(cycles::cycles).collect();
    assert!(
        found.is_empty(),
        "{} import cycle(s):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_graph_is_read() {
    // Guards the check itself: a scanner that found no modules or edges would find no cycles.
    for k in crates() {
        let edges = cycles::edges(&k);
        assert!(
            k.modules.len() >= 4,
            "{}: {} modules",
            k.name,
            k.modules.len()
        );
        assert!(!edges.is_empty(), "{}: no edges", k.name);
    }
    let core = &crates()[0];
    let has = |from: &str, to: &str| {
        cycles::edges(core)
            .iter()
            .any(|e| cycles::name(&e.from) == from && cycles::name(&e.to) == to)
    };
    // `use super::...`, `use crate::...{...}` and an inline `crate::` path, each seen.
    assert!(has("sync::hub", "sync::wire"), "sync::hub → sync::wire");
    assert!(has("repo", "store::log"), "repo → store::log");
    assert!(has("sync::client", "error"), "sync::client → error");
}

#[test]
fn a_cycle_is_found_and_named() {
    let dir = std::env::temp_dir().join(format!("ibexdb-structure-{}", std::process::id()));
    let write = |p: &str, s: &str| {
        let f = dir.join(p);
        fs::create_dir_all(f.parent().unwrap()).unwrap();
        fs::write(f, s).unwrap();
    };
    write("lib.rs", "mod a;\nmod b;\nmod c;\n");
    write("a/mod.rs", "mod inner;\npub use inner::A;\n");
    write(
        "a/inner.rs",
        "// crate::c::C in a comment\npub struct A(crate::b::B);\n",
    );
    write(
        "b.rs",
        "pub struct B;\nfn f() -> &'static str { \"crate::a::A\" }\n",
    );
    write("c.rs", "use crate::{a::A, b::B};\n");
    let k = Crate::read("t", &dir, Path::new("lib.rs"));
    assert!(cycles::cycles(&k).is_empty(), "{:?}", cycles::cycles(&k));
    // b names A through a's re-export: a cycle between the folder a and the file b.
    write("b.rs", "pub struct B;\nfn f(_: super::a::A) {}\n");
    let k = Crate::read("t", &dir, Path::new("lib.rs"));
    let found = cycles::cycles(&k);
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("t: {a, b} (siblings under `crate`)"),
        "{}",
        found[0]
    );
    assert!(found[0].contains("a → b"), "{}", found[0]);
    assert!(found[0].contains(": a::inner names b"), "{}", found[0]);
    assert!(found[0].contains("b → a"), "{}", found[0]);
}

/// Folders with sources, and the folders below them that hold none (generated or installed).
const SOURCE_DIRS: &[&str] = &[
    "src", "server", "bindings", "www", "scripts", "tests", "benches", "examples",
];
const SKIP: &[&str] = &["node_modules", "target", "pkg", "dist", "test-results"];
const EXTENSIONS: &[&str] = &["rs", "js", "mjs", "cjs", "ts", "sh"];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if p.is_dir() {
            if !name.starts_with('.') && !SKIP.contains(&name.as_str()) {
                sources(&p, out);
            }
        } else if p
            .extension()
            .is_some_and(|x| EXTENSIONS.contains(&x.to_string_lossy().as_ref()))
        {
            out.push(p);
        }
    }
}

#[test]
fn no_file_over_900_lines() {
    let mut files = Vec::new();
    for d in SOURCE_DIRS {
        sources(&root().join(d), &mut files);
    }
    assert!(files.len() > 100, "only {} source files found", files.len());
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = fs::read_to_string(f).ok()?.lines().count();
            let rel = f.strip_prefix(root()).unwrap_or(f).display().to_string();
            (n > MAX_LINES).then(|| format!("{rel} ({n} lines)"))
        })
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}
