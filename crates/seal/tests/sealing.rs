//! The ten sealing tests of `security-tests.md` ("Sealing").

use apidrift_seal::{
    Binding, Field, KeyRing, OVERHEAD, SealError, SecretKey, UsageLimits, create_key_file,
    key_id_of,
};
use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

type TestResult = Result<(), Box<dyn Error>>;

const WS_A: [u8; 16] = [0xa1; 16];
const WS_B: [u8; 16] = [0xb2; 16];
const ROW_1: [u8; 16] = [0x01; 16];
const ROW_2: [u8; 16] = [0x02; 16];

fn binding() -> Binding {
    Binding::new(WS_A, ROW_1, Field::EndpointAuth)
}

fn ring() -> Result<KeyRing, SealError> {
    KeyRing::new(SecretKey::generate()?, Vec::new())
}

#[test]
fn t1_seal_then_open_round_trips() -> TestResult {
    let ring = ring()?;
    for plaintext in [
        &b""[..],
        b"x",
        b"{\"type\":\"bearer\",\"token\":\"abc\"}",
        &[0u8; 4096][..],
    ] {
        let blob = ring.seal(plaintext, &binding())?;
        assert_eq!(blob.len(), plaintext.len() + OVERHEAD);
        assert_eq!(blob[0], 1);
        assert_eq!(key_id_of(&blob)?, ring.active_id());
        assert_eq!(ring.open(&blob, &binding())?.as_slice(), plaintext);
    }
    Ok(())
}

#[test]
fn t2_flipping_any_byte_fails_to_open() -> TestResult {
    let ring = ring()?;
    let blob = ring.seal(b"secret credential", &binding())?;
    for i in 0..blob.len() {
        for bit in [0x01u8, 0x80] {
            let mut bad = blob.clone();
            bad[i] ^= bit;
            assert!(
                ring.open(&bad, &binding()).is_err(),
                "byte {i} bit {bit:#x}"
            );
        }
    }
    // Appending a byte is also an alteration.
    let mut longer = blob.clone();
    longer.push(0);
    assert!(matches!(
        ring.open(&longer, &binding()),
        Err(SealError::OpenFailed)
    ));
    Ok(())
}

#[test]
fn t3_blob_moved_to_another_row_workspace_or_field_fails() -> TestResult {
    let ring = ring()?;
    let blob = ring.seal(b"secret credential", &binding())?;
    let elsewhere = [
        Binding::new(WS_A, ROW_2, Field::EndpointAuth),
        Binding::new(WS_B, ROW_1, Field::EndpointAuth),
        Binding::new(WS_A, ROW_1, Field::EndpointHeaders),
        Binding::new(WS_A, ROW_1, Field::BaselineBody),
        Binding::new(WS_A, ROW_1, Field::WebhookSecret),
        Binding::new(WS_B, ROW_2, Field::CheckBody),
    ];
    for other in elsewhere {
        assert!(
            matches!(ring.open(&blob, &other), Err(SealError::OpenFailed)),
            "{other:?}"
        );
    }
    assert!(ring.open(&blob, &binding()).is_ok());
    Ok(())
}

#[test]
fn t4_unknown_version_or_key_id_is_a_typed_error() -> TestResult {
    let ring = ring()?;
    let blob = ring.seal(b"value", &binding())?;
    let mut version = blob.clone();
    version[0] = 2;
    assert!(matches!(
        ring.open(&version, &binding()),
        Err(SealError::UnsupportedVersion(2))
    ));
    let mut zero = blob.clone();
    zero[0] = 0;
    assert!(matches!(
        ring.open(&zero, &binding()),
        Err(SealError::UnsupportedVersion(0))
    ));

    let other = KeyRing::new(SecretKey::generate()?, Vec::new())?;
    match other.open(&blob, &binding()) {
        Err(SealError::UnknownKeyId(id)) => assert_eq!(id, ring.active_id()),
        other => panic!("expected UnknownKeyId, got {other:?}"),
    }
    Ok(())
}

