//! The isolation test's goal (`--foreign-invalid-goal`): not a mutant,
//! a goal no scenario created, shown in one tenant's lists.

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{json, Value};

use super::{credential, rewrite, route, Mounted, Route};

/// The goal `--foreign-invalid-goal` shows first in a tenant's lists:
/// schema-invalid in several ways (a numeric objective, a state that does
/// not exist, required members missing), as a buggy client or an older
/// version of the host might have left it. No scenario created it, so no
/// check of a scenario may look at it.
fn foreign_goal(tenant: &str) -> Value {
    json!({
        "id": "goal-foreign-invalid",
        "objective": 42,
        "state": "sleeping",
        "completion": {"check": "oracle"},
        "owner": {"tenant": tenant},
    })
}

/// Puts the foreign goal first in every successful list of its tenant.
pub(super) async fn foreign_invalid_goal(
    State(Mounted { state, switch }): State<Mounted>,
    request: Request,
    next: Next,
) -> Response {
    let Some(tenant) = switch.foreign_invalid_goal().map(str::to_string) else {
        return next.run(request).await;
    };
    let caller = credential(&request)
        .strip_prefix("Bearer ")
        .and_then(|token| state.tenant_of(token.trim()).cloned());
    // Whole lists only: a paged answer keeps the size and cursor order the
    // host gave it, as it would with such a goal stored (`limit=1` then
    // still holds one goal, whoever's it is).
    let query = request.uri().query().unwrap_or_default();
    let paged = query.contains("after=") || query.contains("limit=");
    let listed = request.method() == Method::GET
        && route(request.uri().path()) == Route::Collection
        && !paged
        && caller.is_some_and(|caller| caller.as_str() == tenant);
    let response = next.run(request).await;
    if !listed || !response.status().is_success() {
        return response;
    }
    rewrite(response, |list| {
        if let Some(goals) = list.get_mut("goals").and_then(Value::as_array_mut) {
            goals.insert(0, foreign_goal(&tenant));
        }
    })
    .await
}
