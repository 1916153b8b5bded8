//! Human output: a goal as aligned lines, a goal list as a table, one line
//! per event. Everything a host sent goes through `printable`.

use serde_json::Value;

use super::http::printable;

const OBJECTIVE_COLUMN: usize = 40;

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn shown(value: &Value, pointer: &str) -> String {
    match value.pointer(pointer) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => printable(text),
        Some(other) => printable(&other.to_string()),
    }
}

fn truncated(text: &str, limit: usize) -> String {
    let text = printable(text);
    if text.chars().count() <= limit {
        return text;
    }
    let mut out: String = text.chars().take(limit.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `2/5` when an iteration bound is declared, else `2`.
fn iterations(goal: &Value) -> String {
    let done = shown(goal, "/progress/iterations");
    match goal.pointer("/bounds/maxLoopIterations") {
        Some(max) if !max.is_null() => format!("{done}/{}", printable(&max.to_string())),
        _ => done,
    }
}

fn with_ref(kind: &str, reference: &str) -> String {
    if reference.is_empty() {
        kind.to_string()
    } else {
        format!("{kind} ({reference})")
    }
}

/// A goal as `key: value` lines; `attention` when the caller fetched it.
pub fn goal(goal: &Value, attention: Option<&str>) -> String {
    let bounds = goal
        .get("bounds")
        .and_then(Value::as_object)
        .map(|bounds| {
            bounds
                .iter()
                .map(|(key, value)| printable(&format!("{key}={value}")))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .filter(|joined| !joined.is_empty())
        .unwrap_or_else(|| "(none)".into());
    let verdict = match goal.pointer("/completion/lastVerdict") {
        Some(verdict) if verdict.is_object() => format!(
            "satisfied={} confidence={} run={}",
            shown(verdict, "/satisfied"),
            shown(verdict, "/confidence"),
            shown(verdict, "/runId")
        ),
        _ => "none".into(),
    };
    let mut rows = vec![("id", shown(goal, "/id")), ("state", shown(goal, "/state"))];
    if let Some(attention) = attention {
        rows.push(("attention", printable(attention)));
    }
    rows.extend([
        ("objective", shown(goal, "/objective")),
        (
            "completion",
            with_ref(
                &shown(goal, "/completion/check"),
                &shown(goal, "/completion/verifierRef"),
            ),
        ),
        ("last verdict", verdict),
        (
            "continuation",
            with_ref(
                &shown(goal, "/continuation/mode"),
                &shown(goal, "/continuation/armRef"),
            ),
        ),
        ("bounds", bounds),
        ("iterations", iterations(goal)),
        ("owner", shown(goal, "/owner/tenant")),
        ("created", shown(goal, "/createdAt")),
    ]);
    if goal.get("updatedAt").is_some() {
        rows.push(("updated", shown(goal, "/updatedAt")));
    }
    let width = rows.iter().map(|(key, _)| key.len()).max().unwrap_or(0) + 1;
    rows.iter()
        .map(|(key, value)| format!("{:<width$} {value}\n", format!("{key}:")))
        .collect()
}

/// The goals as a table, or a sentence when there are none.
pub fn goal_list(goals: &[Value], state: Option<&str>) -> String {
    if goals.is_empty() {
        return match state {
            Some(state) => format!("no goals in state {state}\n"),
            None => "no goals\n".into(),
        };
    }
    let header = [
        "ID",
        "STATE",
        "CHECK",
        "MODE",
        "ITER",
        "CREATED",
        "OBJECTIVE",
    ];
    let rows: Vec<[String; 7]> = goals
        .iter()
        .map(|goal| {
            [
                shown(goal, "/id"),
                shown(goal, "/state"),
                shown(goal, "/completion/check"),
                shown(goal, "/continuation/mode"),
                iterations(goal),
                shown(goal, "/createdAt"),
                truncated(text(goal, "/objective"), OBJECTIVE_COLUMN),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (index, cell) in cells.iter().enumerate() {
            if index + 1 == cells.len() {
                out.push_str(cell);
            } else {
                let pad = widths[index] - cell.chars().count();
                out.push_str(cell);
                out.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push('\n');
        out
    };
    let mut out = line(header.to_vec());
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// One event as a line.
pub fn event(event: &Value) -> String {
    let head = format!(
        "#{} {} {}",
        shown(event, "/sequence"),
        shown(event, "/at"),
        shown(event, "/type")
    );
    let payload = event.get("payload").unwrap_or(&Value::Null);
    match text(event, "/type") {
        "goal.evaluated" => format!(
            "{head} run={} satisfied={} confidence={} iterations={}\n",
            shown(payload, "/runId"),
            shown(payload, "/satisfied"),
            shown(payload, "/confidence"),
            shown(payload, "/iterations")
        ),
        "goal.closed" => format!("{head} finalState={}\n", shown(payload, "/finalState")),
        _ => format!("{head} {}\n", printable(&payload.to_string())),
    }
}

/// A polled goal's visible progress, for watching without the events seam.
pub fn progress(goal: &Value) -> String {
    let verdict = match goal.pointer("/completion/lastVerdict/satisfied") {
        Some(Value::Bool(satisfied)) => format!(" lastVerdict.satisfied={satisfied}"),
        _ => String::new(),
    };
    format!(
        "{} state={} iterations={}{verdict}\n",
        shown(goal, "/id"),
        shown(goal, "/state"),
        iterations(goal)
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sample() -> Value {
        json!({
            "id": "goal-1", "objective": "keep the\u{1b}[2J backlog short", "state": "active",
            "completion": { "check": "verifier", "verifierRef": "v", "lastVerdict": null },
            "continuation": { "mode": "manual", "armRef": null },
            "bounds": { "maxLoopIterations": 5 },
            "owner": { "tenant": "acme" }, "createdAt": "2025-01-01T00:00:00.000Z",
            "progress": { "iterations": 2, "contributingRunIds": [] },
        })
    }

    #[test]
    fn a_goal_as_lines() {
        let text = goal(&sample(), Some("paused"));
        assert!(text.contains("id:           goal-1\n"), "{text}");
        assert!(text.contains("attention:    paused\n"), "{text}");
        assert!(text.contains("completion:   verifier (v)\n"), "{text}");
        assert!(text.contains("continuation: manual\n"), "{text}");
        assert!(text.contains("iterations:   2/5\n"), "{text}");
        assert!(text.contains("last verdict: none\n"), "{text}");
        assert!(
            !text.contains('\u{1b}'),
            "control characters escaped: {text}"
        );
    }

    #[test]
    fn a_list_as_a_table() {
        let mut long = sample();
        long["objective"] = json!("x".repeat(100));
        let text = goal_list(&[sample(), long], None);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("ID      STATE   CHECK"), "{text}");
        assert!(
            lines[2].ends_with(&format!("{}…", "x".repeat(39))),
            "{text}"
        );
        assert_eq!(goal_list(&[], Some("active")), "no goals in state active\n");
    }

    #[test]
    fn events_as_lines() {
        let evaluated = json!({ "sequence": 1, "type": "goal.evaluated", "at": "t",
            "payload": { "goalId": "g", "satisfied": false, "confidence": 0.9, "runId": "r", "iterations": 1 } });
        assert_eq!(
            event(&evaluated),
            "#1 t goal.evaluated run=r satisfied=false confidence=0.9 iterations=1\n"
        );
        let closed = json!({ "sequence": 2, "type": "goal.closed", "at": "t",
            "payload": { "goalId": "g", "finalState": "satisfied" } });
        assert_eq!(event(&closed), "#2 t goal.closed finalState=satisfied\n");
    }
}
