//! `report.json`: the report as JSON, valid against the `report` schema.

use std::io;

use super::RunReport;

pub fn write(report: &RunReport, mut out: impl io::Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut out, report)?;
    out.write_all(b"\n")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample;
    use goalpost_schemas::Schemas;
    use serde_json::Value;

    fn written() -> Value {
        let mut out = Vec::new();
        write(&sample::report(), &mut out).unwrap();
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn the_report_is_valid_against_the_report_schema() {
        let schemas = Schemas::embedded().unwrap();
        let value = written();
        if let Err(violations) = schemas.validate("report", &value) {
            panic!("report.json violates its schema: {violations:?}\n{value:#}");
        }
    }

    #[test]
    fn the_report_has_the_documented_shape() {
        let value = written();
        assert_eq!(value["suite"]["name"], "goalpost");
        assert_eq!(value["host"]["discoverySha256"], "ab".repeat(32));
        assert_eq!(value["host"]["bundled"], true);
        assert_eq!(value["profiles"]["core"]["fail"], 1);
        assert_eq!(value["profiles"]["core"]["certified"], false);
        assert!(value["profiles"]["core"].get("selected").is_none());
        assert_eq!(value["requirements"][3]["reason"], "seam-absent");
        assert_eq!(value["requirements"][0]["reason"], Value::Null);
        assert_eq!(value["scenarios"][2]["durationMs"], 12);
        // The branch the host's answer did not take, and why; absent where
        // every step ran.
        assert_eq!(
            value["scenarios"][2]["notTaken"],
            serde_json::json!([{"step": 3, "name": "refused: the goal is as it was",
                "whenStep": "PATCH the objective", "answered": 200}])
        );
        assert!(value["scenarios"][1].get("notTaken").is_none());
        assert!(value["scenarios"][2].get("quietMs").is_none());
    }

    #[test]
    fn the_report_carries_levels_sections_the_profile_version_and_a_legend() {
        let value = written();
        assert_eq!(value["profileVersion"], "1.0");
        assert_eq!(value["profiles"]["core"]["advisory"], 1);
        assert_eq!(value["profiles"]["core"]["notReached"], 1);
        let advisory = &value["requirements"][4];
        assert_eq!(advisory["disposition"], "advisory");
        assert_eq!(advisory["level"], "SHOULD");
        assert_eq!(advisory["section"], "PROFILE.md#core.create.location");
        assert_eq!(
            advisory["failedCheck"],
            serde_json::json!({"scenario": "core::create", "step": 1, "name": "create", "at": "/steps/0/expect/status"})
        );
        assert_eq!(value["requirements"][5]["disposition"], "not-reached");
        assert!(value["requirements"][5].get("failedCheck").is_none());
        assert_eq!(
            value["legend"]["seam-absent"]["section"],
            "PROFILE.md#skip-seam-absent"
        );
        assert_eq!(value["legend"].as_object().map(|l| l.len()), Some(2));
        let na = &value["requirements"][6];
        assert_eq!(na["disposition"], "not-applicable");
        assert_eq!(na["reason"], "mode:heartbeat");
        assert_eq!(
            value["legend"]["mode:heartbeat"]["section"],
            "PROFILE.md#not-applicable-mode"
        );
        let behavior = &value["profiles"]["behavior"];
        assert_eq!(behavior["status"], "not-certified");
        assert_eq!(behavior["notApplicable"], 1);
        assert_eq!(
            behavior["scope"],
            serde_json::json!({"judge": "verifier", "modes": ["manual", "schedule"],
                               "offered": [], "notOffered": ["mode:heartbeat"]})
        );
        assert_eq!(value["profiles"]["strict"]["status"], "opted-out");
        // Unversioned: the field is left out, not made up.
        let mut report = sample::report();
        report.profile_version = None;
        let mut out = Vec::new();
        write(&report, &mut out).unwrap();
        let value: Value = serde_json::from_slice(&out).unwrap();
        assert!(value.get("profileVersion").is_none());
        assert!(Schemas::embedded()
            .unwrap()
            .validate("report", &value)
            .is_ok());
    }

    #[test]
    fn the_schema_holds_the_level_rules() {
        let schemas = Schemas::embedded().unwrap();
        type Break = fn(&mut Value);
        let broken: [(&str, Break); 5] = [
            ("a SHOULD requirement never fails", |value| {
                value["requirements"][4]["disposition"] = Value::from("fail")
            }),
            ("a MUST requirement is never an advisory", |value| {
                value["requirements"][0]["disposition"] = Value::from("advisory")
            }),
            ("a certified profile has no failure", |value| {
                value["profiles"]["core"]["certified"] = Value::from(true)
            }),
            ("a skip reason nobody defined", |value| {
                value["requirements"][3]["reason"] = Value::from("because")
            }),
            ("a section that is not PROFILE.md's", |value| {
                value["requirements"][0]["section"] = Value::from("SPEC.md#core.create.ok")
            }),
        ];
        for (rule, break_it) in broken {
            let mut value = written();
            break_it(&mut value);
            assert!(schemas.validate("report", &value).is_err(), "{rule}");
        }
    }

    #[test]
    fn a_broken_report_is_rejected_by_the_schema() {
        // Proves the validity test above can fail.
        let schemas = Schemas::embedded().unwrap();
        let mut value = written();
        value["profiles"]["core"]["certified"] = Value::from("yes");
        assert!(schemas.validate("report", &value).is_err());
    }
}
