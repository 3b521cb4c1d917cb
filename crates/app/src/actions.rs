//! Who may do what: **one table** of the actions the front doors offer, each with the token scope
//! it needs, the weakest role allowed, the rate-limit class it spends and the verb of its 403
//! text; and the [`Actor`] a use case checks against it.
//!
//! The table is read by every front door and by the service itself:
//! * the API's extractor `Authed<A>` (`A` one of the marker types of [`act`]) checks the token
//!   against the action's rule and spends its rate-limit class before the handler runs;
//! * the console's form extractor does the same for a signed-in user (a session holds every
//!   scope: only the role counts);
//! * each use case called on behalf of a caller takes an `&Actor` and checks [`Actor::may`]
//!   again before it touches anything (defence in depth: a new front door cannot forget it);
//! * the CLI acts as [`Actor::operator`], which may do everything.
//!
//! The 403 texts: `token lacks scope endpoints:write` (the scope is checked first), then
//! `role viewer cannot create endpoints`.

use crate::error::ServiceError;
use apidrift_model::{Role, Scope};
use uuid::Uuid;

/// A limited class of requests: each has its own budget per workspace (and, for requests without
/// a valid token, per client address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RateClass {
    /// Read routes: 120 per minute per workspace.
    Reads,
    /// Checks and baseline captures: 30 per minute per workspace.
    Checks,
    /// Creates (POST /endpoints, a bulk request counts once): 30 per minute per workspace.
    Creates,
    /// Requests without a valid token: 60 per minute per client address.
    Unauthenticated,
}

impl RateClass {
    /// The policy name in the headers.
    pub const fn as_str(self) -> &'static str {
        match self {
            RateClass::Reads => "reads",
            RateClass::Checks => "checks",
            RateClass::Creates => "creates",
            RateClass::Unauthenticated => "unauthenticated",
        }
    }
}

/// What an action requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The scope a token must carry; `None`: no token may do it (a console session or the
    /// operator only).
    pub scope: Option<Scope>,
    /// The weakest role allowed.
    pub min_role: Role,
    /// The rate-limit class the request spends.
    pub class: RateClass,
    /// What a weaker role cannot do, for the 403 text `role viewer cannot <verb>`.
    pub verb: &'static str,
}

/// Implemented by the marker types of [`act`]: the action a route or a form performs, as a type
/// (for extractors such as the API's `Authed<A>`).
pub trait Act: 'static {
    /// The action.
    const ACTION: Action;
}

macro_rules! table {
    ($(
        $(#[$doc:meta])* $name:ident: $scope:expr, $role:ident, $class:ident, $verb:literal;
    )*) => {
        /// An action a caller asks for; its [`Rule`] is [`Action::rule`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Action {
            $( $(#[$doc])* $name, )*
        }

        impl Action {
            /// Every action, in the order of the table.
            pub const ALL: &'static [Action] = &[$( Action::$name, )*];

            /// The table: what each action requires.
            pub const fn rule(self) -> Rule {
                match self {
                    $( Action::$name => Rule {
                        scope: $scope,
                        min_role: Role::$role,
                        class: RateClass::$class,
                        verb: $verb,
                    }, )*
                }
            }

            /// The action's name as written in the table (`ReadEndpoints`).
            pub const fn name(self) -> &'static str {
                match self {
                    $( Action::$name => stringify!($name), )*
                }
            }
        }

        /// One marker type per [`Action`], for extractors that take the action as a type
        /// parameter (`Authed<act::ReadEndpoints>`).
        pub mod act {
            $(
                #[doc = concat!(
                    "The action [`", stringify!($name), "`](super::Action::",
                    stringify!($name), ")."
                )]
                #[derive(Debug)]
                pub enum $name {}
                impl crate::actions::Act for $name {
                    const ACTION: crate::actions::Action = crate::actions::Action::$name;
                }
            )*
        }
    };
}

const READ: Option<Scope> = Some(Scope::EndpointsRead);
const WRITE: Option<Scope> = Some(Scope::EndpointsWrite);
const RUN: Option<Scope> = Some(Scope::ChecksRun);
const BASELINES: Option<Scope> = Some(Scope::BaselinesWrite);
const SESSION: Option<Scope> = None;

table! {
    /// Read endpoints, their checks and diffs.
    ReadEndpoints: READ, Viewer, Reads, "read endpoints";
    /// Register endpoints (one or many; an OpenAPI import too).
    CreateEndpoints: WRITE, Member, Creates, "create endpoints";
    /// Change an endpoint (`PATCH`).
    UpdateEndpoints: WRITE, Member, Creates, "change endpoints";
    /// Change an endpoint from the console's edit form.
    EditEndpoints: WRITE, Member, Creates, "edit endpoints";
    /// Pause or resume an endpoint's schedule.
    PauseEndpoints: WRITE, Member, Creates, "pause or resume endpoints";
    /// Delete endpoints.
    DeleteEndpoints: WRITE, Admin, Creates, "delete endpoints";
    /// Apply a monitors file: create, change and (with prune) delete keyed endpoints.
    ApplyMonitors: WRITE, Admin, Creates, "apply monitors files";
    /// Run a check now.
    RunChecks: RUN, Member, Checks, "run checks";
    /// Capture a baseline.
    CaptureBaselines: BASELINES, Member, Checks, "capture baselines";
    /// Accept a diff (its response becomes the baseline).
    AcceptDiffs: BASELINES, Admin, Checks, "accept diffs";
    /// List webhooks and their deliveries.
    ListWebhooks: WRITE, Admin, Reads, "manage webhooks";
    /// Add, remove and test webhooks.
    ManageWebhooks: WRITE, Admin, Creates, "manage webhooks";
    /// Create, list and revoke tokens (console).
    ManageTokens: SESSION, Admin, Creates, "manage tokens";
    /// Read the workspace's settings (its default severity overrides).
    ReadWorkspace: READ, Viewer, Reads, "read workspace settings";
    /// Change the workspace's settings (`PATCH /api/v1/workspace`).
    UpdateWorkspace: WRITE, Admin, Creates, "change workspace settings";
    /// Probe a URL once (console).
    ProbeUrls: SESSION, Member, Checks, "run checks";
    /// List the operations of an OpenAPI document (console; importing them is
    /// [`Action::CreateEndpoints`]).
    ParseOpenApi: SESSION, Viewer, Checks, "read endpoints";
}

