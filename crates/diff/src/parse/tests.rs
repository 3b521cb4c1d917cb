//! The parser's tests: exact documents, errors with their line and column, and the differential
//! tests that hold the fast parser to the reference one on every input.

use super::*;

#[test]
fn parses_documents_exactly() -> Result<(), ParseError> {
    let doc = parse(
        r#" {"a": [1, 1.0, 1e3, -0, 123456789012345678901234567890], "b\n": "x\u00e9\ud83d\ude00", "c": null, "d": true} "#,
    )?;
    let Json::Object(m) = doc else {
        panic!("not an object")
    };
    assert_eq!(m.len(), 4);
    assert_eq!(
        m[0].1,
        Json::Array(Box::new([
            Json::Number("1"),
            Json::Number("1.0"),
            Json::Number("1e3"),
            Json::Number("-0"),
            Json::Number("123456789012345678901234567890"),
        ]))
    );
    assert_eq!(m[1].0, "b\n");
    assert_eq!(m[1].1, Json::String("xé😀".into()));
    Ok(())
}

#[test]
fn documents_are_compact() {
    assert!(std::mem::size_of::<Json<'_>>() <= 24);
}

#[test]
fn duplicate_keys_keep_the_last_value() -> Result<(), ParseError> {
    assert_eq!(
        parse(r#"{"a":1,"b":2,"a":3}"#)?,
        Json::Object(Box::new([
            ("a".into(), Json::Number("3")),
            ("b".into(), Json::Number("2"))
        ]))
    );
    let many: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
    let text = format!("{{{},\"k3\":\"last\"}}", many.join(","));
    let Json::Object(m) = parse(&text)? else {
        panic!("not an object")
    };
    assert_eq!(m.len(), 40);
    assert_eq!(m[3].1, Json::String("last".into()));
    Ok(())
}

#[test]
fn errors_name_line_and_column() {
    let e = parse("{\n  \"a\": tru\n}").err();
    assert_eq!(e.as_ref().map(|e| (e.line, e.column)), Some((2, 8)));
    assert_eq!(parse("").err().map(|e| e.line), Some(1));
    for bad in [
        "[1,]",
        "{\"a\" 1}",
        "01",
        "1.",
        "1e",
        "-",
        "\"\\x\"",
        "\"a",
        "[1 2]",
        "{} x",
        "\"\\ud800\"",
        "\"a\u{1}\"",
        "nul",
        "{\"a\":1,}",
    ] {
        assert!(parse(bad).is_err(), "{bad:?} must be rejected");
    }
}

#[test]
fn deep_nesting_is_a_clear_error_not_a_crash() {
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    let e = parse(&deep).err();
    assert!(e.is_some_and(|e| e.message.contains("nesting deeper than")));
    let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    assert!(parse(&ok).is_ok());
}

#[test]
fn agrees_with_serde_json_on_ordinary_documents() -> Result<(), Box<dyn std::error::Error>> {
    let text = r#"{"s":"a\"b\\c\/d\b\f\n\r\t","n":[0,-1,2.5,1E+2,3e-2],"o":{"x":[],"y":{}}}"#;
    let ours = parse(text)?.to_value();
    let theirs: serde_json::Value = serde_json::from_str(text)?;
    assert_eq!(ours, theirs);
    Ok(())
}

#[test]
fn the_depth_message_names_the_limit() {
    assert_eq!(TOO_DEEP, format!("nesting deeper than {MAX_DEPTH} levels"));
}

#[test]
fn string_stops_flag_the_first_special_byte() {
    for (text, expected) in [
        (&b"abcdefgh"[..], 8),
        (&b"abc\"defgh"[..], 3),
        (&b"abcdefg\\"[..], 7),
        (&b"\x01bcdefgh"[..], 0),
        (&b"ab\x1fdefgh"[..], 2),
        (&b"abcdefghi\""[..], 9),
        (&b"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\""[..], 8),
        (&b" !#[]~\x7f\x80\""[..], 8),
        (&b""[..], 0),
    ] {
        assert_eq!(plain_run_end(text, 0), expected, "{text:?}");
    }
    // Every position of every byte value, inside and across the eight-byte words.
    for b in 0..=255u8 {
        for at in 0..20 {
            let mut text = vec![b'a'; 24];
            text[at] = b;
            let stops = b == b'"' || b == b'\\' || b < 0x20;
            assert_eq!(
                plain_run_end(&text, 0),
                if stops { at } else { 24 },
                "{b} at {at}"
            );
            assert_eq!(plain_run_end(&text, at.min(3)), if stops { at } else { 24 });
        }
    }
}

#[test]
fn equal_keys_share_a_filter_bit() {
    for key in ["", "a", "id", "createdAt", "\u{e9}t\u{e9}"] {
        // The same key decoded from escapes (an owned copy elsewhere in memory).
        let decoded = String::from(key);
        assert_eq!(key_bit(key), key_bit(decoded.as_str()));
        assert_eq!(key_bit(key).count_ones(), 1);
    }
}

#[test]
fn duplicate_keys_are_found_whatever_the_filter_says() -> Result<(), ParseError> {
    // Keys that share a filter bit with earlier distinct keys, and escaped spellings of a key.
    let keys: Vec<String> = (0..15).map(|i| format!("k{i}")).collect();
    let mut text = String::from("{");
    for (i, k) in keys.iter().enumerate() {
        text.push_str(&format!("\"{k}\":{i},"));
    }
    text.push_str("\"k\\u0037\":\"seven\",\"k1\":\"one\"}");
    let Json::Object(m) = parse(&text)? else {
        panic!("not an object")
    };
    assert_eq!(m.len(), 15);
    assert_eq!(m[7].1, Json::String("seven".into()));
    assert_eq!(m[1].1, Json::String("one".into()));
    Ok(())
}

/// The fast parser and the reference give the same document or the same error.
fn same_as_reference(text: &str) -> Result<(), String> {
    let fast = parse(text);
    let slow = reference::parse(text);
    if fast == slow {
        Ok(())
    } else {
        Err(format!("{text:?}: fast {fast:?}, reference {slow:?}"))
    }
}

#[test]
fn agrees_with_the_reference_on_chosen_inputs() -> Result<(), String> {
    for text in [
        "",
        " ",
        "null",
        "[1,2,[3,{\"a\":[]}],{}]",
        "{\"a\":1,\"a\":{\"b\":2},\"c\":[true,false,null]}",
        "\"plain\"",
        "\"esc\\n\\u00e9\\ud83d\\ude00 after\"",
        "\"unterminated",
        "\"control\u{1} then quote\"",
        "\"control\u{1} and no end",
        "\"escape then control \\n\u{2}\"",
        "\"escape then control \\n\u{2}",
        "\"bad \\x escape\"",
        "\"\\u12",
        "\"\\u12G4\"",
        "\"\\ud800\\u0041\"",
        "\"\\udc00\"",
        "\"\\ud800x\"",
        "\"\\",
        "-",
        "-x",
        "01",
        "1.",
        "1.e5",
        "1e",
        "1e+",
        "-0.5E-7",
        "123456789012345678901234567890.000e-99999999999999999999",
        "[1 2]",
        "[1,]",
        "[",
        "{",
        "{\"a\"",
        "{\"a\":",
        "{\"a\" 1}",
        "{\"a\":1,}",
        "{\"a\":1 \"b\":2}",
        "{1:2}",
        "{} x",
        "tru",
        "nul",
        "falsy",
        " \n\t\r[ \n1 ,\r\n2\t] \n",
        "\u{feff}1",
        "\"é\u{1}\"",
        "\n\n  é é [1, x]",
    ] {
        same_as_reference(text)?;
    }
    let deep = "[".repeat(300) + &"]".repeat(300);
    same_as_reference(&deep)?;
    let deep_objects = "{\"a\":".repeat(300) + "1" + &"}".repeat(300);
    same_as_reference(&deep_objects)?;
    let wide: Vec<String> = (0..40).map(|i| format!("\"k{}\":{i}", i % 23)).collect();
    same_as_reference(&format!("{{{}}}", wide.join(",")))
}

mod properties {
    use super::same_as_reference;
    use proptest::prelude::*;

    /// Random JSON values written out with random whitespace and escapes.
    fn document() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            "-?(0|[1-9][0-9]{0,25})(\\.[0-9]{1,5})?([eE][+-]?[0-9]{1,3})?",
            "\"([a-zé😀 \\t/]|\\\\[\"\\\\/bfnrt]|\\\\u00[0-7][0-9a-f]){0,12}\"",
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            let ws = "[ \n\t\r]{0,2}";
            prop_oneof![
                prop::collection::vec((ws, inner.clone(), ws), 0..6).prop_map(|items| {
                    let parts: Vec<String> = items
                        .into_iter()
                        .map(|(a, v, b)| format!("{a}{v}{b}"))
                        .collect();
                    format!("[{}]", parts.join(","))
                }),
                prop::collection::vec(("[a-c]{0,2}", ws, inner), 0..20).prop_map(|members| {
                    let parts: Vec<String> = members
                        .into_iter()
                        .map(|(k, w, v)| format!("\"{k}\"{w}:{w}{v}"))
                        .collect();
                    format!("{{{}}}", parts.join(","))
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn documents_parse_as_the_reference_parses_them(text in document()) {
            prop_assert_eq!(same_as_reference(&text), Ok(()));
        }

        #[test]
        fn damaged_documents_fail_as_the_reference_fails(
            text in document(),
            at in any::<prop::sample::Index>(),
            len in 0usize..4,
            with in "[\\[\\]{}\",:0-9a-z.eE+\\-\\\\ \\x00-\\x1f]{0,3}",
        ) {
            // Cut, or replace a few characters, at a character boundary.
            let cut = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect::<Vec<_>>();
            let from = cut[at.index(cut.len())];
            let to = cut.iter().copied().find(|&i| i >= from + len).unwrap_or(text.len());
            let damaged = format!("{}{}{}", &text[..from], with, &text[to..]);
            prop_assert_eq!(same_as_reference(&damaged), Ok(()));
            prop_assert_eq!(same_as_reference(&text[..from]), Ok(()));
        }

        #[test]
        fn any_text_parses_as_the_reference_parses_it(text in "\\PC{0,64}") {
            prop_assert_eq!(same_as_reference(&text), Ok(()));
        }

        #[test]
        fn json_alphabet_soup_parses_as_the_reference_parses_it(
            text in "[\\[\\]{}\",:0-9a-z.eE+\\-\\\\ \\n\\x01é]{0,60}"
        ) {
            prop_assert_eq!(same_as_reference(&text), Ok(()));
        }
    }
}