#[test]
fn t5_truncated_blobs_are_rejected() -> TestResult {
    let ring = ring()?;
    let blob = ring.seal(b"", &binding())?;
    assert_eq!(blob.len(), 33);
    for len in 0..=32 {
        match ring.open(&blob[..len], &binding()) {
            Err(SealError::Truncated { len: got }) => assert_eq!(got, len),
            other => panic!("{len} bytes: expected Truncated, got {other:?}"),
        }
    }
    // A longer value cut short fails authentication.
    let long = ring.seal(b"a longer secret value", &binding())?;
    for len in 33..long.len() {
        assert!(matches!(
            ring.open(&long[..len], &binding()),
            Err(SealError::OpenFailed)
        ));
    }
    Ok(())
}

#[test]
fn t6_a_million_seals_repeat_no_nonce() -> TestResult {
    let ring = ring()?;
    let n = 1_000_000;
    let binding = binding();
    // Sorting then comparing neighbours is much cheaper than a HashSet in a debug build.
    let mut nonces = Vec::with_capacity(n);
    for _ in 0..n {
        let blob = ring.seal(b"", &binding)?;
        let mut nonce = [0u8; 12];
        nonce.copy_from_slice(&blob[5..17]);
        nonces.push(nonce);
    }
    nonces.sort_unstable();
    assert!(nonces.windows(2).all(|w| w[0] != w[1]), "repeated nonce");
    assert_eq!(nonces.len(), n);
    assert_eq!(ring.seal_counts()[0].1, n as u64);
    Ok(())
}

#[test]
fn t7_after_rotation_old_blobs_open_and_new_ones_carry_the_new_id() -> TestResult {
    let old_key = SecretKey::generate()?;
    let old = KeyRing::new(old_key.clone(), Vec::new())?;
    let old_blob = old.seal(b"sealed before rotation", &binding())?;

    let new_key = SecretKey::generate()?;
    let rotated = KeyRing::new(new_key.clone(), vec![old_key.clone()])?;
    assert_eq!(rotated.active_id(), new_key.id());
    assert_eq!(rotated.key_ids(), vec![new_key.id(), old_key.id()]);
    assert_eq!(
        rotated.open(&old_blob, &binding())?.as_slice(),
        b"sealed before rotation"
    );
    let new_blob = rotated.seal(b"sealed after rotation", &binding())?;
    assert_eq!(key_id_of(&new_blob)?, new_key.id());
    assert_ne!(new_key.id(), old_key.id());
    // The old ring alone cannot open the new value.
    assert!(matches!(
        old.open(&new_blob, &binding()),
        Err(SealError::UnknownKeyId(_))
    ));
    Ok(())
}

/// A toy table with a compare-and-swap update, as the store's rewrap iteration does it.
struct Table {
    rows: Vec<(Binding, Vec<u8>)>,
}

impl Table {
    fn cas(&mut self, i: usize, old: &[u8], new: Vec<u8>) -> bool {
        if self.rows[i].1 == old {
            self.rows[i].1 = new;
            true
        } else {
            false
        }
    }

    fn count_on(&self, ring_key: apidrift_seal::KeyId) -> usize {
        self.rows
            .iter()
            .filter(|(_, b)| key_id_of(b).ok() == Some(ring_key))
            .count()
    }
}

/// One rewrap pass over at most `budget` rows; returns how many it changed.
fn rewrap_pass(ring: &KeyRing, table: &mut Table, budget: usize) -> Result<usize, SealError> {
    let mut changed = 0;
    for i in 0..table.rows.len() {
        if changed == budget {
            break;
        }
        let (binding, blob) = table.rows[i].clone();
        if let Some(new) = ring.rewrap(&blob, &binding)?
            && table.cas(i, &blob, new)
        {
            changed += 1;
        }
    }
    Ok(changed)
}

