//! Reading a `report.json` back into the report model, for `diff` and
//! `matrix`. Fields a report leaves out (an older or newer suite) read as
//! their defaults; what only the HTML carries (titles, exchanges kept in
//! memory) is not in the file and stays empty.

use std::path::Path;

use super::RunReport;

/// Why a report could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a goalpost report.json: {message}", path.display())]
    NotReport {
        path: std::path::PathBuf,
        message: String,
    },
}

impl RunReport {
    pub fn read(path: &Path) -> Result<RunReport, ReadError> {
        let text = std::fs::read_to_string(path).map_err(|source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let report: RunReport =
            serde_json::from_str(&text).map_err(|error| ReadError::NotReport {
                path: path.to_path_buf(),
                message: error.to_string(),
            })?;
        if report.suite.name != super::SUITE_NAME {
            return Err(ReadError::NotReport {
                path: path.to_path_buf(),
                message: format!("suite.name is `{}`", report.suite.name),
            });
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_report_reads_back() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/reference-host/report.json");
        let report = RunReport::read(&path).expect("the published report");
        assert!(report.profiles["core"].certified);
        assert!(report.requirements.iter().any(|requirement| requirement.id
            == "core.create.bounds-required"
            && requirement.disposition == crate::run::outcome::DispositionKind::Pass));
    }

    #[test]
    fn a_written_report_reads_back_the_same() {
        let mut report = RunReport::default();
        report.suite.name = crate::report::SUITE_NAME.to_string();
        report.profile_version = Some("1.0".to_string());
        report.requirements.push(crate::report::RequirementReport {
            id: "core.a".to_string(),
            disposition: crate::run::outcome::DispositionKind::Fail,
            message: Some("why".to_string()),
            ..Default::default()
        });
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("report.json");
        std::fs::write(&path, serde_json::to_string(&report).expect("JSON")).expect("write");
        assert_eq!(RunReport::read(&path).expect("reads"), report);
    }

    #[test]
    fn something_else_is_not_a_report() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("x.json");
        std::fs::write(&path, r#"{"suite": {"name": "other", "version": "1"}}"#).expect("write");
        assert!(RunReport::read(&path).is_err());
        std::fs::write(&path, "[]").expect("write");
        assert!(RunReport::read(&path).is_err());
    }
}
