//! The profile this binary certifies, embedded at build time (see
//! `suite/build.rs`): every file under `scenarios/` and PROFILE.md. A run,
//! `explain` and `list` use it when no `--scenarios` is given and no
//! `scenarios/` folder is found above the current directory, so a copied or
//! installed binary needs nothing beside it.

include!(concat!(env!("OUT_DIR"), "/embedded_profile.rs"));

/// How embedded files are named in messages and reports: as they are in the
/// source tree.
pub const ROOT: &str = "scenarios";

/// The embedded text of `scenarios/<relative>`.
pub fn file(relative: &str) -> Option<&'static str> {
    FILES
        .iter()
        .find(|(path, _)| *path == relative)
        .map(|(_, text)| *text)
}

#[cfg(test)]
mod tests;
