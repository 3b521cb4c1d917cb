//! The endpoint list's uptime cell and response-time sparkline (D26), as helpers the list calls
//! per row: the uptime of the last 24 hours with the three windows on hover, and an inline SVG
//! line of the last response times (no script; gaps where a check got no response).

use apidrift_model::Uptime;
use maud::{Markup, html};

/// How many response times a sparkline shows.
pub const SPARK_POINTS: u32 = 30;

const SPARK_WIDTH: u32 = 90;
const SPARK_HEIGHT: u32 = 20;

/// A share as a percentage with one decimal (`99.5%`), or a dash for a window without checks.
pub fn percent(share: Option<f64>) -> String {
    share.map_or_else(|| "—".to_owned(), |s| format!("{:.1}%", s * 100.0))
}

/// The uptime cell: the last 24 hours, the week and the month in its tooltip.
pub fn uptime_cell(uptime: Option<&Uptime>) -> Markup {
    let u = uptime.copied().unwrap_or_default();
    let all = format!(
        "24 h {} · 7 days {} · 30 days {}",
        percent(u.day),
        percent(u.week),
        percent(u.month)
    );
    html! {
        span class="uptime" title=(all) aria-label={ "Uptime " (all) } { (percent(u.day)) }
    }
}

/// The sparkline of `times` (oldest first; `None`: no response), scaled to the slowest. Fewer
/// than two timed points draw nothing.
pub fn sparkline(times: &[Option<u32>]) -> Markup {
    let n = times.len();
    let max = times.iter().flatten().copied().max().unwrap_or(0).max(1);
    let x = |i: usize| -> u32 {
        let last = u64::try_from(n.saturating_sub(1)).unwrap_or(1).max(1);
        let i = u64::try_from(i).unwrap_or(0);
        u32::try_from(i * u64::from(SPARK_WIDTH - 2) / last).unwrap_or(0) + 1
    };
    let y = |ms: u32| -> u32 {
        let inner = u64::from(SPARK_HEIGHT - 2);
        let scaled = u64::from(ms.min(max)) * inner / u64::from(max);
        SPARK_HEIGHT - 1 - u32::try_from(scaled).unwrap_or(0)
    };
    // One polyline per run of timed checks: a failed fetch breaks the line.
    let mut runs: Vec<Vec<String>> = vec![Vec::new()];
    for (i, t) in times.iter().enumerate() {
        match t {
            Some(ms) => {
                if let Some(run) = runs.last_mut() {
                    run.push(format!("{},{}", x(i), y(*ms)));
                }
            }
            None => runs.push(Vec::new()),
        }
    }
    let timed = times.iter().flatten().count();
    let failed = n - timed;
    html! {
        @if timed >= 2 {
            svg class="spark" role="img" width=(SPARK_WIDTH) height=(SPARK_HEIGHT)
                style="vertical-align: middle; margin-left: 0.5em"
                viewBox={ "0 0 " (SPARK_WIDTH) " " (SPARK_HEIGHT) }
                xmlns="http://www.w3.org/2000/svg"
                aria-label={ "Last " (n) " response times, slowest " (max) " ms"
                    @if failed > 0 { ", " (failed) " without a response" } } {
                @for run in runs.iter().filter(|r| r.len() > 1) {
                    polyline points=(run.join(" ")) fill="none" stroke="#14213d" stroke-width="1.5" {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_and_dashes() {
        assert_eq!(percent(Some(0.75)), "75.0%");
        assert_eq!(percent(Some(1.0)), "100.0%");
        assert_eq!(percent(Some(2.0 / 3.0)), "66.7%");
        assert_eq!(percent(None), "—");
        let cell = uptime_cell(Some(&Uptime {
            day: Some(0.75),
            week: Some(0.5),
            month: None,
        }))
        .into_string();
        assert!(cell.contains(">75.0%</span>"), "{cell}");
        assert!(cell.contains("title=\"24 h 75.0% · 7 days 50.0% · 30 days —\""));
        assert!(uptime_cell(None).into_string().contains(">—</span>"));
    }

    #[test]
    fn sparkline_scales_to_the_slowest_and_breaks_at_failures() {
        let html = sparkline(&[Some(10), Some(20), None, Some(20), Some(5)]).into_string();
        // x: 1, 23, 45, 67, 89; y: 20 ms at the top (1), 10 ms halfway (10).
        assert!(html.contains("points=\"1,10 23,1\""), "{html}");
        assert!(html.contains("points=\"67,1 89,15\""), "{html}");
        assert!(html.contains("Last 5 response times, slowest 20 ms, 1 without a response"));
        assert_eq!(html.matches("<polyline").count(), 2);
        // Nothing to draw: no svg.
        assert_eq!(sparkline(&[Some(3)]).into_string(), "");
        assert_eq!(sparkline(&[None, None]).into_string(), "");
        assert_eq!(sparkline(&[]).into_string(), "");
        // Extremes stay inside.
        let html = sparkline(&[Some(u32::MAX), Some(0)]).into_string();
        assert!(html.contains("points=\"1,1 89,19\""), "{html}");
    }
}
