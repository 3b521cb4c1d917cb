//! The endpoint page's history charts as inline SVG, server-rendered (no script): a
//! response-time chart with one point per check, and a status/drift timeline with one bar per
//! check coloured by its outcome. A pure function of the checks; every text (the tooltips) goes
//! through maud's escaping, and the only numbers written into attributes are computed here.

use super::layout::timestamp;
use maud::{Markup, html};
use time::OffsetDateTime;

/// One check as the charts draw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckPoint<'a> {
    pub at: OffsetDateTime,
    /// Milliseconds; `None` when the fetch failed.
    pub response_time: Option<u32>,
    /// The HTTP status; `None` when the fetch failed.
    pub http_status: Option<u16>,
    pub breaking_count: u32,
    pub warning_count: u32,
    /// The error kind of a failed check (shown in its tooltip).
    pub error: Option<&'a str>,
}

impl CheckPoint<'_> {
    /// The CSS class of the outcome: `failed`, `breaking`, `warning` or `healthy`.
    pub fn outcome(&self) -> &'static str {
        if self.http_status.is_none() || self.response_time.is_none() {
            "failed"
        } else if self.breaking_count > 0 {
            "breaking"
        } else if self.warning_count > 0 {
            "warning"
        } else {
            "healthy"
        }
    }

    fn label(&self) -> String {
        let status = self
            .http_status
            .map_or_else(|| "no response".to_owned(), |s| format!("HTTP {s}"));
        let ms = self
            .response_time
            .map_or_else(|| "no time".to_owned(), |ms| format!("{ms} ms"));
        let error = self.error.map(|e| format!(" ({e})")).unwrap_or_default();
        format!(
            "{}: {status}{error}, {ms}, {} breaking, {} warnings",
            timestamp(self.at),
            self.breaking_count,
            self.warning_count
        )
    }
}

const WIDTH: u32 = 600;
const HEIGHT: u32 = 160;
const PAD: u32 = 24;
const BAR_HEIGHT: u32 = 24;

/// The x position of check `i` of `n` (oldest left), inside the padding.
fn x_of(i: usize, n: usize) -> u32 {
    let inner = WIDTH - 2 * PAD;
    if n <= 1 {
        return PAD + inner / 2;
    }
    let i = u64::try_from(i).unwrap_or(0);
    let last = u64::try_from(n - 1).unwrap_or(1).max(1);
    PAD + u32::try_from(i * u64::from(inner) / last).unwrap_or(inner)
}

/// The y position of `ms` on a scale topped at `max` (top = slow), inside the padding.
fn y_of(ms: u32, max: u32) -> u32 {
    let inner = HEIGHT - 2 * PAD;
    let max = u64::from(max.max(1));
    let scaled = u64::from(ms.min(u32::try_from(max).unwrap_or(u32::MAX))) * u64::from(inner) / max;
    HEIGHT - PAD - u32::try_from(scaled).unwrap_or(inner)
}

