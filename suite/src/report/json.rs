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
        assert!(value["scenarios"][2].get("quietMs").is_none());
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
