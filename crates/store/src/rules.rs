//! The business rules behind what an adapter writes, written once so the two backends cannot
//! disagree. Adapters read and write rows; when a write depends on a rule (how many endpoints fit
//! the plan, which health a check gives, whether an accept resets health, how an update merges,
//! which health a run's `checking` mark keeps and gives back, whether a schedule row resets), the
//! value comes from these pure functions, called by the adapter or by the generic steps of
//! [`crate::run`]. [`crate::plan_alerts`] (D11) is the same kind of rule for alerts.

use crate::{
    DiffCounts, NewDiff, OpenDiff, UptimeCounts, WindowCounts, Workspace, WorkspaceUpdate,
};
use apidrift_model::{Cadence, Health, Uptime};
use time::OffsetDateTime;
use uuid::Uuid;

/// D6: how many of `requested` new endpoints fit a workspace that holds `existing` under its
/// plan's `limit` (`None` = unlimited). The first ones that fit are created, the rest skipped.
pub fn endpoints_that_fit(limit: Option<u32>, existing: u64, requested: usize) -> usize {
    match limit {
        None => requested,
        Some(limit) => {
            let room = u64::from(limit).saturating_sub(existing);
            requested.min(usize::try_from(room).unwrap_or(usize::MAX))
        }
    }
}

/// D26: an endpoint's uptime from its [`UptimeCounts`]: per window the share of its checks that
/// were up, `None` for a window without checks.
pub fn uptime(counts: &UptimeCounts) -> Uptime {
    fn share(w: WindowCounts) -> Option<f64> {
        // Check counts stay far below 2^52, where the conversion would round.
        #[allow(clippy::cast_precision_loss)]
        (w.checks > 0).then(|| w.up.min(w.checks) as f64 / w.checks as f64)
    }
    Uptime {
        day: share(counts.day),
        week: share(counts.week),
        month: share(counts.month),
    }
}

/// Whether a check counts as up for [`uptime`] (and as a response time for the `slow` rule): a
/// response arrived, with a status below 500.
pub fn is_up(http_status: Option<u16>) -> bool {
    http_status.is_some_and(|s| s < 500)
}

/// D7: the severity counts of a check (zero without a diff) and the health they give the
/// endpoint: `breaking` with a breaking change, else `warning` with a warning, else `healthy`.
pub fn check_figures(diff: Option<&NewDiff>) -> (DiffCounts, Health) {
    let counts = diff.map(|d| DiffCounts::of(&d.changes)).unwrap_or_default();
    (counts, counts.health())
}

/// D26: whether a check's `diff` is the drift of the endpoint's `open` diff (the same
/// fingerprint against the same baseline), so the check is linked to it instead of writing a
/// diff. A diff without a fingerprint (one written before fingerprints were stored) joins
/// nothing.
pub fn joins_open_diff(open: &OpenDiff, diff: &NewDiff) -> bool {
    open.fingerprint.is_some()
        && open.fingerprint == diff.fingerprint
        && open.baseline_id == diff.baseline_id
}

/// D12: accepting a diff sets the endpoint `healthy` only when that diff is the endpoint's
/// latest; `None` leaves the health alone.
pub fn health_after_accept(latest: Option<Uuid>, accepted: Uuid) -> Option<Health> {
    (latest == Some(accepted)).then_some(Health::Healthy)
}

/// D12: the endpoint's current figures after accepting its latest diff: the accepted response
/// is the baseline now, so nothing drifts from it (zero breaking, zero warnings) and the health
/// is `healthy`. `None` (an older diff) leaves the figures of the latest check alone.
pub fn figures_after_accept(latest: Option<Uuid>, accepted: Uuid) -> Option<(DiffCounts, Health)> {
    health_after_accept(latest, accepted).map(|h| (DiffCounts::default(), h))
}

/// D19: the health an endpoint keeps to come back to when a run marks it `checking`: its
/// health, or, when it is `checking` already (a second mark), the one the first mark kept.
pub fn prior_for_mark(health: Health, prior: Option<Health>) -> Option<Health> {
    if health == Health::Checking {
        prior
    } else {
        Some(health)
    }
}