/// Who asks: a token, a console session or the operator, in one workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    workspace: Uuid,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// An API token: its role and scopes.
    Token { role: Role, scopes: Vec<Scope> },
    /// A signed-in console user: every scope, the membership's role.
    Session { role: Role },
    /// The operator at the command line: everything.
    Operator,
}

impl Actor {
    /// The holder of an API token of `workspace` with `role` and `scopes`.
    pub fn token(workspace: Uuid, role: Role, scopes: Vec<Scope>) -> Actor {
        Actor {
            workspace,
            kind: Kind::Token { role, scopes },
        }
    }

    /// A console user signed in to `workspace` with `role` (a session holds every scope).
    pub fn session(workspace: Uuid, role: Role) -> Actor {
        Actor {
            workspace,
            kind: Kind::Session { role },
        }
    }

    /// The operator acting on `workspace` (the CLI): may do everything.
    pub fn operator(workspace: Uuid) -> Actor {
        Actor {
            workspace,
            kind: Kind::Operator,
        }
    }

    /// The workspace the actor acts in.
    pub fn workspace(&self) -> Uuid {
        self.workspace
    }

    /// The actor's role; `None` for the operator.
    pub fn role(&self) -> Option<Role> {
        match &self.kind {
            Kind::Token { role, .. } | Kind::Session { role } => Some(*role),
            Kind::Operator => None,
        }
    }

    /// Whether the actor may perform `action`: [`ServiceError::Forbidden`] naming the missing
    /// scope first (`token lacks scope endpoints:write`), then the role
    /// (`role viewer cannot create endpoints`).
    pub fn may(&self, action: Action) -> Result<(), ServiceError> {
        let rule = action.rule();
        let role = match &self.kind {
            Kind::Operator => return Ok(()),
            Kind::Session { role } => *role,
            Kind::Token { role, scopes } => {
                match rule.scope {
                    None => {
                        return Err(ServiceError::Forbidden(format!(
                            "a token cannot {}: sign in to the console",
                            rule.verb
                        )));
                    }
                    Some(scope) if !scopes.contains(&scope) => {
                        return Err(ServiceError::Forbidden(format!(
                            "token lacks scope {scope}"
                        )));
                    }
                    Some(_) => {}
                }
                *role
            }
        };
        if role < rule.min_role {
            return Err(ServiceError::Forbidden(format!(
                "role {role} cannot {}",
                rule.verb
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(actor: &Actor, action: Action) -> Option<String> {
        actor.may(action).err().map(|e| e.to_string())
    }

    #[test]
    fn a_token_needs_the_scope_first_then_the_role() {
        let ws = Uuid::nil();
        let viewer = Actor::token(ws, Role::Viewer, vec![Scope::EndpointsRead]);
        assert_eq!(
            refusal(&viewer, Action::CreateEndpoints).as_deref(),
            Some("token lacks scope endpoints:write")
        );
        assert_eq!(refusal(&viewer, Action::ReadEndpoints), None);
        let viewer = Actor::token(ws, Role::Viewer, Scope::ALL.to_vec());
        assert_eq!(
            refusal(&viewer, Action::CreateEndpoints).as_deref(),
            Some("role viewer cannot create endpoints")
        );
        let member = Actor::token(ws, Role::Member, Scope::ALL.to_vec());
        assert_eq!(refusal(&member, Action::CreateEndpoints), None);
        assert_eq!(
            refusal(&member, Action::AcceptDiffs).as_deref(),
            Some("role member cannot accept diffs")
        );
        let owner = Actor::token(ws, Role::Owner, Scope::ALL.to_vec());
        assert!(
            refusal(&owner, Action::ManageTokens)
                .is_some_and(|t| t.starts_with("a token cannot manage tokens"))
        );
    }

    #[test]
    fn a_session_holds_every_scope_and_the_operator_everything() {
        let ws = Uuid::nil();
        let member = Actor::session(ws, Role::Member);
        assert_eq!(refusal(&member, Action::ProbeUrls), None);
        assert_eq!(refusal(&member, Action::RunChecks), None);
        assert_eq!(
            refusal(&member, Action::ManageTokens).as_deref(),
            Some("role member cannot manage tokens")
        );
        let operator = Actor::operator(ws);
        for action in Action::ALL {
            assert_eq!(refusal(&operator, *action), None, "{action:?}");
        }
        assert_eq!(operator.role(), None);
        assert_eq!(member.workspace(), ws);
    }

    /// Every rule is different, so a route's observed rule names exactly one action.
    #[test]
    fn rules_are_distinct() {
        for (i, a) in Action::ALL.iter().enumerate() {
            for b in &Action::ALL[i + 1..] {
                assert_ne!(a.rule(), b.rule(), "{a:?} and {b:?} have the same rule");
            }
        }
    }
}
