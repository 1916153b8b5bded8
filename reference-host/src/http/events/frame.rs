//! SSE messages as bytes, written by hand so that every message ready at
//! one wake-up goes out in one body chunk (one socket write) instead of
//! one chunk each.
//!
//! The format is the one axum's `Sse` wrote before: `id: `, `event: `,
//! `data: ` lines, each `name: value\n`, a blank line after the message;
//! a comment is `: text\n\n`.

use std::io::Write;

use serde_json::json;

/// The SSE message type of the last message to a dropped subscriber.
pub const DROPPED: &str = "stream.dropped";

/// The comment an idle stream sends.
pub const HEARTBEAT: &[u8] = b": heartbeat\n\n";

/// Appends one message to `out`. `data` may hold line breaks: each line
/// becomes its own `data:` line, which a client joins back with `\n`.
pub fn message(out: &mut Vec<u8>, id: Option<u64>, kind: &str, data: &str) {
    debug_assert!(!kind.contains(['\r', '\n']), "an SSE type is one line");
    if let Some(id) = id {
        // Writing into a Vec cannot fail.
        let _ = writeln!(out, "id: {id}");
    }
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(kind.as_bytes());
    out.push(b'\n');
    for line in data.split('\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.strip_suffix('\r').unwrap_or(line).as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
}

/// Appends the final message to a subscriber that fell too far behind:
/// it resumes after `last`.
pub fn dropped(out: &mut Vec<u8>, last: u64) {
    let data = json!({
        "reason": "the subscriber fell too far behind",
        "resumeAfter": last.to_string(),
    })
    .to_string();
    message(out, None, DROPPED, &data);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_its_fields_and_a_blank_line() {
        let mut out = Vec::new();
        message(&mut out, Some(7), "goal.evaluated", r#"{"a":1}"#);
        message(&mut out, None, "x", "one\ntwo");
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            "id: 7\nevent: goal.evaluated\ndata: {\"a\":1}\n\nevent: x\ndata: one\ndata: two\n\n"
        );
    }

    #[test]
    fn the_drop_names_the_cursor_to_resume_after() {
        let mut out = Vec::new();
        dropped(&mut out, 42);
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(text.starts_with("event: stream.dropped\ndata: {"), "{text}");
        assert!(text.ends_with("\n\n") && !text.contains("id:"), "{text}");
        let data: serde_json::Value = serde_json::from_str(
            text.lines()
                .nth(1)
                .and_then(|l| l.strip_prefix("data: "))
                .expect("data"),
        )
        .expect("JSON");
        assert_eq!(data["resumeAfter"], "42");
    }
}