#[test]
fn t8_rewrap_is_idempotent_resumable_and_ends_at_zero_old_rows() -> TestResult {
    let old_key = SecretKey::generate()?;
    let old = KeyRing::new(old_key.clone(), Vec::new())?;
    let mut table = Table { rows: Vec::new() };
    for i in 0..50u8 {
        let b = Binding::new(WS_A, [i; 16], Field::EndpointAuth);
        table
            .rows
            .push((b, old.seal(format!("secret {i}").as_bytes(), &b)?));
    }
    let new_key = SecretKey::generate()?;
    let ring = KeyRing::new(new_key.clone(), vec![old_key.clone()])?;

    // "Killed" after 20 rows, then resumed: the second run finishes the rest.
    assert_eq!(rewrap_pass(&ring, &mut table, 20)?, 20);
    assert_eq!(table.count_on(old_key.id()), 30);
    // A concurrent writer replaced a row with a fresh value meanwhile: CAS skips the stale copy.
    let stale = table.rows[45].1.clone();
    table.rows[45].1 = ring.seal(b"rewritten by the API", &table.rows[45].0)?;
    assert!(!table.cas(45, &stale, Vec::new()));
    assert_eq!(rewrap_pass(&ring, &mut table, usize::MAX)?, 29);
    assert_eq!(table.count_on(old_key.id()), 0);
    assert_eq!(table.count_on(new_key.id()), 50);
    // Idempotent: another run changes nothing.
    assert_eq!(rewrap_pass(&ring, &mut table, usize::MAX)?, 0);

    // Every value still opens with the new key alone, with its own plaintext.
    let only_new = KeyRing::new(new_key, Vec::new())?;
    for (i, (b, blob)) in table.rows.iter().enumerate() {
        let text = only_new.open(blob, b)?;
        if i == 45 {
            assert_eq!(text.as_slice(), b"rewritten by the API");
        } else {
            assert_eq!(text.as_slice(), format!("secret {i}").as_bytes());
        }
    }
    Ok(())
}

#[test]
fn t9_the_counter_refuses_at_a_lowered_limit_and_warns_once() -> TestResult {
    let warned = Arc::new(AtomicU64::new(0));
    let hook_seen = Arc::clone(&warned);
    let ring = ring()?
        .with_limits(UsageLimits {
            warn_at: 3,
            refuse_at: 5,
        })
        .with_warn_hook(Box::new(move |_, count| {
            hook_seen.fetch_add(count * 100 + 1, Ordering::Relaxed);
        }));
    for _ in 0..5 {
        ring.seal(b"x", &binding())?;
    }
    assert_eq!(
        warned.load(Ordering::Relaxed),
        301,
        "warned once, at the third seal"
    );
    match ring.seal(b"x", &binding()) {
        Err(SealError::UsageLimit { key, limit }) => {
            assert_eq!(key, ring.active_id());
            assert_eq!(limit, 5);
        }
        other => panic!("expected UsageLimit, got {other:?}"),
    }
    assert_eq!(ring.seal_counts()[0].1, 5, "a refused seal is not counted");

    // A restored count is honoured; a rotated ring starts its own count.
    let restored = self::ring()?.with_limits(UsageLimits {
        warn_at: 10,
        refuse_at: 10,
    });
    restored.set_seal_count(restored.active_id(), 10);
    assert!(matches!(
        restored.seal(b"x", &binding()),
        Err(SealError::UsageLimit { .. })
    ));
    Ok(())
}

#[test]
fn t10_a_canary_secret_never_appears_in_debug_or_errors() -> TestResult {
    const CANARY: &str = "CANARY-7f3a9c";
    let key = SecretKey::generate()?;
    let key_b64 = key.to_base64();
    let ring = KeyRing::new(key.clone(), vec![SecretKey::generate()?])?;
    let blob = ring.seal(CANARY.as_bytes(), &binding())?;

    let mut texts = vec![
        format!("{key:?}"),
        format!("{ring:?}"),
        format!("{:?}", binding()),
    ];
    let mut bad = blob.clone();
    bad[20] ^= 1;
    for err in [
        ring.open(&bad, &binding()).err(),
        ring.open(&blob, &Binding::new(WS_B, ROW_1, Field::EndpointAuth))
            .err(),
        ring.open(&blob[..10], &binding()).err(),
        SecretKey::parse(CANARY, "ENDPOINT_SECRET_KEY").err(),
        SecretKey::parse(&format!("{}AA", &key_b64[..40]), "ENDPOINT_SECRET_KEY").err(),
        SecretKey::parse_list(&format!("{},{CANARY}", key_b64.as_str()), "PREVIOUS").err(),
    ] {
        let err = err.ok_or("expected an error")?;
        texts.push(err.to_string());
        texts.push(format!("{err:?}"));
    }
    let opened = ring.open(&blob, &binding())?;
    assert_eq!(opened.as_slice(), CANARY.as_bytes());
    for text in &texts {
        assert!(!text.contains(CANARY), "canary leaked: {text}");
        assert!(!text.contains(&key_b64[..16]), "key leaked: {text}");
    }
    // The sealed bytes do not contain the plaintext either.
    assert!(!blob.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()));
    // And a panic message built from the error would not either.
    let panic_text = std::panic::catch_unwind(|| {
        if let Err(e) = SecretKey::parse(CANARY, "ENDPOINT_SECRET_KEY") {
            panic!("{e}");
        }
    })
    .err()
    .and_then(|p| p.downcast_ref::<String>().cloned())
    .ok_or("expected a panic")?;
    assert!(!panic_text.contains(CANARY));
    assert!(
        panic_text.starts_with("ENDPOINT_SECRET_KEY: "),
        "{panic_text}"
    );
    Ok(())
}