/// D19: the health an endpoint gets back when the run that marked it records nothing (or
/// outlives its mark): the one kept before the mark, `unknown` when none was.
pub fn health_after_mark(prior: Option<Health>) -> Health {
    prior.unwrap_or(Health::Unknown)
}

/// D19: whether changing an endpoint's schedule from `before` to `after` resets its schedule
/// row (the scheduler then creates it again, due by the new cadence).
pub fn resets_schedule(before: Option<Cadence>, after: Option<Cadence>) -> bool {
    before != after
}

/// D25: the next run an endpoint shows (`nextRunAt`): its schedule row's due time `due`, but
/// none when the endpoint asks for no schedule (a row the scheduler has yet to remove) or is
/// paused (scheduled runs skip it, so no run is coming).
pub fn visible_next_run(
    scheduled: bool,
    paused: bool,
    due: Option<OffsetDateTime>,
) -> Option<OffsetDateTime> {
    due.filter(|_| scheduled && !paused)
}

/// A workspace with the fields of `update` that are `Some` applied and its version one more;
/// [`StoreError::Changed`](crate::StoreError::Changed) when `update` expects another version.
pub fn apply_update(
    current: Workspace,
    update: &WorkspaceUpdate,
) -> Result<Workspace, crate::StoreError> {
    if update
        .expected_version
        .is_some_and(|v| v != current.version)
    {
        return Err(crate::StoreError::Changed);
    }
    Ok(Workspace {
        name: update.name.clone().unwrap_or(current.name),
        plan: update.plan.unwrap_or(current.plan),
        endpoint_limit: update.endpoint_limit.unwrap_or(current.endpoint_limit),
        check_quota: update.check_quota.unwrap_or(current.check_quota),
        severity_overrides: update
            .severity_overrides
            .clone()
            .unwrap_or(current.severity_overrides),
        version: current.version + 1,
        ..current
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use apidrift_model::{ChangeType, DiffChange, Frequency, Plan, Severity};

    #[test]
    fn next_run_shows_only_for_a_scheduled_running_endpoint() {
        let due = Some(OffsetDateTime::UNIX_EPOCH);
        assert_eq!(visible_next_run(true, false, due), due);
        assert_eq!(visible_next_run(true, true, due), None);
        assert_eq!(visible_next_run(false, false, due), None);
        assert_eq!(visible_next_run(true, false, None), None);
    }

    #[test]
    fn plan_limit_fit() {
        assert_eq!(endpoints_that_fit(None, 1_000, 7), 7);
        assert_eq!(endpoints_that_fit(Some(5), 3, 7), 2);
        assert_eq!(endpoints_that_fit(Some(5), 5, 1), 0);
        assert_eq!(
            endpoints_that_fit(Some(5), 9, 1),
            0,
            "over the limit already"
        );
        assert_eq!(endpoints_that_fit(Some(5), 0, 3), 3);
    }

    fn diff(severities: &[Severity]) -> NewDiff {
        NewDiff {
            id: Uuid::nil(),
            baseline_id: None,
            changes: severities
                .iter()
                .map(|s| DiffChange {
                    id: "c".into(),
                    path: "$".into(),
                    change_type: ChangeType::TypeChanged,
                    severity: *s,
                    message: String::new(),
                    old_value: None,
                    new_value: None,
                    old_type: None,
                    new_type: None,
                })
                .collect(),
            summary: None,
            created_at: OffsetDateTime::UNIX_EPOCH,
            fingerprint: Some("f".into()),
        }
    }

    #[test]
    fn only_the_same_stored_fingerprint_joins_the_open_diff() {
        let open = |fp: Option<&str>| OpenDiff {
            id: Uuid::nil(),
            baseline_id: None,
            fingerprint: fp.map(str::to_owned),
        };
        let with = |fp: Option<&str>| NewDiff {
            fingerprint: fp.map(str::to_owned),
            ..diff(&[Severity::Info])
        };
        assert!(joins_open_diff(&open(Some("a")), &with(Some("a"))));
        assert!(!joins_open_diff(&open(Some("a")), &with(Some("b"))));
        assert!(
            !joins_open_diff(&open(None), &with(None)),
            "unknown fingerprints"
        );
        assert!(!joins_open_diff(&open(None), &with(Some("a"))));
        let rebased = NewDiff {
            baseline_id: Some(Uuid::max()),
            ..with(Some("a"))
        };
        assert!(
            !joins_open_diff(&open(Some("a")), &rebased),
            "another baseline"
        );
    }

    #[test]
    fn health_from_counts() {
        assert_eq!(check_figures(None).1, Health::Healthy);
        assert_eq!(
            check_figures(Some(&diff(&[Severity::Info]))).1,
            Health::Healthy
        );
        let (counts, health) = check_figures(Some(&diff(&[Severity::Info, Severity::Warning])));
        assert_eq!(
            (counts.changes, counts.warning, health),
            (2, 1, Health::Warning)
        );
        let mixed = diff(&[Severity::Warning, Severity::Breaking]);
        assert_eq!(check_figures(Some(&mixed)).1, Health::Breaking);
    }

    #[test]
    fn accept_zeroes_the_figures_of_the_latest_only() {
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        assert_eq!(
            figures_after_accept(Some(a), a),
            Some((DiffCounts::default(), Health::Healthy))
        );
        assert_eq!(figures_after_accept(Some(b), a), None);
        assert_eq!(figures_after_accept(None, a), None);
    }

    #[test]
    fn accept_resets_only_the_latest() {
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        assert_eq!(health_after_accept(Some(a), a), Some(Health::Healthy));
        assert_eq!(health_after_accept(Some(b), a), None);
        assert_eq!(health_after_accept(None, a), None);
    }

    #[test]
    fn marks_keep_the_first_health_and_restore_it() {
        assert_eq!(
            prior_for_mark(Health::Breaking, None),
            Some(Health::Breaking)
        );
        assert_eq!(
            prior_for_mark(Health::Checking, Some(Health::Warning)),
            Some(Health::Warning),
            "a second mark keeps the first one's health"
        );
        assert_eq!(prior_for_mark(Health::Checking, None), None);
        assert_eq!(health_after_mark(Some(Health::Healthy)), Health::Healthy);
        assert_eq!(health_after_mark(None), Health::Unknown);
    }

    #[test]
    fn only_a_changed_schedule_resets_its_row() {
        let (hourly, daily) = (
            Cadence::Every(Frequency::Hourly),
            Cadence::Every(Frequency::Daily),
        );
        assert!(!resets_schedule(Some(hourly), Some(hourly)));
        assert!(resets_schedule(Some(hourly), Some(daily)));
        assert!(resets_schedule(
            Some(hourly),
            Some(Cadence::Interval(3_600))
        ));
        assert!(resets_schedule(Some(hourly), None));
        assert!(resets_schedule(None, Some(daily)));
        assert!(!resets_schedule(None, None));
    }

    #[test]
    fn updates_merge_the_given_fields() {
        let current = Workspace {
            id: Uuid::from_u128(1),
            name: "a".into(),
            plan: Plan::Free,
            endpoint_limit: Some(3),
            check_quota: Some(100),
            created_at: OffsetDateTime::UNIX_EPOCH,
            severity_overrides: Vec::new(),
            version: 4,
        };
        let update = WorkspaceUpdate {
            plan: Some(Plan::Pro),
            endpoint_limit: Some(None),
            ..WorkspaceUpdate::default()
        };
        let next = apply_update(current.clone(), &update);
        let next = next.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((next.name.as_str(), next.plan), ("a", Plan::Pro));
        assert_eq!((next.endpoint_limit, next.check_quota), (None, Some(100)));
        assert_eq!((next.id, next.version), (current.id, 5));
        let stale = WorkspaceUpdate {
            expected_version: Some(3),
            ..update.clone()
        };
        assert!(matches!(
            apply_update(current.clone(), &stale),
            Err(crate::StoreError::Changed)
        ));
        let fresh = WorkspaceUpdate {
            expected_version: Some(4),
            ..update
        };
        assert!(apply_update(current, &fresh).is_ok());
    }
}
