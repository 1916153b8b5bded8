//! `goalpost validate` and `goalpost schemas`: check payloads against the
//! same schemas the suite holds hosts to, so an implementer can test one
//! answer without a whole run.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use goalpost_schemas::{Schemas, NAMES};
use serde_json::Value;

/// Every payload valid.
pub const EXIT_VALID: u8 = 0;
/// At least one payload broke the schema.
pub const EXIT_INVALID: u8 = 1;
/// A file could not be read or is not JSON, or the schema is unknown.
pub const EXIT_UNREADABLE: u8 = 2;

/// The path that means standard input.
pub const STDIN: &str = "-";

/// Validates each file (standard input for `-` or when none is given)
/// against `schema`. Results go to `out` (`FILE: valid`, or `FILE: invalid,
/// N errors` and one `pointer: message` line per error), problems reading
/// to `err`. Returns the exit code.
pub fn validate(
    schemas: &Schemas,
    schema: &str,
    files: &[PathBuf],
    mut stdin: impl Read,
    mut out: impl Write,
    mut err: impl Write,
) -> io::Result<u8> {
    if !NAMES.contains(&schema) {
        writeln!(
            err,
            "goalpost: unknown schema `{schema}`; known schemas: {}",
            NAMES.join(", ")
        )?;
        return Ok(EXIT_UNREADABLE);
    }
    let stdin_only = [PathBuf::from(STDIN)];
    let files = if files.is_empty() {
        &stdin_only[..]
    } else {
        files
    };
    let mut code = EXIT_VALID;
    for path in files {
        let (name, text) = if path == Path::new(STDIN) {
            let mut text = String::new();
            let read = stdin.read_to_string(&mut text).map(|_| text);
            ("(stdin)".to_string(), read)
        } else {
            (path.display().to_string(), std::fs::read_to_string(path))
        };
        let text = match text {
            Ok(text) => text,
            Err(error) => {
                writeln!(err, "{name}: cannot read: {error}")?;
                code = code.max(EXIT_UNREADABLE);
                continue;
            }
        };
        let value: Value = match serde_json::from_str(&text) {
            Ok(value) => value,
            Err(error) => {
                writeln!(err, "{name}: not JSON: {error}")?;
                code = code.max(EXIT_UNREADABLE);
                continue;
            }
        };
        match schemas.validate(schema, &value) {
            Ok(()) => writeln!(out, "{name}: valid")?,
            Err(violations) => {
                let count = violations.len();
                let plural = if count == 1 { "" } else { "s" };
                writeln!(out, "{name}: invalid, {count} error{plural}")?;
                for violation in violations {
                    writeln!(out, "{violation}")?;
                }
                code = code.max(EXIT_INVALID);
            }
        }
    }
    out.flush()?;
    Ok(code)
}

/// One line per schema: its name and title.
pub fn list(mut out: impl Write) -> io::Result<()> {
    let width = NAMES.iter().map(|name| name.len()).max().unwrap_or(0);
    for name in NAMES {
        let title = goalpost_schemas::source(name)
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
            .and_then(|schema| schema["title"].as_str().map(str::to_string))
            .unwrap_or_default();
        writeln!(out, "{name:<width$}  {title}")?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::assert_contains;

    fn run(schema: &str, files: &[PathBuf], stdin: &str) -> (u8, String, String) {
        let schemas = Schemas::embedded().unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = validate(
            &schemas,
            schema,
            files,
            stdin.as_bytes(),
            &mut out,
            &mut err,
        )
        .unwrap();
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    const ERROR: &str = r#"{"error": "not_found", "message": "no such goal"}"#;

    #[test]
    fn a_valid_payload_on_stdin() {
        assert_eq!(
            run("error", &[], ERROR),
            (0, "(stdin): valid\n".into(), String::new())
        );
    }

    #[test]
    fn every_violation_is_a_pointer_and_a_message() {
        let (code, out, _) = run(
            "error",
            &[PathBuf::from("-")],
            r#"{"error": "", "extra": 1}"#,
        );
        assert_eq!(code, 1);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("(stdin): invalid, "), "{out}");
        assert!(lines.len() >= 3, "{out}");
        assert!(lines[1..].iter().all(|l| l.contains(": ")), "{out}");
        assert_contains(&out, "/error: ");
    }

    #[test]
    fn unknown_schemas_and_unreadable_input_are_two() {
        let (code, _, err) = run("nope", &[], ERROR);
        assert_eq!(code, 2);
        assert_contains(&err, "known schemas: attention,");
        let (code, _, err) = run("error", &[], "{");
        assert_eq!(code, 2);
        assert!(err.starts_with("(stdin): not JSON"), "{err}");
        let (code, _, err) = run("error", &[PathBuf::from("/no/such/file.json")], "");
        assert_eq!(code, 2);
        assert_contains(&err, "cannot read");
    }

    #[test]
    fn the_list_names_every_schema_with_its_title() {
        let mut out = Vec::new();
        list(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), NAMES.len());
        assert!(
            text.lines()
                .any(|l| l.starts_with("goal ") && l.ends_with("  Goal")),
            "{text}"
        );
    }
}