/// Both charts for `checks` (any order; drawn oldest left). Empty: a sentence, no SVG.
pub fn history(checks: &[CheckPoint<'_>]) -> Markup {
    let mut points: Vec<CheckPoint<'_>> = checks.to_vec();
    points.sort_by_key(|p| p.at);
    let n = points.len();
    let max = points
        .iter()
        .filter_map(|p| p.response_time)
        .max()
        .unwrap_or(0);
    let line: Vec<String> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            p.response_time
                .map(|ms| format!("{},{}", x_of(i, n), y_of(ms, max)))
        })
        .collect();
    let bar_width = ((WIDTH - 2 * PAD) / u32::try_from(n.max(1)).unwrap_or(1)).clamp(2, 40);
    html! {
        @if points.is_empty() {
            p id="history-empty" { "No checks yet: the charts appear after the first check." }
        } @else {
            figure {
                svg id="response-chart" class="chart" role="img" width=(WIDTH) height=(HEIGHT)
                    viewBox={ "0 0 " (WIDTH) " " (HEIGHT) }
                    xmlns="http://www.w3.org/2000/svg"
                    aria-label={ "Response time of the last " (n) " check(s), slowest " (max) " ms" } {
                    line class="axis" x1=(PAD) y1=(HEIGHT - PAD) x2=(WIDTH - PAD) y2=(HEIGHT - PAD) stroke="#888" {}
                    text x="2" y=(PAD - 8) font-size="11" { (max) " ms" }
                    text x="2" y=(HEIGHT - PAD + 4) font-size="11" { "0 ms" }
                    (time_axis(&points))
                    @if line.len() > 1 {
                        polyline points=(line.join(" ")) fill="none" stroke="#14213d" stroke-width="2" {}
                    }
                    @for (i, p) in points.iter().enumerate() {
                        @match p.response_time {
                            Some(ms) => {
                                circle class={ "point " (p.outcome()) } cx=(x_of(i, n)) cy=(y_of(ms, max)) r="4"
                                    fill="#14213d" { title { (p.label()) } }
                            }
                            None => {
                                circle class="point failed" cx=(x_of(i, n)) cy=(HEIGHT - PAD) r="4"
                                    fill="#fff" stroke="#9b0015" stroke-width="2" { title { (p.label()) } }
                            }
                        }
                    }
                }
                figcaption { "Response time per check, oldest left; times in UTC. A hollow red point: the fetch failed." }
            }
            figure {
                svg id="status-timeline" class="chart" role="img" width=(WIDTH) height=(BAR_HEIGHT + 8)
                    viewBox={ "0 0 " (WIDTH) " " (BAR_HEIGHT + 8) }
                    xmlns="http://www.w3.org/2000/svg"
                    aria-label={ "Status and drift of the last " (n) " check(s)" } {
                    @for (i, p) in points.iter().enumerate() {
                        rect class={ "tick " (p.outcome()) } x=(x_of(i, n).saturating_sub(bar_width / 2))
                            y="4" width=(bar_width.saturating_sub(1).max(1)) height=(BAR_HEIGHT)
                            fill=(fill(p.outcome())) { title { (p.label()) } }
                    }
                }
                figcaption { "Outcome per check: green clean, amber warnings, red breaking, grey failed fetch." }
            }
        }
    }
}

