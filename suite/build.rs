//! Embeds the profile (scenarios/**, requirements.json, PROFILE.md) into the
//! binary, so an installed or copied `goalpost` runs without the source tree.
//! The list of files is generated because `include_str!` takes one literal
//! path per file and the scenario set changes often.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.join("..");
    let scenarios = root.join("scenarios");
    let profile = root.join("PROFILE.md");
    // A directory: cargo rescans it, so added or removed scenarios rebuild.
    println!("cargo:rerun-if-changed={}", scenarios.display());
    println!("cargo:rerun-if-changed={}", profile.display());
    let mut files = Vec::new();
    collect(&scenarios, &scenarios, &mut files);
    files.sort();
    let mut code = String::from("/// `(path under scenarios/, text)` of every embedded file, sorted.\npub const FILES: &[(&str, &str)] = &[\n");
    for (relative, absolute) in &files {
        writeln!(code, "    ({relative:?}, include_str!({absolute:?})),").expect("string");
    }
    code.push_str("];\n");
    writeln!(
        code,
        "/// PROFILE.md, the normative profile the scenarios prove.\npub const PROFILE: &str = include_str!({:?});",
        profile.canonicalize().expect("PROFILE.md beside scenarios/").display().to_string()
    )
    .expect("string");
    println!(
        "cargo:rustc-env=GOALPOST_PROFILE_VERSION={}",
        profile_version(&scenarios.join("requirements.json"))
    );
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out.join("embedded_profile.rs"), code).expect("write embedded_profile.rs");
}

fn collect(base: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect(base, &path, files);
        } else if path.extension().is_some_and(|ext| ext == "json") {
            let relative = path.strip_prefix(base).expect("under base");
            let relative = relative
                .components()
                .map(|part| part.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let absolute = path.canonicalize().expect("canonical path");
            files.push((relative, absolute.display().to_string()));
        }
    }
}

/// `profileVersion` of requirements.json, for `goalpost --version`. A plain
/// scan: the registry schema makes it a top-level string, and a build script
/// is no place for a JSON dependency.
fn profile_version(registry: &Path) -> String {
    let text = std::fs::read_to_string(registry)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", registry.display()));
    text.split_once("\"profileVersion\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .and_then(|(_, rest)| rest.split_once('"'))
        .map_or_else(
            || "unversioned".to_string(),
            |(version, _)| version.to_string(),
        )
}
