//! `goalpost diff OLD.json NEW.json`: how a host's result moved between two
//! runs, by requirement disposition and by profile scope. A host author
//! keeps a baseline report.json in their repository and gates CI on this:
//! it exits 1 when a MUST requirement regressed (it now fails, errors or is
//! not reached, and did not before) or a profile's scope shrank (the host
//! stopped offering something its certification covered: a judge, a mode,
//! reported runs, ...). A SHOULD requirement that turns advisory is listed
//! but never fails the gate, as it never blocks certification.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use crate::report::{ProfileReport, RequirementReport, RunReport};
use crate::run::outcome::DispositionKind;
use crate::run::scope::Status;

/// One requirement whose disposition moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub id: String,
    /// `MUST` or `SHOULD`, from the newer report when it has the requirement.
    pub level: String,
    /// `None`: not in that report.
    pub old: Option<String>,
    pub new: Option<String>,
    /// Why the new disposition is broken, when the new report says;
    /// `None` when the new disposition is not broken.
    pub message: Option<String>,
}

/// Every movement between two reports, grouped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// Was not broken (pass, skip, or absent-then-appeared), now is.
    pub regressed: Vec<Change>,
    /// Was broken, now passes.
    pub recovered: Vec<Change>,
    /// Any other move (pass → skip, fail → error, skip → pass, ...).
    pub changed: Vec<Change>,
    /// Only in the newer report (a newer suite); broken ones are also
    /// regressions.
    pub appeared: Vec<Change>,
    /// Only in the older report.
    pub vanished: Vec<Change>,
    /// `profile: old → new` where the verdict changed.
    pub profiles: Vec<String>,
    /// Profiles whose scope changed.
    pub scopes: Vec<ScopeChange>,
    /// `old → new` when the two were judged by different profile versions.
    pub profile_version: Option<String>,
}

/// One profile whose scope moved: what its verdict covers now against
/// before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeChange {
    pub profile: String,
    pub old: String,
    pub new: String,
    /// What the old scope covered and the new one does not (tokens), and
    /// what the new one no longer offers: a shrink, a regression.
    pub lost: Vec<String>,
    /// What the new scope covers that the old did not.
    pub gained: Vec<String>,
}

impl ScopeChange {
    pub fn shrank(&self) -> bool {
        !self.lost.is_empty()
    }
}

/// A disposition that says the host broke the requirement (or could not be
/// shown to hold it because something else broke first).
pub fn broken(disposition: &DispositionKind) -> bool {
    !matches!(
        disposition,
        DispositionKind::Pass | DispositionKind::Skip | DispositionKind::NotApplicable
    )
}

/// The new report's reason for a broken disposition (a pass or skip has
/// none worth repeating).
fn broken_message(now: &RequirementReport) -> Option<String> {
    now.message.clone().filter(|_| broken(&now.disposition))
}

fn shown(disposition: &DispositionKind, reason: Option<&String>) -> String {
    match reason {
        Some(reason) => format!("{disposition} ({reason})"),
        None => disposition.to_string(),
    }
}

impl Diff {
    pub fn between(old: &RunReport, new: &RunReport) -> Diff {
        let index = |report: &RunReport| -> BTreeMap<String, RequirementReport> {
            report
                .requirements
                .iter()
                .map(|requirement| (requirement.id.clone(), requirement.clone()))
                .collect()
        };
        let (before, after) = (index(old), index(new));
        let mut diff = Diff::default();
        for (id, was) in &before {
            let Some(now) = after.get(id) else {
                diff.vanished.push(Change {
                    id: id.clone(),
                    level: was.level.clone(),
                    old: Some(shown(&was.disposition, was.reason.as_ref())),
                    new: None,
                    message: None,
                });
                continue;
            };
            let (old_shown, new_shown) = (
                shown(&was.disposition, was.reason.as_ref()),
                shown(&now.disposition, now.reason.as_ref()),
            );
            if old_shown == new_shown {
                continue;
            }
            let change = Change {
                id: id.clone(),
                level: now.level.clone(),
                old: Some(old_shown),
                new: Some(new_shown),
                message: broken_message(now),
            };
            match (broken(&was.disposition), broken(&now.disposition)) {
                (false, true) => diff.regressed.push(change),
                (true, false) if now.disposition == DispositionKind::Pass => {
                    diff.recovered.push(change)
                }
                _ => diff.changed.push(change),
            }
        }
        for (id, now) in &after {
            if before.contains_key(id) {
                continue;
            }
            let change = Change {
                id: id.clone(),
                level: now.level.clone(),
                old: None,
                new: Some(shown(&now.disposition, now.reason.as_ref())),
                message: broken_message(now),
            };
            if broken(&now.disposition) {
                diff.regressed.push(change.clone());
            }
            diff.appeared.push(change);
        }
        for (profile, now) in &new.profiles {
            let Some(was) = old.profiles.get(profile) else {
                continue;
            };
            if was.status() != now.status() {
                diff.profiles
                    .push(format!("{profile}: {} → {}", was.status(), now.status()));
            }
            if let Some(change) = scope_change(profile, was, now) {
                diff.scopes.push(change);
            }
        }
        if old.profile_version != new.profile_version {
            let version = |v: &Option<String>| v.clone().unwrap_or_else(|| "unversioned".into());
            diff.profile_version = Some(format!(
                "{} → {}",
                version(&old.profile_version),
                version(&new.profile_version)
            ));
        }
        diff
    }

