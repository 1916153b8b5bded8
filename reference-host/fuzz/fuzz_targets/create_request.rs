//! A create body from raw bytes, as the host reads it: the strict JSON
//! reader, then the create parser (fixtures on and off). Never a panic; an
//! accepted body becomes a goal whose wire JSON is a valid `goal`.

#![no_main]

use std::sync::OnceLock;

use goalpost_host::domain::request::parse_body;
use goalpost_host::domain::{parse_create, parse_patch, wire, GoalId, RequestContext, Tenant, Timestamp};
use goalpost_schemas::Schemas;
use libfuzzer_sys::fuzz_target;

fn schemas() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| Schemas::embedded().expect("the schemas compile"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(body) = parse_body(data) else {
        return;
    };
    for fixtures_enabled in [true, false] {
        let context = RequestContext::new(fixtures_enabled);
        let _ = parse_patch(&body, context);
        let Ok(new) = parse_create(&body, context) else {
            continue;
        };
        let (Some(tenant), Some(now)) = (Tenant::parse("tenant-fuzz"), Timestamp::from_unix_ms(0))
        else {
            return;
        };
        let goal = new.into_goal(GoalId::generate(), tenant, now);
        let json = wire::goal(&goal);
        if let Err(violations) = schemas().validate("goal", &json) {
            panic!("an accepted create made an invalid goal {json}: {violations:?}");
        }
    }
});
