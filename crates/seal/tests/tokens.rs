//! Token format (D4): minting, the database-free format check, hash and hint.

use apidrift_seal::token::{self, PATTERN, PREFIX, TOKEN_LEN, check_format, crc32};
use apidrift_seal::{SealError, Token};
use std::collections::HashSet;
use std::error::Error;

type TestResult = Result<(), Box<dyn Error>>;

fn matches_pattern(text: &str) -> bool {
    text.len() == 58
        && text.starts_with("svc_live_")
        && text[9..].bytes().all(|c| c.is_ascii_alphanumeric())
}

#[test]
fn crc32_matches_the_ieee_check_value() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc32(b""), 0);
    assert_eq!(
        crc32(b"The quick brown fox jumps over the lazy dog"),
        0x414F_A339
    );
}

#[test]
fn minted_tokens_have_the_published_format_and_pass_the_check() -> TestResult {
    assert_eq!(PATTERN, "svc_live_[0-9A-Za-z]{49}");
    let mut seen = HashSet::new();
    for _ in 0..1000 {
        let t = Token::mint()?;
        assert_eq!(t.expose().len(), TOKEN_LEN);
        assert!(matches_pattern(t.expose()), "{}", t.expose());
        check_format(t.expose())?;
        assert!(seen.insert(t.expose().to_owned()));
    }
    Ok(())
}

#[test]
fn known_vectors() -> TestResult {
    // All-zero random part: 43 zeros, then the checksum of that text.
    let zero = Token::from_random(&[0u8; 32]);
    let body = format!("{PREFIX}{}", "0".repeat(43));
    assert!(zero.expose().starts_with(&body));
    check_format(zero.expose())?;
    // All-ones is 2^256 - 1, whose base62 form needs all 43 characters.
    let max = Token::from_random(&[0xff; 32]);
    assert_eq!(
        &max.expose()[9..52],
        "yhjskwdA6OZ1AL1YmHWZWm8LLG7HjnuCA2j5rOw8Xp1"
    );
    check_format(max.expose())?;
    // Bytes 0, 1, …, 31, computed independently (Python: int.from_bytes, zlib.crc32).
    let counting: [u8; 32] = std::array::from_fn(|i| i as u8);
    assert_eq!(
        Token::from_random(&counting).expose(),
        "svc_live_003aUlTJC7tjlCTQj2uNU3MFagCXG9LRKRcwGkBIDlf1cF9PE"
    );
    // 1 encodes as "…0001".
    let mut one = [0u8; 32];
    one[31] = 1;
    assert!(Token::from_random(&one).expose()[9..52].ends_with("00001"));
    Ok(())
}

#[test]
fn checksum_is_base62_of_crc32_left_padded() -> TestResult {
    let t = Token::from_random(&[7u8; 32]);
    let text = t.expose();
    let crc = crc32(&text.as_bytes()[..52]);
    let mut n = u64::from(crc);
    let alphabet = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut digits = [b'0'; 6];
    for d in digits.iter_mut().rev() {
        *d = alphabet[(n % 62) as usize];
        n /= 62;
    }
    assert_eq!(&text[52..], std::str::from_utf8(&digits)?);
    Ok(())
}

#[test]
fn any_single_character_mutation_fails_the_format_check() -> TestResult {
    let t = Token::mint()?;
    let text = t.expose();
    let alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    for i in 9..text.len() {
        for c in alphabet.chars() {
            if text[i..].starts_with(c) {
                continue;
            }
            let mutated = format!("{}{c}{}", &text[..i], &text[i + 1..]);
            assert!(
                check_format(&mutated).is_err(),
                "mutation at {i} to {c} passed"
            );
        }
    }
    Ok(())
}

#[test]
fn format_failures_name_the_rule() -> TestResult {
    let t = Token::mint()?;
    let text = t.expose();
    let reason = |s: &str| match check_format(s) {
        Err(SealError::MalformedToken(r)) => r,
        _ => "accepted",
    };
    assert_eq!(reason(""), "missing svc_live_ prefix");
    assert_eq!(
        reason(&text.replace("svc_live_", "svc_test_")),
        "missing svc_live_ prefix"
    );
    assert_eq!(reason(&text[..57]), "wrong length");
    assert_eq!(reason(&format!("{text}0")), "wrong length");
    assert_eq!(
        reason(&format!("{}-{}", &text[..20], &text[21..])),
        "characters outside [0-9A-Za-z]"
    );
    assert_eq!(
        reason(&format!("{}é{}", &text[..20], &text[22..])),
        "characters outside [0-9A-Za-z]"
    );
    let swapped = format!("{}{}{}", &text[..52], &text[53..58], &text[52..53]);
    if swapped != text {
        assert_eq!(reason(&swapped), "checksum mismatch");
    }
    // Errors never carry the text.
    let err = check_format(&text[..57]).err().ok_or("accepted")?;
    assert!(!err.to_string().contains(&text[9..40]));
    Ok(())
}

#[test]
fn hash_is_sha256_hex_and_hint_is_the_last_four() -> TestResult {
    assert_eq!(
        token::hash("abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let t = Token::mint()?;
    assert_eq!(t.hash(), token::hash(t.expose()));
    assert_eq!(t.hash().len(), 64);
    assert_eq!(t.hint(), &t.expose()[54..]);
    assert_eq!(token::hint("ab"), "ab");
    assert_eq!(token::hint("xyzé12"), "zé12");
    assert_eq!(format!("{t:?}"), "***");
    assert_eq!(format!("{t}"), "***");
    Ok(())
}

#[test]
fn constant_time_equality() {
    assert!(token::ct_eq(b"abc", b"abc"));
    assert!(!token::ct_eq(b"abc", b"abd"));
    assert!(!token::ct_eq(b"abc", b"ab"));
    assert!(token::ct_eq(b"", b""));
}
