//! Documents read back misrendered: discovery's mode list and a goal's
//! timestamps.

use axum::extract::Request;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{json, Value};

use super::{rewrite, Call, Route};
use crate::mutants::Mutant;

/// An RFC 3339 timestamp with its fraction of a second dropped
/// (`…:33.123Z` → `…:33Z`); `None` if it has none.
fn to_whole_second(at: &str) -> Option<String> {
    let (whole, fraction) = at.split_once('.')?;
    let zone = fraction.trim_start_matches(|c: char| c.is_ascii_digit());
    Some(format!("{whole}{zone}"))
}

/// Serves `request` with the read bug of `mutant`.
pub(super) async fn serve(call: &Call<'_>, request: Request, next: Next) -> Response {
    let (mutant, method, route) = (call.mutant, &call.method, &call.route);
    match (mutant, method, route) {
        (Mutant::DiscoveryDuplicateModes, &Method::GET, Route::Discovery) => {
            let response = next.run(request).await;
            rewrite(response, |document| {
                if let Some(modes) = document
                    .pointer_mut("/agents/goals/continuation")
                    .and_then(Value::as_array_mut)
                {
                    if let Some(first) = modes.first().cloned() {
                        modes.push(first);
                    }
                }
            })
            .await
        }
        (Mutant::GetTimestampsToSeconds, &Method::GET, Route::Goal(_)) => {
            // A read model whose timestamp columns keep whole seconds.
            let response = next.run(request).await;
            if !response.status().is_success() {
                return response;
            }
            rewrite(response, |goal| {
                for key in ["createdAt", "updatedAt"] {
                    if let Some(at) = goal.get_mut(key) {
                        if let Some(whole) = at.as_str().and_then(to_whole_second) {
                            *at = json!(whole);
                        }
                    }
                }
            })
            .await
        }
        _ => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_lose_their_fraction_only() {
        assert_eq!(
            to_whole_second("2026-06-13T00:00:07.123Z").as_deref(),
            Some("2026-06-13T00:00:07Z")
        );
        assert_eq!(
            to_whole_second("2026-06-13T00:00:07.5+01:00").as_deref(),
            Some("2026-06-13T00:00:07+01:00")
        );
        assert_eq!(to_whole_second("2026-06-13T00:00:07Z"), None);
    }
}
