//! What the unit tests share.

/// Asserts that `text` contains `wanted`, and shows the whole text when it
/// does not: a writer's output is only readable in full.
#[track_caller]
pub fn assert_contains(text: &str, wanted: &str) {
    assert!(text.contains(wanted), "{wanted:?} is not in:\n{text}");
}
