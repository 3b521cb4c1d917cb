//! The use cases' value types: the typed filters and pages the reads take, and the rows they hand
//! out (a stored endpoint, a console session, a webhook's kind). They are defined next to the
//! store, which fills them; a front door names them from here, so it reaches the store only
//! through the [`Service`](crate::Service). The store itself (its trait) is never handed out.

pub use apidrift_store::{
    DiffFilter, EndpointFilter, EndpointSample, EndpointSeries, FailingEndpoint, ListedEndpoint,
    NextRun, Page, PageRequest, ResponsePoint, StoredEndpoint, StoredSession, WebhookKind,
    WorkspaceOverview,
};