/// The time labels under the response chart: up to four checks (the oldest, the newest and two
/// between), each at its point's x, as `MM-DD HH:MM` in UTC.
fn time_axis(points: &[CheckPoint<'_>]) -> Markup {
    let n = points.len();
    let last = n.saturating_sub(1);
    let mut ticks: Vec<usize> = vec![0, last / 3, 2 * last / 3, last];
    ticks.dedup();
    html! {
        g class="time-axis" font-size="10" fill="#444" {
            @for i in ticks {
                @if let Some(p) = points.get(i) {
                    line x1=(x_of(i, n)) y1=(HEIGHT - PAD) x2=(x_of(i, n)) y2=(HEIGHT - PAD + 4) stroke="#888" {}
                    text x=(x_of(i, n)) y=(HEIGHT - 4)
                        text-anchor=(if n > 1 && i == 0 { "start" } else if n > 1 && i == last { "end" } else { "middle" }) {
                        (utc_label(p.at))
                    }
                }
            }
        }
    }
}

/// `MM-DD HH:MM`, in UTC.
fn utc_label(at: OffsetDateTime) -> String {
    let t = at.to_offset(time::UtcOffset::UTC);
    format!(
        "{:02}-{:02} {:02}:{:02}",
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute()
    )
}

fn fill(outcome: &str) -> &'static str {
    match outcome {
        "breaking" => "#c8102e",
        "warning" => "#e0a800",
        "healthy" => "#2e8b57",
        _ => "#888888",
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::tests::{HOSTILE, assert_escaped};
    use super::*;

    fn at(s: i64) -> OffsetDateTime {
        OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(1_800_000_000 + s)
    }

    fn point(s: i64, ms: Option<u32>, status: Option<u16>, b: u32, w: u32) -> CheckPoint<'static> {
        CheckPoint {
            at: at(s),
            response_time: ms,
            http_status: status,
            breaking_count: b,
            warning_count: w,
            error: status.is_none().then_some("timeout"),
        }
    }

    #[test]
    fn no_checks_no_svg() {
        let html = history(&[]).into_string();
        assert!(!html.contains("<svg"));
        assert!(html.contains("No checks yet"));
    }

    #[test]
    fn one_point_sits_in_the_middle() {
        let html = history(&[point(0, Some(40), Some(200), 0, 0)]).into_string();
        assert_eq!(html.matches("<svg").count(), 2);
        assert_eq!(html.matches("<circle").count(), 1);
        assert_eq!(html.matches("<rect").count(), 1);
        assert!(!html.contains("<polyline"), "one point draws no line");
        assert!(html.contains("class=\"point healthy\" cx=\"300\" cy=\"24\""));
        assert!(html.contains("40 ms</text>"));
        assert!(html.contains("HTTP 200, 40 ms, 0 breaking, 0 warnings"));
    }

    #[test]
    fn one_point_and_one_bar_per_check_oldest_left_failures_hollow() {
        // Given newest first, as the history lists them.
        let checks = [
            point(30, Some(100), Some(200), 1, 0),
            point(20, None, None, 0, 0),
            point(10, Some(50), Some(200), 0, 2),
            point(0, Some(0), Some(200), 0, 0),
        ];
        let html = history(&checks).into_string();
        assert_eq!(html.matches("<circle").count(), 4);
        assert_eq!(html.matches("<rect").count(), 4);
        assert_eq!(html.matches("class=\"point failed\"").count(), 1);
        assert!(html.contains("no response (timeout), no time"));
        // The line joins the three timed checks, oldest (x=24) to newest (x=576).
        assert!(html.contains("points=\"24,136 208,80 576,24\""), "{html}");
        let order: Vec<usize> = [
            "tick healthy",
            "tick warning",
            "tick failed",
            "tick breaking",
        ]
        .iter()
        .map(|c| html.find(c).unwrap_or(usize::MAX))
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        assert!(order.iter().all(|i| *i != usize::MAX));
    }

    #[test]
    fn the_time_axis_labels_checks_in_utc() {
        // 1_800_000_000 s is 2027-01-15 08:00:00 UTC.
        let checks: Vec<CheckPoint<'static>> = (0..7)
            .map(|i| point(i * 600, Some(10), Some(200), 0, 0))
            .collect();
        let html = history(&checks).into_string();
        let labels: Vec<&str> = html
            .match_indices("text-anchor=")
            .filter_map(|(i, _)| html[i..].split('>').nth(1))
            .filter_map(|t| t.split('<').next())
            .collect();
        assert_eq!(
            labels,
            vec!["01-15 08:00", "01-15 08:20", "01-15 08:40", "01-15 09:00"],
            "{html}"
        );
        assert!(
            html.contains("x=\"24\" y=\"156\" text-anchor=\"start\""),
            "{html}"
        );
        assert!(
            html.contains("x=\"576\" y=\"156\" text-anchor=\"end\""),
            "{html}"
        );
        assert!(html.contains("times in UTC"));
        let one = history(&[point(0, Some(1), Some(200), 0, 0)]).into_string();
        assert_eq!(one.matches("text-anchor=\"middle\"").count(), 1);
    }

    #[test]
    fn extreme_values_stay_inside_the_chart() {
        let html = history(&[
            point(0, Some(u32::MAX), Some(599), u32::MAX, u32::MAX),
            point(1, Some(0), Some(100), 0, 0),
        ])
        .into_string();
        assert!(html.contains("cx=\"24\" cy=\"24\""), "{html}");
        assert!(html.contains("cx=\"576\" cy=\"136\""), "{html}");
    }

    #[test]
    fn hostile_values_cannot_inject_markup() {
        let mut failed = point(0, None, None, 0, 0);
        failed.error = Some(HOSTILE);
        let chart = history(&[failed, point(1, Some(1), Some(200), 0, 0)]).into_string();
        assert_escaped(&chart);
        // Every element is one the chart writes.
        let allowed = [
            "<figure",
            "</figure",
            "<svg",
            "</svg",
            "<line",
            "</line",
            "<text",
            "</text",
            "<circle",
            "</circle",
            "<title",
            "</title",
            "<rect",
            "</rect",
            "<figcaption",
            "</figcaption",
            "<polyline",
            "</polyline",
            "<g",
            "</g",
            "<p",
            "</p",
        ];
        for (i, _) in chart.match_indices('<') {
            let rest = &chart[i..];
            assert!(allowed.iter().any(|a| rest.starts_with(a)), "{rest}");
        }
    }
}
