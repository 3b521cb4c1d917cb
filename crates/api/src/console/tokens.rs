//! Tokens: create (scopes as checkboxes, shown once), list, and revoke with its confirmation.

use super::form::{Form, SignedIn};
use super::kit::{Page, chrome, error_page, field, html, parse_uuid, redirect};
use super::session::Session;
use super::views;
use crate::error::ApiError;
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::web;
use apidrift_app::{MintToken, MintedToken, act};
use apidrift_model::{Role, Scope};
use time::OffsetDateTime;

/// Registers the token routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/console/tokens", web::get().to(tokens))
        .route("/console/tokens", web::post().to(create_token))
        .route("/console/tokens/{id}/revoke", web::get().to(confirm_revoke))
        .route("/console/tokens/{id}/revoke", web::post().to(revoke_token));
}

/// The tokens page of a user who may manage tokens (the caller's extractor checked it).
async fn tokens_page(state: &AppState, s: &Session, created: Option<&MintedToken>) -> Page {
    let list = state
        .service
        .list_tokens(&s.actor())
        .await
        .map_err(ApiError::from)?;
    let now = OffsetDateTime::now_utc();
    let rows = list
        .iter()
        .map(|t| views::tokens::TokenRow {
            id: t.id,
            name: &t.name,
            hint: &t.hint,
            scopes: &t.scopes,
            role: t.role,
            last_used_at: t.last_used_at,
            expires_at: t.expires_at,
            status: if t.revoked_at.is_some() {
                "revoked"
            } else if t.is_active(now) {
                "active"
            } else {
                "expired"
            },
            revocable: t.revoked_at.is_none(),
        })
        .collect();
    let view = views::tokens::Tokens {
        created: created.map(MintedToken::expose),
        max_role: s.role(),
        rows,
    };
    Ok(html(
        StatusCode::OK,
        views::tokens::render(&chrome(s, "tokens"), &view),
    ))
}

async fn tokens(state: web::Data<AppState>, signed_in: SignedIn<act::ManageTokens>) -> Page {
    tokens_page(&state, &signed_in.session, None).await
}

async fn create_token(state: web::Data<AppState>, form: Form<act::ManageTokens>) -> Page {
    let (s, pairs) = (form.session, form.pairs);
    let made: Result<MintedToken, ApiError> = async {
        let name = field(&pairs, "name").unwrap_or("").trim().to_owned();
        if name.is_empty() || name.chars().count() > 200 {
            return Err(ApiError::BadRequest(
                "name: required, at most 200 characters".into(),
            ));
        }
        let mut scopes = Vec::new();
        for (k, v) in &pairs {
            if k == "scopes" {
                let scope = v
                    .parse::<Scope>()
                    .map_err(|_| ApiError::BadRequest(format!("scopes: unknown scope {v:?}")))?;
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
        }
        if scopes.is_empty() {
            return Err(ApiError::BadRequest("scopes: choose at least one".into()));
        }
        let role = field(&pairs, "role")
            .unwrap_or("member")
            .parse::<Role>()
            .map_err(|_| ApiError::BadRequest("role: unknown role".into()))?;
        let expires_in_days = match field(&pairs, "expires_in_days").map(str::trim) {
            None | Some("") => None,
            Some(d) => Some(
                d.parse::<u32>()
                    .ok()
                    .filter(|d| (1..=3650).contains(d))
                    .ok_or_else(|| {
                        ApiError::BadRequest("expires_in_days: a number from 1 to 3650".into())
                    })?,
            ),
        };
        Ok(state
            .service
            .mint_token(
                &s.actor(),
                MintToken {
                    name,
                    scopes,
                    role,
                    expires_in_days,
                },
            )
            .await?)
    }
    .await;
    match made {
        Ok(token) => tokens_page(&state, &s, Some(&token)).await,
        Err(e) => Ok(error_page(Some(&s), &e)),
    }
}

/// The confirmation step of Revoke: names the token (name and hint).
async fn confirm_revoke(
    state: web::Data<AppState>,
    id: web::Path<String>,
    signed_in: SignedIn<act::ManageTokens>,
) -> Page {
    let s = signed_in.session;
    let found: Result<_, ApiError> = async {
        let id = parse_uuid(&id)?;
        state
            .service
            .list_tokens(&s.actor())
            .await
            .map_err(ApiError::from)?
            .into_iter()
            .find(|t| t.id == id && t.revoked_at.is_none())
            .ok_or(ApiError::NotFound)
    }
    .await;
    let t = match found {
        Ok(t) => t,
        Err(e) => return Ok(error_page(Some(&s), &e)),
    };
    let view = views::confirm::Confirm {
        title: "Revoke a token",
        question: maud::html! {
            "Revoke the token " (t.name) " (…" (t.hint) ", role " (t.role.as_str()) ")?"
        },
        consequence: "Every request with it is refused from now on. This cannot be undone:                       create a new token if it is still needed.",
        action: format!("/console/tokens/{}/revoke", t.id),
        button: "Revoke",
        button_id: "confirm-revoke",
        danger: true,
        back: "/console/tokens".into(),
        hidden: Vec::new(),
    };
    Ok(html(
        StatusCode::OK,
        views::confirm::render(&chrome(&s, "tokens"), &view),
    ))
}

async fn revoke_token(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Form<act::ManageTokens>,
) -> Page {
    let s = form.session;
    let done: Result<(), ApiError> = async {
        let id = parse_uuid(&id)?;
        state.service.revoke_token(&s.actor(), id).await?;
        Ok(())
    }
    .await;
    match done {
        Ok(()) => Ok(redirect("/console/tokens")),
        Err(e) => Ok(error_page(Some(&s), &e)),
    }
}