    /// The regressions of MUST requirements: what fails the gate.
    pub fn must_regressions(&self) -> impl Iterator<Item = &Change> {
        self.regressed
            .iter()
            .filter(|change| change.level != "SHOULD")
    }

    /// The profiles whose scope shrank: also what fails the gate.
    pub fn shrunk_scopes(&self) -> impl Iterator<Item = &ScopeChange> {
        self.scopes.iter().filter(|change| change.shrank())
    }

    /// 1 when a MUST requirement regressed or a scope shrank, else 0.
    pub fn exit_code(&self) -> u8 {
        u8::from(self.must_regressions().next().is_some() || self.shrunk_scopes().next().is_some())
    }
}

/// How `profile`'s scope moved, if it did. Profiles a run did not select
/// have no verdict to scope, and a report written before scopes existed
/// has none to compare: neither is a change.
fn scope_change(profile: &str, was: &ProfileReport, now: &ProfileReport) -> Option<ScopeChange> {
    let judged = |p: &ProfileReport| p.status() != Status::OptedOut && !p.scope.is_empty();
    if !judged(was) || !judged(now) || was.scope == now.scope {
        return None;
    }
    let (before, after) = (was.scope.covered(), now.scope.covered());
    let mut lost: BTreeSet<String> = before.difference(&after).cloned().collect();
    // A feature the profile names that is newly not offered shrinks it too
    // (its requirements are now not applicable), even when the old scope
    // listed it nowhere (a newer suite that names it).
    lost.extend(
        now.scope
            .not_offered
            .iter()
            .filter(|token| !was.scope.not_offered.contains(token))
            .cloned(),
    );
    let lost: Vec<String> = lost.into_iter().collect();
    Some(ScopeChange {
        profile: profile.to_string(),
        old: was.scope.to_string(),
        new: now.scope.to_string(),
        lost,
        gained: after.difference(&before).cloned().collect(),
    })
}

fn write_group(out: &mut impl Write, title: &str, changes: &[&Change]) -> io::Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    writeln!(out, "{title} ({}):", changes.len())?;
    for change in changes {
        let from = change.old.as_deref().unwrap_or("absent");
        let to = change.new.as_deref().unwrap_or("absent");
        write!(out, "  {} {}: {from} → {to}", change.id, change.level)?;
        match &change.message {
            Some(message) => writeln!(out, ": {message}")?,
            None => writeln!(out)?,
        }
    }
    Ok(())
}

/// Writes the diff for a person (and a CI log).
pub fn write(diff: &Diff, mut out: impl Write) -> io::Result<()> {
    if let Some(version) = &diff.profile_version {
        writeln!(out, "profile version: {version}")?;
    }
    for profile in &diff.profiles {
        writeln!(out, "profile {profile}")?;
    }
    for change in &diff.scopes {
        writeln!(
            out,
            "scope of {} {}: {} → {}",
            change.profile,
            if change.shrank() {
                format!("shrank (no longer: {})", change.lost.join(", "))
            } else {
                "changed".to_string()
            },
            change.old,
            change.new
        )?;
    }
    let must: Vec<&Change> = diff.must_regressions().collect();
    let should: Vec<&Change> = diff
        .regressed
        .iter()
        .filter(|change| change.level == "SHOULD")
        .collect();
    write_group(&mut out, "regressed, MUST", &must)?;
    write_group(
        &mut out,
        "regressed, SHOULD (advisory, never blocks)",
        &should,
    )?;
    for (title, changes) in [
        ("recovered", &diff.recovered),
        ("changed", &diff.changed),
        ("appeared", &diff.appeared),
        ("vanished", &diff.vanished),
    ] {
        write_group(&mut out, title, &changes.iter().collect::<Vec<_>>())?;
    }
    match must.len() {
        0 => writeln!(out, "no MUST requirement regressed")?,
        1 => writeln!(out, "1 MUST requirement regressed")?,
        n => writeln!(out, "{n} MUST requirements regressed")?,
    }
    let shrunk: Vec<&str> = diff
        .shrunk_scopes()
        .map(|change| change.profile.as_str())
        .collect();
    if !shrunk.is_empty() {
        writeln!(out, "scope shrank (a regression): {}", shrunk.join(", "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
