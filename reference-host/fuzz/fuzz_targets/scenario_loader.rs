//! The suite's scenario loader on arbitrary files: whatever the bytes, it
//! answers a scenario or a load error, never a panic. The loader reads a
//! path, so each input is written to one file in a temporary folder named
//! like a profile folder.

#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use goalpost_schemas::Schemas;
use libfuzzer_sys::fuzz_target;

struct Place {
    _dir: PathBuf,
    file: PathBuf,
    schemas: Schemas,
}

fn place() -> &'static Place {
    static PLACE: OnceLock<Place> = OnceLock::new();
    PLACE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("goalpost-fuzz-{}", std::process::id()));
        let folder = dir.join("core");
        std::fs::create_dir_all(&folder).expect("a temporary folder");
        Place {
            file: folder.join("fuzzed.json"),
            _dir: dir,
            schemas: Schemas::embedded().expect("the schemas compile"),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let place = place();
    if std::fs::write(&place.file, data).is_err() {
        return;
    }
    let _ = goalpost::run::loader::load_scenario(&place.file, "core", &place.schemas);
});
