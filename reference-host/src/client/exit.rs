//! Exit codes of `goalpost-host goals`, compatible with the openwop CLI's
//! goals group: a script can gate on a judge-satisfied goal and never see
//! success for a goal that is still open.

/// The goal is `satisfied` (or `list`/`watch` setup succeeded where no goal
/// state applies).
pub const SATISFIED: u8 = 0;
/// `bound-exceeded`, `abandoned`, an unknown state, or any error (transport,
/// a refusal from the host, a host that does not advertise goals).
pub const FAILED: u8 = 1;
/// The command line was wrong; nothing was sent.
pub const USAGE: u8 = 2;
/// `escalated`, or still open (`active`, paused or not).
pub const OPEN: u8 = 3;

/// The exit code a goal's `state` maps to.
pub fn for_state(state: Option<&str>) -> u8 {
    match state {
        Some("satisfied") => SATISFIED,
        Some("active" | "escalated") => OPEN,
        _ => FAILED,
    }
}

/// Whether a watch goes on: only an `active` goal can still change by itself.
pub fn is_running(state: Option<&str>) -> bool {
    state == Some("active")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_map_like_the_openwop_cli() {
        assert_eq!(for_state(Some("satisfied")), 0);
        assert_eq!(for_state(Some("active")), 3);
        assert_eq!(for_state(Some("escalated")), 3);
        assert_eq!(for_state(Some("bound-exceeded")), 1);
        assert_eq!(for_state(Some("abandoned")), 1);
        assert_eq!(for_state(Some("something-new")), 1);
        assert_eq!(for_state(None), 1);
    }

    #[test]
    fn only_active_goals_keep_a_watch_going() {
        assert!(is_running(Some("active")));
        for state in ["satisfied", "escalated", "abandoned", "bound-exceeded"] {
            assert!(!is_running(Some(state)), "{state}");
        }
        assert!(!is_running(None));
    }
}
