use super::*;

#[test]
fn the_registry_and_the_profile_are_embedded() {
    assert!(file("requirements.json").is_some());
    assert!(FILES.iter().any(|(path, _)| path.starts_with("core/")));
    assert!(PROFILE.contains("skip-seam-absent"));
}
