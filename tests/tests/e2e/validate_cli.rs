//! `apidrift validate` at scale (D16, D21) through the real binary: several responses in one
//! call, the media type from `--media-type` or the snapshot's content type, the refusals, and a
//! real publisher's document (`tests/data/realworld`).

use apidrift_e2e::{run, stderr, stdout};
use serde_json::{Value, json};
use std::path::PathBuf;

type R = Result<(), Box<dyn std::error::Error>>;

/// A scratch directory for one test, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Result<Dir, std::io::Error> {
        let dir = std::env::temp_dir().join(format!(
            "apidrift-validate-e2e-{}-{name}",
            std::process::id()
        ));
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

fn code(out: &std::process::Output) -> Option<i32> {
    out.status.code()
}

/// A 3.0 document: two JSON media types for one response, nullable beside `$ref`, `anyOf` and
/// `allOf`, an operation whose schema is in another file.
const SPEC: &str = r##"
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /repos/{owner}/{repo}/stargazers:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: array, items: {$ref: '#/components/schemas/User'}}
            application/vnd.github.v3.star+json:
              schema: {type: array, items: {$ref: '#/components/schemas/Stargazer'}}
  /remote:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: 'common.yaml#/components/schemas/Thing'}
components:
  schemas:
    User:
      type: object
      required: [login, id, template]
      properties:
        login: {type: string}
        id: {type: integer}
        template: {$ref: '#/components/schemas/Repo', nullable: true}
        plan: {nullable: true, anyOf: [{type: string}, {$ref: '#/components/schemas/Repo'}]}
    Repo:
      type: object
      required: [id]
      properties: {id: {type: integer}}
    Stargazer:
      type: object
      required: [starred_at, user]
      properties:
        starred_at: {type: string}
        user: {nullable: true, allOf: [{$ref: '#/components/schemas/User'}]}
"##;

const OP: &str = "GET /repos/{owner}/{repo}/stargazers";

#[test]
fn several_responses_one_call_each_reported() -> R {
    let d = Dir::new("several")?;
    let spec = d.file("openapi.yaml", SPEC)?;
    let ok = d.file(
        "ok.json",
        r#"[{"login":"a","id":1,"template":null,"plan":null},{"login":"b","id":2,"template":{"id":3},"plan":"free"}]"#,
    )?;
    let bad = d.file(
        "bad.json",
        r#"[{"login":"a","id":"1","template":null},{"login":"b","id":2,"template":{"id":"x"},"plan":7}]"#,
    )?;
    // All valid: exit 0, each named, one summary line.
    let out = run(&["validate", "--spec", &spec, "--operation", OP, &ok, &ok]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.matches("ok.json:").count(), 2, "{text}");
    assert!(
        text.contains(
            "2 responses checked against GET /repos/{owner}/{repo}/stargazers: 0 failing"
        ),
        "{text}"
    );
    // One violates: exit 1, violations at their paths.
    let out = run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        OP,
        "--format",
        "json",
        &ok,
        &bad,
    ]);
    assert_eq!(code(&out), Some(1), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out))?;
    let responses = v["responses"].as_array().ok_or("responses")?;
    assert_eq!(responses.len(), 2);
    assert_eq!(responses[0]["changeCount"], json!(0));
    assert_eq!(responses[0]["mediaType"], json!("application/json"));
    assert!(
        responses[1]["response"]
            .as_str()
            .is_some_and(|r| r.ends_with("bad.json"))
    );
    let paths: Vec<&str> = responses[1]["changes"]
        .as_array()
        .ok_or("changes")?
        .iter()
        .filter_map(|c| c["path"].as_str())
        .collect();
    assert_eq!(paths, vec!["$[0].id", "$[1].plan", "$[1].template.id"]);
    let plan = &responses[1]["changes"][1];
    assert_eq!(
        plan["message"],
        json!("expected string, object or null, got integer")
    );
    assert_eq!(plan["newValue"], json!(7));
    assert_eq!(v["breakingCount"], json!(3));
    assert_eq!(v["changeCount"], json!(3));
    assert_eq!(v["operation"], json!(OP));
    // One response alone keeps the single-report document.
    let out = run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        OP,
        "--format",
        "json",
        &bad,
    ]);
    assert_eq!(code(&out), Some(1));
    let v: Value = serde_json::from_str(&stdout(&out))?;
    assert_eq!(v["changeCount"], json!(3));
    assert!(v.get("responses").is_none());
    // Markdown: a heading per response.
    let out = run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        OP,
        "--format",
        "markdown",
        &ok,
        &bad,
    ]);
    assert_eq!(code(&out), Some(1));
    assert!(stdout(&out).contains("#### "), "{}", stdout(&out));
    Ok(())
}

