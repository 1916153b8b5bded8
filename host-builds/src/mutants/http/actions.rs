//! A goal's actions (pause, resume, abandon, continue): what they answer
//! when they refuse, and what they answer when they succeed.

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{credential, json_response, load_any, rewrite, Call, Route};
use crate::mutants::Mutant;
use goalpost_host::domain::{GoalId, GoalState};

/// Serves `request` with the action bug of `mutant`.
pub(super) async fn serve(call: &Call<'_>, request: Request, next: Next) -> Response {
    let (mutant, method, route) = (call.mutant, &call.method, &call.route);
    let state = call.state;
    match (mutant, method, route) {
        (
            Mutant::MissingGoalConflict,
            &Method::POST,
            Route::Sub(_, "pause" | "resume" | "abandon"),
        ) => {
            let response = next.run(request).await;
            if response.status() != StatusCode::NOT_FOUND {
                return response;
            }
            json_response(
                StatusCode::CONFLICT,
                &json!({ "error": "goal_terminal", "message": "the goal cannot change" }),
            )
        }
        (Mutant::ContinueTerminalAnswers200, &Method::POST, Route::Sub(id, "continue")) => {
            let response = next.run(request).await;
            if response.status() != StatusCode::CONFLICT {
                return response;
            }
            let goal = match GoalId::parse(id) {
                Some(id) => load_any(state, &id).await,
                None => None,
            };
            match goal {
                Some(goal) if goal.state.is_terminal() => json_response(
                    StatusCode::OK,
                    &json!({
                        "goal": goalpost_host::domain::wire::goal(&goal),
                        "evaluation": null,
                    }),
                ),
                _ => response,
            }
        }
        (Mutant::AbandonAnswersUnsaved, &Method::POST, Route::Sub(id, "abandon")) => {
            let tenant = credential(&request)
                .strip_prefix("Bearer ")
                .and_then(|token| state.tenant_of(token.trim()).cloned());
            let goal = match (tenant, GoalId::parse(id)) {
                (Some(tenant), Some(id)) => state.engine().get(&tenant, &id).await.ok(),
                _ => None,
            };
            match goal {
                Some(mut goal) if !goal.state.is_terminal() => {
                    goal.state = GoalState::Abandoned;
                    json_response(
                        StatusCode::OK,
                        &serde_json::to_value(goalpost_host::domain::wire::goal(&goal))
                            .unwrap_or_default(),
                    )
                }
                _ => next.run(request).await,
            }
        }
        (Mutant::PauseRefused, &Method::POST, Route::Sub(_, "pause")) => json_response(
            StatusCode::CONFLICT,
            &json!({ "error": "conflict", "message": "pause is not supported" }),
        ),
        (Mutant::PauseRefusalBare, &Method::POST, Route::Sub(_, "pause")) => {
            // An early `return StatusCode::CONFLICT` in the handler, past
            // the error type that renders the envelope.
            let response = next.run(request).await;
            if response.status() != StatusCode::CONFLICT {
                return response;
            }
            StatusCode::CONFLICT.into_response()
        }
        (Mutant::ContinueEvaluationNextIteration, &Method::POST, Route::Sub(_, "continue")) => {
            let response = next.run(request).await;
            rewrite(response, |answer| {
                if let Some(iteration) = answer.pointer_mut("/evaluation/iteration") {
                    if let Some(number) = iteration.as_u64() {
                        *iteration = json!(number + 1);
                    }
                }
            })
            .await
        }
        _ => next.run(request).await,
    }
}
