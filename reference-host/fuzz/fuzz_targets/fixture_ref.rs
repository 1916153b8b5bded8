//! The ref grammar (`conformance:verifier?…`, `conformance:arm?…`, webhook
//! URLs, verifier names) on arbitrary text: never a panic, and an accepted
//! ref reads back as written and parses again to the same thing.

#![no_main]

use goalpost_host::domain::{ArmRef, VerifierRef};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for fixtures in [true, false] {
        if let Ok(parsed) = VerifierRef::parse(text, fixtures) {
            assert_eq!(parsed.as_str(), text);
            let again = VerifierRef::parse(parsed.as_str(), fixtures).expect("reparses");
            assert_eq!(again.spec(), parsed.spec());
        }
        if let Ok(parsed) = ArmRef::parse(text, fixtures) {
            assert_eq!(parsed.as_str(), text);
            let again = ArmRef::parse(parsed.as_str(), fixtures).expect("reparses");
            assert_eq!(again.spec(), parsed.spec());
            let _ = (parsed.interval_ms(), parsed.heartbeat_ms());
        }
    }
});
