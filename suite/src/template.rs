//! `{name}` templates in scenario strings.
//!
//! Inside a string, `{name}` is replaced by the variable's text (a string
//! variable as is, any other value as its JSON text). A string that is exactly
//! `{name}` becomes the variable's JSON value, so captured numbers stay
//! numbers. Braces that do not enclose a name (`{"a":1}`, `{ }`) are left
//! alone, which keeps raw JSON bodies usable without escaping.

use std::collections::BTreeMap;

use serde_json::Value;

/// The built-in variables every scenario run has.
pub const BUILTINS: &[&str] = &["base", "nonce", "scenario"];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown variable `{{{name}}}`")]
pub struct TemplateError {
    pub name: String,
}

/// The variables of one scenario run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Vars {
    values: BTreeMap<String, Value>,
}

impl Vars {
    pub fn new(base: &str, nonce: &str, scenario: &str) -> Vars {
        let mut vars = Vars::default();
        vars.set("base", Value::from(base));
        vars.set("nonce", Value::from(nonce));
        vars.set("scenario", Value::from(scenario));
        vars
    }

    pub fn set(&mut self, name: &str, value: Value) {
        self.values.insert(name.to_string(), value);
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values.get(name)
    }

    fn lookup(&self, name: &str) -> Result<&Value, TemplateError> {
        self.get(name).ok_or_else(|| TemplateError {
            name: name.to_string(),
        })
    }

    /// Renders a string template to a string.
    pub fn render_str(&self, template: &str) -> Result<String, TemplateError> {
        let mut out = String::with_capacity(template.len());
        for piece in pieces(template) {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Var(name) => match self.lookup(name)? {
                    Value::String(text) => out.push_str(text),
                    other => out.push_str(&other.to_string()),
                },
            }
        }
        Ok(out)
    }

    /// Renders every string inside a JSON value; object keys are left as
    /// written.
    pub fn render_value(&self, value: &Value) -> Result<Value, TemplateError> {
        Ok(match value {
            Value::String(text) => match whole_var(text) {
                Some(name) => self.lookup(name)?.clone(),
                None => Value::String(self.render_str(text)?),
            },
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| self.render_value(item))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, item)| Ok((key.clone(), self.render_value(item)?)))
                    .collect::<Result<_, TemplateError>>()?,
            ),
            other => other.clone(),
        })
    }
}

/// The variable names a string refers to, in order.
pub fn names_in_str(template: &str) -> Vec<&str> {
    pieces(template)
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Var(name) => Some(name),
            Piece::Text(_) => None,
        })
        .collect()
}

/// The variable names every string inside a JSON value refers to.
pub fn names_in_value(value: &Value) -> Vec<&str> {
    match value {
        Value::String(text) => names_in_str(text),
        Value::Array(items) => items.iter().flat_map(names_in_value).collect(),
        Value::Object(map) => map.values().flat_map(names_in_value).collect(),
        _ => Vec::new(),
    }
}

/// `Some(name)` when the whole string is one `{name}`.
fn whole_var(text: &str) -> Option<&str> {
    match pieces(text).as_slice() {
        [Piece::Var(name)] => Some(name),
        _ => None,
    }
}

#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// An identifier, or identifiers joined by dots (`mock.arm`): the dotted
/// names are the suite's own namespaced variables, which captures (plain
/// identifiers) cannot shadow.
fn is_name(candidate: &str) -> bool {
    candidate.split('.').all(|part| {
        let mut chars = part.chars();
        chars
            .next()
            .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut text_start = 0;
    let mut cursor = 0;
    while let Some(open) = template[cursor..].find('{').map(|at| cursor + at) {
        let after = open + 1;
        let Some(close) = template[after..].find('}').map(|at| after + at) else {
            break;
        };
        let candidate = &template[after..close];
        if is_name(candidate) {
            if text_start < open {
                out.push(Piece::Text(&template[text_start..open]));
            }
            out.push(Piece::Var(candidate));
            text_start = close + 1;
            cursor = close + 1;
        } else {
            cursor = after;
        }
    }
    if text_start < template.len() {
        out.push(Piece::Text(&template[text_start..]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars() -> Vars {
        let mut vars = Vars::new("/v1/goals", "n0nce", "core::create");
        vars.set("goalId", json!("goal-1"));
        vars.set("count", json!(3));
        vars.set("etag", json!("\"7\""));
        vars
    }

    #[test]
    fn replaces_builtins_and_captures_inside_strings() {
        let vars = vars();
        assert_eq!(
            vars.render_str("{base}/{goalId}/events").unwrap(),
            "/v1/goals/goal-1/events"
        );
        assert_eq!(
            vars.render_str("goalpost {nonce} in {scenario}").unwrap(),
            "goalpost n0nce in core::create"
        );
    }

    #[test]
    fn non_string_values_render_as_json_text_inside_strings() {
        assert_eq!(vars().render_str("n={count}").unwrap(), "n=3");
    }

    #[test]
    fn a_whole_variable_string_keeps_the_json_type() {
        let vars = vars();
        assert_eq!(vars.render_value(&json!("{count}")).unwrap(), json!(3));
        assert_eq!(vars.render_value(&json!("{count}x")).unwrap(), json!("3x"));
        assert_eq!(
            vars.render_value(&json!({"a": ["{count}", {"b": "{goalId}"}], "{count}": 1}))
                .unwrap(),
            json!({"a": [3, {"b": "goal-1"}], "{count}": 1})
        );
    }

    #[test]
    fn braces_that_are_not_names_are_left_alone() {
        let vars = vars();
        assert_eq!(
            vars.render_str(r#"{"objective": "{nonce}"}"#).unwrap(),
            r#"{"objective": "n0nce"}"#
        );
        assert_eq!(vars.render_str("{ } {1a} {").unwrap(), "{ } {1a} {");
        assert_eq!(vars.render_str("{{nonce}}").unwrap(), "{n0nce}");
    }

    #[test]
    fn an_unknown_variable_is_an_error() {
        let error = vars().render_str("{base}/{missing}").unwrap_err();
        assert_eq!(error.name, "missing");
        assert_eq!(error.to_string(), "unknown variable `{missing}`");
        assert!(vars().render_value(&json!(["{missing}"])).is_err());
    }

    #[test]
    fn header_values_with_quotes_survive() {
        assert_eq!(vars().render_str("{etag}").unwrap(), "\"7\"");
    }

    #[test]
    fn dotted_names_are_variables_too() {
        let mut vars = vars();
        vars.set("mock.arm", json!("http://m/mock/n/arm"));
        assert_eq!(
            vars.render_str("{mock.arm}#intervalMs=50").unwrap(),
            "http://m/mock/n/arm#intervalMs=50"
        );
        assert_eq!(names_in_str("{mock.arm}{a..b}{.a}{a.}"), vec!["mock.arm"]);
        assert!(vars.render_str("{mock.verifier}").is_err());
    }

    #[test]
    fn names_are_listed_in_order() {
        assert_eq!(names_in_str("{a}-{b_2}{ c }"), vec!["a", "b_2"]);
        assert_eq!(
            names_in_value(&json!({"x": ["{a}"], "y": "{b}"})),
            vec!["a", "b"]
        );
    }
}