#[test]
fn the_media_type_comes_from_the_flag_or_the_snapshot() -> R {
    let d = Dir::new("media")?;
    let spec = d.file("openapi.yaml", SPEC)?;
    let stars = r#"[{"starred_at":"2020-01-01T00:00:00Z","user":null},{"starred_at":"2021-01-01T00:00:00Z","user":{"login":"a","id":1,"template":null}}]"#;
    let bare = d.file("stars.json", stars)?;
    let snapshot = d.file(
        "stars-snapshot.json",
        &format!(
            r#"{{"apidriftSnapshot":1,"status":200,"headers":{{"content-type":"application/vnd.github.v3.star+json; charset=utf-8"}},"body":{stars}}}"#
        ),
    )?;
    // Checked against application/json, stars are wrong everywhere.
    let out = run(&["validate", "--spec", &spec, "--operation", OP, &bare]);
    assert_eq!(code(&out), Some(1), "{}", stdout(&out));
    // The flag picks the star schema.
    let out = run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        OP,
        "--media-type",
        "application/vnd.github.v3.star+json",
        &bare,
    ]);
    assert_eq!(code(&out), Some(0), "{}{}", stdout(&out), stderr(&out));
    // So does the snapshot's content type; a bare file next to it still uses application/json.
    let out = run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        OP,
        "--format",
        "json",
        &snapshot,
        &bare,
    ]);
    assert_eq!(code(&out), Some(1));
    let v: Value = serde_json::from_str(&stdout(&out))?;
    assert_eq!(
        v["responses"][0]["mediaType"],
        json!("application/vnd.github.v3.star+json")
    );
    assert_eq!(v["responses"][0]["changeCount"], json!(0));
    assert_eq!(v["responses"][1]["mediaType"], json!("application/json"));
    assert!(
        v["responses"][1]["changeCount"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    // A media type the response does not have: bad input, with what to pass.
    let out = run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        "GET /remote",
        "--status",
        "200",
        &bare,
    ]);
    assert_eq!(code(&out), Some(2));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("common.yaml#/components/schemas/Thing")
            && err.contains("bundle the document first"),
        "{err}"
    );
    assert!(!err.contains("2xx"), "{err}");
    Ok(())
}

#[test]
fn bad_input_checks_nothing_and_says_what_to_do() -> R {
    let d = Dir::new("bad")?;
    let spec = d.file("openapi.yaml", SPEC)?;
    let ok = d.file("ok.json", r#"[]"#)?;
    let broken = d.file("broken.json", r#"[{"login": "#)?;
    let missing = d.0.join("missing.json").to_string_lossy().into_owned();
    for (args, needle) in [
        (vec![ok.as_str(), broken.as_str()], "broken.json"),
        (vec![ok.as_str(), missing.as_str()], "no such file"),
        (vec!["-", "-"], "standard input"),
    ] {
        let mut all = vec!["validate", "--spec", spec.as_str(), "--operation", OP];
        all.extend(args);
        let out = run(&all);
        assert_eq!(code(&out), Some(2), "{needle}");
        assert!(stdout(&out).is_empty(), "{}", stdout(&out));
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
    }
    let out = run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        OP,
        "--media-type",
        "application/xml",
        &ok,
    ]);
    // application/xml falls back to application/json (the third rule), so this is valid.
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    let only_star = d.file(
        "star-only.yaml",
        r#"{"openapi":"3.0.0","paths":{"/s":{"get":{"responses":{"200":{"content":{"application/vnd.x.star+json":{"schema":{"type":"array"}}}}}}}}}"#,
    )?;
    let out = run(&[
        "validate",
        "--spec",
        &only_star,
        "--operation",
        "GET /s",
        "--media-type",
        "application/hal+json",
        &ok,
    ]);
    assert_eq!(code(&out), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no media type matching application/hal+json")
            && err.contains("pass one of those"),
        "{err}"
    );
    let out = run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        "POST /repos/{owner}/{repo}/stargazers",
        &ok,
    ]);
    assert_eq!(code(&out), Some(2));
    assert!(
        stderr(&out).contains("has GET; pass one of them"),
        "{}",
        stderr(&out)
    );
    Ok(())
}

