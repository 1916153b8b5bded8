//! Whether two `report.json` documents reach the same conclusions: per
//! requirement its disposition, reason and scenarios, per scenario its
//! outcome and reason, per profile its verdict, scope and counts, and the
//! suite version. Timestamps, durations, URLs, digests and messages are
//! ignored: they change on every run without changing what was proved.
//!
//! Used to keep the published report of the reference host from going
//! stale: a fresh run must agree with the committed one.

use std::collections::BTreeMap;

use serde_json::Value;

/// Every way `fresh` concludes differently from `committed`, one sentence
/// each naming the requirement, scenario or profile; empty when they agree.
pub fn differences(committed: &Value, fresh: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let version = |report: &Value| report["suite"]["version"].clone();
    if version(committed) != version(fresh) {
        found.push(format!(
            "suite version: committed {}, fresh run {}",
            version(committed),
            version(fresh)
        ));
    }
    compare(
        "profile",
        &keyed_object(&committed["profiles"]),
        &keyed_object(&fresh["profiles"]),
        profile_summary,
        &mut found,
    );
    let listed: [(&str, &str, &str, Summary); 2] = [
        ("requirement", "requirements", "id", requirement_summary),
        ("scenario", "scenarios", "name", scenario_summary),
    ];
    for (kind, list, key, summary) in listed {
        compare(
            kind,
            &keyed_array(&committed[list], key),
            &keyed_array(&fresh[list], key),
            summary,
            &mut found,
        );
    }
    found
}

/// One line that stands for a profile, requirement or scenario: two
/// entries differ when their summaries do.
type Summary = fn(&Value) -> String;

fn compare(
    kind: &str,
    committed: &BTreeMap<String, &Value>,
    fresh: &BTreeMap<String, &Value>,
    summary: Summary,
    found: &mut Vec<String>,
) {
    for (key, before) in committed {
        match fresh.get(key) {
            None => found.push(format!(
                "{kind} {key}: in the committed report ({}) but not in the fresh run",
                summary(before)
            )),
            Some(after) if summary(before) != summary(after) => found.push(format!(
                "{kind} {key}: committed {}, fresh run {}",
                summary(before),
                summary(after)
            )),
            Some(_) => {}
        }
    }
    for (key, after) in fresh {
        if !committed.contains_key(key) {
            found.push(format!(
                "{kind} {key}: new in the fresh run ({}), not in the committed report",
                summary(after)
            ));
        }
    }
}

fn keyed_object(value: &Value) -> BTreeMap<String, &Value> {
    value
        .as_object()
        .map(|object| object.iter().map(|(k, v)| (k.clone(), v)).collect())
        .unwrap_or_default()
}

fn keyed_array<'a>(value: &'a Value, key: &str) -> BTreeMap<String, &'a Value> {
    value
        .as_array()
        .map(|items| items.iter().map(|item| (plain(&item[key]), item)).collect())
        .unwrap_or_default()
}

/// A JSON value as a person reads it: strings without quotes.
fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "—".to_string(),
        other => other.to_string(),
    }
}

fn with_reason(outcome: &Value, reason: &Value) -> String {
    match reason {
        Value::Null => plain(outcome),
        reason => format!("{} ({})", plain(outcome), plain(reason)),
    }
}

fn profile_summary(profile: &Value) -> String {
    let status = match &profile["status"] {
        Value::String(status) => status.clone(),
        _ if profile["certified"] == Value::Bool(true) => "certified".to_string(),
        _ => "not certified".to_string(),
    };
    let mut summary = format!(
        "{status}: {} pass, {} fail, {} skip, {} error",
        plain(&profile["pass"]),
        plain(&profile["fail"]),
        plain(&profile["skip"]),
        plain(&profile["error"])
    );
    if let Some(count) = profile.get("notApplicable") {
        summary.push_str(&format!(", {} not applicable", plain(count)));
    }
    // What the verdict covers is part of it: a scope that moved is a
    // different conclusion.
    if let Ok(scope) = serde_json::from_value::<crate::run::scope::Scope>(profile["scope"].clone())
    {
        if !scope.is_empty() {
            summary.push_str(&format!(" [{scope}]"));
        }
    }
    summary
}

fn requirement_summary(requirement: &Value) -> String {
    format!(
        "{} proved by {}",
        with_reason(&requirement["disposition"], &requirement["reason"]),
        requirement["scenarios"]
    )
}

fn scenario_summary(scenario: &Value) -> String {
    with_reason(&scenario["outcome"], &scenario["reason"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report() -> Value {
        json!({
            "suite": {"name": "goalpost", "version": "0.1.0"},
            "host": {"url": "http://127.0.0.1:1", "discoverySha256": "a"},
            "startedAt": "2026-06-13T00:00:00.000Z",
            "profiles": {"core": {"certified": true, "pass": 2, "fail": 0, "skip": 0, "error": 0}},
            "requirements": [
                {"id": "core.a", "disposition": "pass", "reason": null, "scenarios": ["core::a"]},
                {"id": "core.b", "disposition": "pass", "reason": null, "scenarios": ["core::b"]}
            ],
            "scenarios": [
                {"name": "core::a", "outcome": "pass", "durationMs": 3},
                {"name": "core::b", "outcome": "pass", "durationMs": 4}
            ]
        })
    }

    #[test]
    fn runs_that_differ_only_in_time_place_and_digest_agree() {
        let mut fresh = report();
        fresh["host"] = json!({"url": "http://127.0.0.1:2", "discoverySha256": "b"});
        fresh["startedAt"] = json!("2027-01-01T00:00:00.000Z");
        fresh["scenarios"][0]["durationMs"] = json!(99);
        assert_eq!(differences(&report(), &fresh), Vec::<String>::new());
    }

    #[test]
    fn a_changed_disposition_names_the_requirement() {
        let mut fresh = report();
        fresh["requirements"][1]["disposition"] = json!("fail");
        fresh["scenarios"][1]["outcome"] = json!("fail");
        fresh["profiles"]["core"] =
            json!({"certified": false, "pass": 1, "fail": 1, "skip": 0, "error": 0});
        assert_eq!(
            differences(&report(), &fresh),
            [
                "profile core: committed certified: 2 pass, 0 fail, 0 skip, 0 error, fresh run not certified: 1 pass, 1 fail, 0 skip, 0 error",
                "requirement core.b: committed pass proved by [\"core::b\"], fresh run fail proved by [\"core::b\"]",
                "scenario core::b: committed pass, fresh run fail",
            ]
        );
    }

    #[test]
    fn new_and_vanished_entries_are_named() {
        let mut fresh = report();
        fresh["requirements"][1] = json!({"id": "core.c", "disposition": "skip", "reason": "seam-absent", "scenarios": ["core::b"]});
        fresh["profiles"]["observed"] =
            json!({"certified": true, "pass": 1, "fail": 0, "skip": 0, "error": 0});
        fresh["suite"]["version"] = json!("0.2.0");
        let found = differences(&report(), &fresh);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert_eq!(
            found[0],
            "suite version: committed \"0.1.0\", fresh run \"0.2.0\""
        );
        assert!(found[1].starts_with("profile observed: new in the fresh run"));
        assert!(found[2].starts_with("requirement core.b: in the committed report (pass"));
        assert_eq!(
            found[3],
            "requirement core.c: new in the fresh run (skip (seam-absent) proved by [\"core::b\"]), not in the committed report"
        );
    }
}