#[test]
fn keys_parse_from_base64_and_hex_with_a_stable_id() -> TestResult {
    let bytes: [u8; 32] = std::array::from_fn(|i| i as u8);
    let from_bytes = SecretKey::from_bytes(bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let from_hex = SecretKey::parse(&hex, "k")?;
    let from_upper = SecretKey::parse(&hex.to_uppercase(), "k")?;
    let from_b64 = SecretKey::parse(&format!("  {}\n", from_bytes.to_base64().as_str()), "k")?;
    assert_eq!(from_hex, from_bytes);
    assert_eq!(from_upper, from_bytes);
    assert_eq!(from_b64, from_bytes);
    assert_eq!(from_hex.id(), from_b64.id());
    assert_ne!(SecretKey::generate()?.id(), from_bytes.id());
    assert_eq!(from_bytes.id().to_string().len(), 8);

    for bad in [
        "",
        "   ",
        "abc",
        &hex[..62],
        &format!("{hex}00"),
        "not base64 !!!!",
    ] {
        let err = SecretKey::parse(bad, "ENDPOINT_SECRET_KEY")
            .err()
            .ok_or("accepted")?;
        assert!(
            err.to_string().starts_with("ENDPOINT_SECRET_KEY: "),
            "{err}"
        );
    }
    // 16 bytes of valid base64 are refused with the length named.
    let short = SecretKey::parse("AAAAAAAAAAAAAAAAAAAAAA==", "ENDPOINT_SECRET_KEY");
    assert!(
        short
            .err()
            .is_some_and(|e| e.to_string().contains("16 bytes"))
    );

    let list = SecretKey::parse_list(
        &format!(" {hex} ,, {} ", from_b64.to_base64().as_str()),
        "P",
    )?;
    assert_eq!(list.len(), 2);
    assert!(SecretKey::parse_list("", "P")?.is_empty());
    Ok(())
}

#[test]
fn duplicate_previous_keys_collapse() -> TestResult {
    let a = SecretKey::generate()?;
    let b = SecretKey::generate()?;
    let ring = KeyRing::new(a.clone(), vec![a.clone(), b.clone(), b.clone()])?;
    assert_eq!(ring.key_ids(), vec![a.id(), b.id()]);
    Ok(())
}

#[test]
fn key_files_are_created_0600_once_and_read_back() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("apidrift.key");
    let key = create_key_file(&path)?;
    let text = std::fs::read_to_string(&path)?;
    assert_eq!(text.lines().count(), 1);
    assert_eq!(text.trim(), key.to_base64().as_str());
    assert_eq!(SecretKey::read_file(&path)?, key);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&path)?.permissions().mode() & 0o777,
            0o600
        );
    }
    assert!(matches!(
        create_key_file(&path),
        Err(SealError::KeyFileExists { .. })
    ));
    assert_eq!(
        SecretKey::read_file(&path)?,
        key,
        "the existing file is untouched"
    );

    let missing = SecretKey::read_file(&dir.path().join("missing.key"));
    assert!(matches!(missing, Err(SealError::KeyFile { .. })));
    std::fs::write(dir.path().join("bad.key"), "CANARY-not-a-key\n")?;
    let bad = SecretKey::read_file(&dir.path().join("bad.key"))
        .err()
        .ok_or("accepted")?;
    assert!(bad.to_string().contains("bad.key") && !bad.to_string().contains("CANARY"));
    Ok(())
}
