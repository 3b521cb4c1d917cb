//! The console's markup, one module per page, written with [`maud`]: HTML as Rust, checked when
//! the crate compiles, every interpolated value escaped unless wrapped in `PreEscaped` (used
//! once, for the constant stylesheet; see [`layout`]).
//!
//! Each page is a `render` function from a plain view model, which the handler of its page
//! family (a sibling module of [`super::views`], e.g. [`super::tokens`]) builds from the service's
//! answers, to [`maud::Markup`]. Views see no
//! session, request, store handle or credential: only what the page shows.

pub mod chart;
pub mod confirm;
pub mod deliveries;
pub mod diff;
pub mod edit;
pub mod endpoint;
pub mod endpoints;
pub mod error;
pub mod import;
pub mod layout;
pub mod login;
pub mod overview;
pub mod probe;
pub mod tokens;
pub mod uptime;
pub mod webhooks;

pub use layout::Chrome;
