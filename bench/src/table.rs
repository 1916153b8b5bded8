//! The one output of a run: rows of metric, value, baseline, ratio, target
//! and whether the target was met, printed as a Markdown table so
//! `BENCHMARKS.md` can quote it as is.

use std::fmt::Write as _;

/// Whether a row's target was met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Met {
    Yes,
    No,
    /// The row has no target: it is there to explain the others.
    Info,
}

impl Met {
    pub fn from_bool(met: bool) -> Met {
        if met {
            Met::Yes
        } else {
            Met::No
        }
    }

    fn cell(self) -> &'static str {
        match self {
            Met::Yes => "yes",
            Met::No => "**no**",
            Met::Info => "",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub metric: String,
    pub value: String,
    pub baseline: String,
    pub ratio: String,
    pub target: String,
    pub met: Met,
}

impl Row {
    /// A row without a baseline or a target.
    pub fn info(metric: impl Into<String>, value: impl Into<String>) -> Row {
        Row {
            metric: metric.into(),
            value: value.into(),
            baseline: String::new(),
            ratio: String::new(),
            target: String::new(),
            met: Met::Info,
        }
    }

    /// A row whose value is judged on its own.
    pub fn target(
        metric: impl Into<String>,
        value: impl Into<String>,
        target: impl Into<String>,
        met: bool,
    ) -> Row {
        Row {
            metric: metric.into(),
            value: value.into(),
            baseline: String::new(),
            ratio: String::new(),
            target: target.into(),
            met: Met::from_bool(met),
        }
    }

    pub fn with_baseline(mut self, baseline: impl Into<String>, ratio: f64) -> Row {
        self.baseline = baseline.into();
        self.ratio = format!("{ratio:.2}");
        self
    }
}

pub const HEADER: [&str; 6] = ["metric", "value", "baseline", "ratio", "target", "met?"];

/// The rows as a Markdown table.
pub fn render(rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| {} |", HEADER.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(HEADER.len()));
    for row in rows {
        let _ = writeln!(out, "{}", render_row(row));
    }
    out
}

pub fn render_row(row: &Row) -> String {
    let cells = [
        row.metric.as_str(),
        row.value.as_str(),
        row.baseline.as_str(),
        row.ratio.as_str(),
        row.target.as_str(),
        row.met.cell(),
    ];
    format!(
        "| {} |",
        cells
            .iter()
            .map(|cell| cell.replace('|', "\\|"))
            .collect::<Vec<_>>()
            .join(" | ")
    )
}

/// `12345.6` → `12,346`.
pub fn thousands(value: f64) -> String {
    let rounded = value.round();
    if !rounded.is_finite() {
        return value.to_string();
    }
    let digits = format!("{:.0}", rounded.abs());
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    if rounded < 0.0 {
        out.insert(0, '-');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_render_as_markdown() {
        let rows = [
            Row::target("wall", "5.2 s", "< 10 s", true).with_baseline("5.0 s", 1.04),
            Row::target("p99", "30 ms", "< 20 ms", false),
            Row::info("a|b", "1"),
        ];
        let text = render(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "| metric | value | baseline | ratio | target | met? |"
        );
        assert_eq!(lines[2], "| wall | 5.2 s | 5.0 s | 1.04 | < 10 s | yes |");
        assert_eq!(lines[3], "| p99 | 30 ms |  |  | < 20 ms | **no** |");
        assert_eq!(lines[4], "| a\\|b | 1 |  |  |  |  |");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0.4), "0");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(thousands(1234567.5), "1,234,568");
        assert_eq!(thousands(-1500.0), "-1,500");
    }
}
