//! `apidrift diff` and `apidrift validate` (D16) driven through the real binary: exit codes, the
//! JSON output, the other formats, snapshot files, stdin and bad input.

use apidrift_e2e::{run, run_with_stdin, stderr, stdout};
use serde_json::{Value, json};
use std::path::PathBuf;

type R = Result<(), Box<dyn std::error::Error>>;

/// A scratch directory for one test, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Result<Dir, std::io::Error> {
        let dir =
            std::env::temp_dir().join(format!("apidrift-diff-e2e-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(Dir(dir))
    }
    fn file(&self, name: &str, content: &str) -> Result<String, std::io::Error> {
        let path = self.0.join(name);
        std::fs::write(&path, content)?;
        Ok(path.to_string_lossy().into_owned())
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn json_out(out: &std::process::Output) -> Result<Value, Box<dyn std::error::Error>> {
    Ok(serde_json::from_str(&stdout(out))?)
}

fn code(out: &std::process::Output) -> Option<i32> {
    out.status.code()
}

#[test]
fn json_output_has_the_d16_shape_and_exit_codes_follow_fail_on() -> R {
    let d = Dir::new("shape")?;
    let a = d.file("a.json", r#"{"id":1,"name":"a","tags":["x"],"gone":true}"#)?;
    let b = d.file("b.json", r#"{"id":"1","name":"b","tags":["x"],"extra":1}"#)?;
    let out = run(&["diff", &a, &b, "--mode", "full", "--format", "json"]);
    assert_eq!(code(&out), Some(1), "{}", stderr(&out));
    let v = json_out(&out)?;
    assert_eq!(v["breakingCount"], json!(2));
    assert_eq!(v["warningCount"], json!(0));
    assert_eq!(v["infoCount"], json!(2));
    assert_eq!(v["changeCount"], json!(4));
    let changes = v["changes"].as_array().ok_or("no changes array")?;
    let ty = &changes[0];
    assert_eq!(ty["path"], json!("$.id"));
    assert_eq!(ty["type"], json!("type_changed"));
    assert_eq!(ty["severity"], json!("breaking"));
    assert_eq!(ty["oldValue"], json!(1));
    assert_eq!(ty["newValue"], json!("1"));
    assert_eq!(ty["oldType"], json!("integer"));
    assert_eq!(ty["newType"], json!("string"));
    assert_eq!(ty["id"].as_str().map(str::len), Some(16));
    assert!(ty["message"].is_string());
    assert_eq!(changes[1]["path"], json!("$.name"));
    assert_eq!(changes[2]["path"], json!("$.gone"));
    assert_eq!(changes[2]["type"], json!("removed"));
    assert!(changes[2].get("newValue").is_none());
    assert_eq!(changes[3]["path"], json!("$.extra"));

    for (fail_on, expected) in [("breaking", 1), ("warning", 1), ("info", 1), ("never", 0)] {
        let out = run(&[
            "diff",
            &a,
            &b,
            "--mode",
            "full",
            "--format",
            "json",
            "--fail-on",
            fail_on,
        ]);
        assert_eq!(code(&out), Some(expected), "--fail-on {fail_on}");
    }
    // Only info changes: exit 0 by default, 1 with --fail-on info.
    let c = d.file(
        "c.json",
        r#"{"id":1,"name":"a","tags":["x"],"gone":true,"new":1}"#,
    )?;
    assert_eq!(code(&run(&["diff", &a, &c])), Some(0));
    assert_eq!(
        code(&run(&["diff", &a, &c, "--fail-on", "warning"])),
        Some(0)
    );
    assert_eq!(code(&run(&["diff", &a, &c, "--fail-on", "info"])), Some(1));
    // No changes.
    let out = run(&["diff", &a, &a, "--format", "json"]);
    assert_eq!(code(&out), Some(0));
    assert_eq!(
        json_out(&out)?,
        json!({"changes": [], "breakingCount": 0, "warningCount": 0, "infoCount": 0, "changeCount": 0})
    );
    Ok(())
}

#[test]
fn default_mode_is_schema_and_full_compares_values() -> R {
    let d = Dir::new("modes")?;
    let a = d.file(
        "a.json",
        r#"{"users":[{"id":1,"email":"a"},{"id":2,"email":"b"}]}"#,
    )?;
    let b = d.file(
        "b.json",
        r#"{"users":[{"id":2,"email":"B"},{"id":1,"email":"a"}]}"#,
    )?;
    let out = run(&["diff", &a, &b, "--format", "json"]);
    assert_eq!(json_out(&out)?["changeCount"], json!(0));
    let out = run(&["diff", &a, &b, "--format", "json", "--mode", "full"]);
    let v = json_out(&out)?;
    assert_eq!(v["changeCount"], json!(1));
    assert_eq!(v["changes"][0]["path"], json!("$.users[id=2].email"));
    assert_eq!(v["changes"][0]["type"], json!("changed"));
    Ok(())
}

#[test]
fn snapshot_files_compare_status_and_headers() -> R {
    let d = Dir::new("snap")?;
    let a = d.file(
        "a.json",
        r#"{"apidriftSnapshot":1,"status":200,"headers":{"content-type":"application/json; charset=utf-8"},"body":{"a":1}}"#,
    )?;
    let b = d.file(
        "b.json",
        r#"{"apidriftSnapshot":1,"status":503,"headers":{"content-type":"text/html","sunset":"x"},"body":null,"bodyText":"<h1>down</h1>"}"#,
    )?;
    let out = run(&["diff", &a, &b, "--format", "json"]);
    assert_eq!(code(&out), Some(1));
    let v = json_out(&out)?;
    let paths: Vec<&str> = v["changes"]
        .as_array()
        .ok_or("changes")?
        .iter()
        .filter_map(|c| c["path"].as_str())
        .collect();
    assert_eq!(
        paths,
        vec!["status", "headers.content-type", "headers.sunset"]
    );
    assert_eq!(v["changes"][0]["oldValue"], json!(200));
    assert_eq!(v["changes"][0]["newValue"], json!(503));
    assert_eq!(v["changes"][1]["oldValue"], json!("application/json"));
    assert_eq!(v["changes"][1]["newValue"], json!("text/html"));
    assert_eq!(v["changes"][1]["severity"], json!("breaking"));
    assert_eq!(v["changes"][2]["severity"], json!("warning"));
    // A bare body against a snapshot: status and headers are not compared.
    let bare = d.file("bare.json", r#"{"a":1}"#)?;
    assert_eq!(
        json_out(&run(&["diff", &bare, &b, "--format", "json"]))?["changeCount"],
        json!(0)
    );
    assert_eq!(
        json_out(&run(&["diff", &a, &bare, "--format", "json"]))?["changeCount"],
        json!(0)
    );
    Ok(())
}

#[test]
fn ignore_patterns_and_bad_patterns() -> R {
    let d = Dir::new("ignore")?;
    let a = d.file(
        "a.json",
        r#"{"meta":{"requestId":"1"},"items":[{"id":1,"updatedAt":"x"}],"x":{"traceId":1}}"#,
    )?;
    let b = d.file(
        "b.json",
        r#"{"meta":{"requestId":"2"},"items":[{"id":1,"updatedAt":"y"}],"x":{"traceId":2}}"#,
    )?;
    let out = run(&[
        "diff",
        &a,
        &b,
        "--mode",
        "full",
        "--format",
        "json",
        "--ignore",
        "$.meta.requestId",
        "--ignore",
        "$.items[].updatedAt",
        "--ignore",
        "$..traceId",
    ]);
    assert_eq!(json_out(&out)?["changeCount"], json!(0), "{}", stderr(&out));
    let out = run(&["diff", &a, &b, "--ignore", "meta.requestId"]);
    assert_eq!(code(&out), Some(2));
    assert!(stderr(&out).contains("invalid ignore pattern"));
    assert_eq!(stderr(&out).trim().lines().count(), 1);
    Ok(())
}

#[test]
fn stdin_as_one_input() -> R {
    let d = Dir::new("stdin")?;
    let a = d.file("a.json", r#"{"a":1}"#)?;
    let out = run_with_stdin(&["diff", &a, "-", "--format", "json"], br#"{"a":"x"}"#);
    assert_eq!(code(&out), Some(1));
    assert_eq!(json_out(&out)?["changes"][0]["path"], json!("$.a"));
    let out = run_with_stdin(&["diff", "-", &a, "--format", "json"], br#"{"a":1}"#);
    assert_eq!(code(&out), Some(0));
    let out = run_with_stdin(&["diff", "-", "-"], b"{}");
    assert_eq!(code(&out), Some(2));
    assert_eq!(stderr(&out).trim().lines().count(), 1);
    Ok(())
}

#[test]
fn bad_input_is_one_line_and_exit_2() -> R {
    let d = Dir::new("bad")?;
    let good = d.file("good.json", "{}")?;
    let broken = d.file("broken.json", "{\n  \"a\": 1,\n  \"b\": tru\n}")?;
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "diff".into(),
                good.clone(),
                d.0.join("missing.json").to_string_lossy().into_owned(),
            ],
            "missing.json",
        ),
        (
            vec!["diff".into(), good.clone(), broken.clone()],
            "line 3 column",
        ),
        (
            vec![
                "diff".into(),
                good.clone(),
                good.clone(),
                "--format".into(),
                "yaml".into(),
            ],
            "yaml",
        ),
        (
            vec![
                "diff".into(),
                good.clone(),
                good.clone(),
                "--mode".into(),
                "exact".into(),
            ],
            "exact",
        ),
        (
            vec![
                "diff".into(),
                good.clone(),
                good.clone(),
                "--fail-on".into(),
                "sometimes".into(),
            ],
            "sometimes",
        ),
        // A URL input is fetched through the safe client; a name that does not resolve (no
        // network here) is bad input, one line naming the cause.
        (
            vec![
                "diff".into(),
                "https://nonexistent.invalid/a".into(),
                good.clone(),
            ],
            "dns_failed",
        ),
        // A URL the outbound policy refuses is never fetched.
        (
            vec![
                "diff".into(),
                "http://169.254.169.254/latest".into(),
                good.clone(),
            ],
            "ssrf_blocked",
        ),
        (vec!["diff".into(), good.clone()], "CURRENT"),
    ];
    for (args, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args);
        assert_eq!(code(&out), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(stdout(&out).is_empty());
    }
    // 100,000 levels of nesting: a clear error, not a crash.
    let deep = d.file("deep.json", &("[".repeat(100_000) + &"]".repeat(100_000)))?;
    let out = run(&["diff", &deep, &good]);
    assert_eq!(code(&out), Some(2));
    assert!(
        stderr(&out).contains("nesting deeper than"),
        "{}",
        stderr(&out)
    );
    Ok(())
}

#[test]
fn exact_numbers_in_the_json_output() -> R {
    let d = Dir::new("numbers")?;
    let a = d.file(
        "a.json",
        r#"{"big":123456789012345678901234567890,"f":1.0,"g":1e3,"i":1}"#,
    )?;
    let b = d.file(
        "b.json",
        r#"{"big":123456789012345678901234567891,"f":1.00,"g":1000.0,"i":1.0}"#,
    )?;
    let out = run(&["diff", &a, &b, "--mode", "full", "--format", "json"]);
    let text = stdout(&out);
    assert!(
        text.contains("\"oldValue\":123456789012345678901234567890"),
        "{text}"
    );
    assert!(
        text.contains("\"newValue\":123456789012345678901234567891"),
        "{text}"
    );
    let v: Value = serde_json::from_str(&text)?;
    assert_eq!(v["changeCount"], json!(2));
    assert_eq!(v["changes"][1]["path"], json!("$.i"));
    assert_eq!(v["changes"][1]["severity"], json!("warning"));
    Ok(())
}

#[test]
fn text_markdown_and_github_formats() -> R {
    let d = Dir::new("formats")?;
    let a = d.file("a.json", r#"{"a":1,"b":[1],"c":"x|y"}"#)?;
    let b = d.file("b.json", r#"{"a":"1","b":[1,2],"c":"z"}"#)?;
    let out = run(&["diff", &a, &b, "--mode", "full"]);
    let text = stdout(&out);
    assert!(
        !text.contains('\x1b'),
        "no colour when stdout is not a terminal"
    );
    assert!(text.contains("BREAKING") && text.contains("$.a") && text.contains("type_changed"));
    assert!(
        text.contains("3 changes: 1 breaking, 0 warning, 2 info"),
        "{text}"
    );
    let md = stdout(&run(&[
        "diff", &a, &b, "--mode", "full", "--format", "markdown",
    ]));
    assert!(md.starts_with("### apidrift: 3 changes"), "{md}");
    assert!(md.contains("| Severity | Type | Path | Message | Old | New |"));
    assert!(md.contains("`$.a`"));
    assert!(md.contains("x\\|y"), "pipes escaped: {md}");
    let gh = stdout(&run(&[
        "diff", &a, &b, "--mode", "full", "--format", "github",
    ]));
    let lines: Vec<&str> = gh.lines().collect();
    // The annotations name the current file (D20).
    let file = b.replace(':', "%3A").replace(',', "%2C");
    assert!(
        lines[0].starts_with(&format!(
            "::error file={file},title=apidrift breaking type_changed::$.a"
        )),
        "{gh}"
    );
    assert!(lines[1].starts_with("::notice "), "{gh}");
    assert!(gh.contains("apidrift: 3 changes"));
    let none = stdout(&run(&["diff", &a, &a, "--format", "markdown"]));
    assert_eq!(none.trim(), "### apidrift: no changes");
    Ok(())
}

#[test]
fn people_formats_group_changes_and_json_stays_one_per_path() -> R {
    let d = Dir::new("groups")?;
    let a = d.file(
        "a.json",
        r#"{"users":[{"id":1,"email":"a@x.test"},{"id":2,"email":"b@x.test"},{"id":3,"email":null}],"gone":null,"who":"ada@example.com"}"#,
    )?;
    let b = d.file("b.json", r#"{"users":[{"id":1},{"id":2},{"id":3}]}"#)?;
    let out = run(&["diff", &a, &b, "--mode", "full"]);
    assert_eq!(code(&out), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        vec![
            "BREAKING  $.users[].email  removed  field removed (was a string) — 3 items: [id=1], [id=2], [id=3]",
            "BREAKING  $.gone  removed  field removed (was null)",
            "BREAKING  $.who  removed  field removed (was a string) — value \"ada@example.com\"",
            "5 changes: 5 breaking, 0 warning, 0 info",
        ]
    );
    let md = stdout(&run(&[
        "diff", &a, &b, "--mode", "full", "--format", "markdown",
    ]));
    assert!(
        md.contains(
            "| `$.users[].email` | field removed (was a string) — 3 items: [id=1], [id=2], [id=3] |"
        ),
        "{md}"
    );
    let out = run_with_stdin(
        &["diff", &a, "-", "--mode", "full", "--format", "github"],
        br#"{"users":[{"id":1},{"id":2},{"id":3}]}"#,
    );
    let gh = stdout(&out);
    // Standard input is not a file: the annotations name the baseline file.
    let file = a.replace(':', "%3A").replace(',', "%2C");
    assert!(
        gh.starts_with(&format!(
            "::error file={file},title=apidrift breaking removed::$.users[].email: field removed (was a string) — 3 items: [id=1], [id=2], [id=3]\n"
        )),
        "{gh}"
    );
    let v = json_out(&run(&[
        "diff", &a, &b, "--mode", "full", "--format", "json",
    ]))?;
    assert_eq!(v["changeCount"], json!(5));
    assert_eq!(v["changes"][0]["path"], json!("$.users[id=1].email"));
    assert_eq!(
        v["changes"][0]["message"],
        json!("field removed (was a string)")
    );
    Ok(())
}

#[test]
fn identity_keys_pair_items_and_bad_rules_exit_2() -> R {
    let d = Dir::new("identity")?;
    let a = d.file(
        "a.json",
        r#"{"commits":[{"sha":"b2","message":"two"},{"sha":"a1","message":"one"}]}"#,
    )?;
    let b = d.file(
        "b.json",
        r#"{"commits":[{"sha":"c3","message":"three"},{"sha":"b2","message":"two"},{"sha":"a1","message":"one"}]}"#,
    )?;
    // By position, one new commit at the top changes every commit.
    let v = json_out(&run(&[
        "diff", &a, &b, "--mode", "full", "--format", "json",
    ]))?;
    assert_eq!(v["changeCount"], json!(5));
    let out = run(&[
        "diff",
        &a,
        &b,
        "--mode",
        "full",
        "--format",
        "json",
        "--identity-key",
        "$.commits=sha",
        "--identity-key",
        "$..pulls=number",
    ]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    let v = json_out(&out)?;
    assert_eq!(v["changeCount"], json!(1));
    assert_eq!(v["changes"][0]["path"], json!("$.commits[sha=c3]"));
    assert_eq!(v["changes"][0]["type"], json!("added"));
    for (bad, needle) in [
        ("$.commits", "write PATTERN=KEY"),
        ("commits=sha", "starts with `$`"),
        ("$.commits=s h", "must be a member name"),
        ("status=id", "starts with `$`"),
        ("$.a b=id", "has spaces"),
    ] {
        let out = run(&["diff", &a, &b, "--mode", "full", "--identity-key", bad]);
        assert_eq!(code(&out), Some(2), "{bad}");
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{bad}: {err}");
        assert!(
            err.contains("invalid identity rule") && err.contains(needle),
            "{bad}: {err}"
        );
        assert!(stdout(&out).is_empty());
    }
    Ok(())
}

#[test]
fn severity_overrides_decide_the_exit_code() -> R {
    let d = Dir::new("severity")?;
    let a = d.file("a.json", r#"{"id":1,"email":"a@example.com"}"#)?;
    let b = d.file(
        "b.json",
        r#"{"id":1,"plan":"pro","debug":{"t":1},"email":"a@example.com"}"#,
    )?;
    let c = d.file("c.json", r#"{"id":1}"#)?;
    let diff = |x: &str, y: &str, extra: &[&str]| {
        let mut args = vec!["diff", x, y, "--format", "json"];
        args.extend_from_slice(extra);
        run(&args)
    };
    // Two fields added: info, so the default gate (breaking) passes.
    let out = diff(&a, &b, &[]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert_eq!(json_out(&out)?["infoCount"], json!(2));
    // `added` made breaking: the gate fails, and the summary counts them as breaking.
    let out = diff(&a, &b, &["--severity", "field-added=breaking"]);
    assert_eq!(code(&out), Some(1), "{}", stderr(&out));
    let v = json_out(&out)?;
    assert_eq!(
        (&v["breakingCount"], &v["infoCount"], &v["changeCount"]),
        (&json!(2), &json!(0), &json!(2))
    );
    assert_eq!(v["changes"][0]["severity"], json!("breaking"));
    // The first matching override wins: `$.debug` is hidden, `$.plan` is breaking.
    let out = diff(
        &a,
        &b,
        &[
            "--severity",
            "field-added=$.debug=ignore",
            "--severity",
            "field-added=breaking",
        ],
    );
    assert_eq!(code(&out), Some(1));
    let v = json_out(&out)?;
    assert_eq!(v["changeCount"], json!(1));
    assert_eq!(v["changes"][0]["path"], json!("$.plan"));
    // `--fail-on` reads the overridden severity too.
    let out = diff(
        &a,
        &b,
        &["--severity", "field-added=warning", "--fail-on", "warning"],
    );
    assert_eq!(code(&out), Some(1));
    let out = diff(
        &a,
        &b,
        &["--severity", "field-added=info", "--fail-on", "warning"],
    );
    assert_eq!(code(&out), Some(0));
    // A removed field is breaking; `ignore` on its path hides it, and the gate passes.
    let out = diff(&a, &c, &[]);
    assert_eq!(code(&out), Some(1));
    let out = diff(&a, &c, &["--severity", "field-removed=$.email=ignore"]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert_eq!(json_out(&out)?["changeCount"], json!(0));
    // On another path the override does not apply.
    let out = diff(&a, &c, &["--severity", "field-removed=$.name=ignore"]);
    assert_eq!(code(&out), Some(1));
    // The text format shows the overridden severity and summary.
    let out = run(&["diff", &a, &b, "--severity", "field-added=warning"]);
    assert_eq!(code(&out), Some(0));
    let text = stdout(&out);
    assert!(text.contains("WARNING") && !text.contains("INFO"), "{text}");
    assert!(text.contains("2 warning"), "{text}");
    Ok(())
}

#[test]
fn bad_severity_overrides_exit_2_naming_the_valid_ones() -> R {
    let d = Dir::new("severity-bad")?;
    let a = d.file("a.json", "{}")?;
    for (bad, needles) in [
        (
            "added=breaking",
            &[
                "unknown rule \"added\"",
                "field-added",
                "contract-violation",
            ][..],
        ),
        (
            "field-added=fatal",
            &["unknown level \"fatal\"", "info, warning, breaking, ignore"][..],
        ),
        ("field-added", &["write RULE=LEVEL or RULE=PATH=LEVEL"][..]),
        ("field-added=meta=info", &["starts with `$`"][..]),
        (
            "status-changed=$.status=info",
            &["reports changes at `status`"][..],
        ),
    ] {
        let out = run(&["diff", &a, &a, "--severity", bad]);
        assert_eq!(code(&out), Some(2), "{bad}");
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{bad}: {err}");
        assert!(err.contains("invalid severity override"), "{bad}: {err}");
        for needle in needles {
            assert!(err.contains(needle), "{bad}: {needle} not in {err}");
        }
        assert!(stdout(&out).is_empty());
    }
    Ok(())
}

#[test]
fn identity_key_dot_pairs_a_list_by_value() -> R {
    let d = Dir::new("by-value")?;
    let a = d.file("a.json", r#"{"tags":["alpha","beta","gamma"]}"#)?;
    let b = d.file("b.json", r#"{"tags":["gamma","alpha","beta"]}"#)?;
    let c = d.file("c.json", r#"{"tags":["gamma","alpha","delta"]}"#)?;
    let full = |x: &str, y: &str, extra: &[&str]| {
        let mut args = vec!["diff", x, y, "--mode", "full", "--format", "json"];
        args.extend_from_slice(extra);
        run(&args)
    };
    // By position, a reordered list is three value changes.
    assert_eq!(json_out(&full(&a, &b, &[]))?["changeCount"], json!(3));
    let out = full(&a, &b, &["--identity-key", "$.tags=.", "--fail-on", "info"]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert_eq!(json_out(&out)?["changeCount"], json!(0));
    let out = full(
        &a,
        &c,
        &["--identity-key", "$.tags=.", "--fail-on", "warning"],
    );
    assert_eq!(code(&out), Some(1));
    let v = json_out(&out)?;
    let got: Vec<(&str, &str)> = v["changes"]
        .as_array()
        .ok_or("changes")?
        .iter()
        .filter_map(|c| Some((c["path"].as_str()?, c["type"].as_str()?)))
        .collect();
    assert_eq!(
        got,
        [("$.tags[.=beta]", "removed"), ("$.tags[.=delta]", "added")]
    );
    // Schema mode pairs by value too.
    let out = run(&[
        "diff",
        &a,
        &c,
        "--format",
        "json",
        "--identity-key",
        "$.tags=.",
    ]);
    assert_eq!(json_out(&out)?["changeCount"], json!(2));
    Ok(())
}

/// `<workspace root>/tests/data/realworld` (licences there).
fn realworld() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/realworld")
}

#[test]
fn full_mode_gates_the_stripe_invoice_whose_line_items_lost_fields() -> R {
    let dir = realworld();
    let d = Dir::new("stripe")?;
    let invoice = |file: &str| -> Result<String, Box<dyn std::error::Error>> {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(file))?)?;
        Ok(doc["resources"]["invoice"].to_string())
    };
    let a = d.file(
        "invoice-2022.json",
        &invoice("stripe-fixtures3-2022-04.json")?,
    )?;
    let b = d.file("invoice-2026.json", &invoice("stripe-fixtures3-2026.json")?)?;
    for mode in ["schema", "full"] {
        let out = run(&["diff", &a, &b, "--mode", mode, "--format", "json"]);
        assert_eq!(code(&out), Some(1), "{mode}: {}", stderr(&out));
        let v = json_out(&out)?;
        let lost: Vec<&str> = v["changes"]
            .as_array()
            .ok_or("changes")?
            .iter()
            .filter(|c| c["severity"] == json!("breaking") && c["type"] == json!("removed"))
            .filter_map(|c| c["path"].as_str())
            .filter(|p| p.starts_with("$.lines.data[]."))
            .collect();
        assert_eq!(lost.len(), 7, "{mode}: {lost:?}");
        // An override on the line items' path hides exactly those seven; the rest stays.
        let out = run(&[
            "diff",
            &a,
            &b,
            "--mode",
            mode,
            "--format",
            "json",
            "--severity",
            "field-removed=$.lines.data=ignore",
        ]);
        let w = json_out(&out)?;
        let count = |v: &Value| v["changeCount"].as_u64().unwrap_or_default();
        assert_eq!(count(&w), count(&v) - 7, "{mode}");
        assert_eq!(
            w["breakingCount"].as_u64().unwrap_or_default(),
            v["breakingCount"].as_u64().unwrap_or_default() - 7,
            "{mode}"
        );
        let left = w["changes"].as_array().ok_or("changes")?;
        assert!(
            left.iter().all(|c| !(c["type"] == json!("removed")
                && c["severity"] == json!("breaking")
                && c["path"]
                    .as_str()
                    .is_some_and(|p| p.starts_with("$.lines.data")))),
            "{mode}"
        );
    }
    Ok(())
}

const SPEC: &str = r#"
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /users/{id}:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/User'}
components:
  schemas:
    User:
      type: object
      required: [id, email]
      properties:
        id: {type: integer}
        email: {type: string, nullable: true}
        roles: {type: array, items: {type: string}}
"#;

#[test]
fn validate_against_an_openapi_contract() -> R {
    let d = Dir::new("validate")?;
    let spec = d.file("openapi.yaml", SPEC)?;
    let ok = d.file("ok.json", r#"{"id":1,"email":null,"roles":["a"]}"#)?;
    let bad = d.file("bad.json", r#"{"id":"1","roles":["a",2]}"#)?;
    let out = run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        "GET /users/{id}",
        &ok,
    ]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    let out = run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        "GET /users/{id}",
        "--format",
        "json",
        &bad,
    ]);
    assert_eq!(code(&out), Some(1), "{}", stderr(&out));
    let v = json_out(&out)?;
    let mut paths: Vec<&str> = v["changes"]
        .as_array()
        .ok_or("changes")?
        .iter()
        .filter_map(|c| c["path"].as_str())
        .collect();
    paths.sort();
    assert_eq!(paths, vec!["$.email", "$.id", "$.roles[1]"]);
    assert!(v["changes"].as_array().ok_or("changes")?.iter().all(|c| c["type"] == json!("contract_violation") && c["severity"] == json!("breaking")));
    // A snapshot with another status.
    let snap = d.file(
        "snap.json",
        r#"{"apidriftSnapshot":1,"status":500,"headers":{},"body":{"id":1,"email":"a"}}"#,
    )?;
    let v = json_out(&run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        "GET /users/{id}",
        "--format",
        "json",
        &snap,
    ]))?;
    assert_eq!(v["changes"][0]["path"], json!("status"));
    // Stdin.
    let out = run_with_stdin(
        &[
            "validate",
            "--spec",
            &spec,
            "--operation",
            "GET /users/{id}",
            "-",
        ],
        br#"{"id":1,"email":"a"}"#,
    );
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    // Bad input: one line, exit 2.
    for (op, status, needle) in [
        ("GET /nope", None, "not in the document"),
        ("GET /users/{id}", Some("404"), "no response for status 404"),
        ("users", None, "METHOD /path"),
    ] {
        let mut args = vec!["validate", "--spec", &spec, "--operation", op];
        if let Some(s) = status {
            args.extend(["--status", s]);
        }
        args.push(&ok);
        let out = run(&args);
        assert_eq!(code(&out), Some(2), "{op}");
        assert_eq!(stderr(&out).trim().lines().count(), 1);
        assert!(stderr(&out).contains(needle), "{}", stderr(&out));
    }
    let out = run(&[
        "validate",
        "--spec",
        &d.0.join("nope.yaml").to_string_lossy(),
        "--operation",
        "GET /a",
        &ok,
    ]);
    assert_eq!(code(&out), Some(2));
    Ok(())
}