/// Stripe's charge and customer fixtures against Stripe's own description, several per call.
#[test]
fn stripe_fixtures_validate_against_stripes_document() -> R {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/realworld");
    let d = Dir::new("stripe")?;
    let fixtures: Value =
        serde_json::from_slice(&std::fs::read(dir.join("stripe-fixtures3-2022-04.json"))?)?;
    let charge = fixtures["resources"]["charge"].clone();
    let good = d.file("charge.json", &charge.to_string())?;
    let snapshot = d.file(
        "charge-snapshot.json",
        &json!({"apidriftSnapshot": 1, "status": 200, "headers": {"content-type": "application/json"}, "body": charge}).to_string(),
    )?;
    let mut broken = charge.clone();
    broken["amount"] = json!("100");
    let broken = d.file("broken.json", &broken.to_string())?;
    let spec = dir
        .join("stripe-spec3-2022-04.json")
        .to_string_lossy()
        .into_owned();
    let op = "GET /v1/charges/{charge}";
    let out = run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        op,
        &good,
        &snapshot,
    ]);
    assert_eq!(code(&out), Some(0), "{}{}", stdout(&out), stderr(&out));
    let out = run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        op,
        "--format",
        "json",
        &good,
        &broken,
    ]);
    assert_eq!(code(&out), Some(1));
    let v: Value = serde_json::from_str(&stdout(&out))?;
    assert_eq!(v["responses"][1]["changes"][0]["path"], json!("$.amount"));
    assert_eq!(v["changeCount"], json!(1));
    Ok(())
}

/// A multi-file document (a root, an operation in a file of its own, two schema files that refer
/// to each other) is read from disk by `validate`; the same operation over standard input, where
/// no other file can be read, is refused naming the reference.
#[test]
fn multi_file_documents_are_read_from_disk() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let api = dir.path().join("api");
    std::fs::create_dir_all(api.join("schemas"))?;
    std::fs::write(
        api.join("root.yaml"),
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /account:\n    get: {$ref: 'ops/account_get.yml'}\n",
    )?;
    std::fs::create_dir_all(api.join("ops"))?;
    std::fs::write(
        api.join("ops/account_get.yml"),
        "responses:\n  '200':\n    description: ok\n    content:\n      application/json:\n        schema: {$ref: '../schemas/account.yaml'}\n",
    )?;
    std::fs::write(
        api.join("schemas/account.yaml"),
        "type: object\nrequired: [id]\nproperties:\n  id: {type: string}\n  owner: {$ref: 'owner.yaml'}\n",
    )?;
    std::fs::write(
        api.join("schemas/owner.yaml"),
        "type: object\nnullable: true\nproperties:\n  account: {$ref: 'account.yaml'}\n",
    )?;
    let good = dir.path().join("good.json");
    std::fs::write(
        &good,
        r#"{"id": "a", "owner": {"account": {"id": "b", "owner": null}}}"#,
    )?;
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"id": "a", "owner": {"account": {"id": 7}}}"#)?;
    let root = api.join("root.yaml");
    let spec = root.to_string_lossy();
    let out = run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        "GET /account",
        &good.to_string_lossy(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let out = run(&[
        "validate",
        "--spec",
        &spec,
        "--operation",
        "GET /account",
        &bad.to_string_lossy(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("$.owner.account.id"),
        "{}",
        stdout(&out)
    );

    let text = std::fs::read(&root)?;
    let out = apidrift_e2e::run_with_stdin(
        &[
            "validate",
            "--spec",
            "-",
            "--operation",
            "GET /account",
            &good.to_string_lossy(),
        ],
        &text,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ops/account_get.yml") && stderr(&out).contains("bundle"),
        "{}",
        stderr(&out)
    );
    Ok(())
}
