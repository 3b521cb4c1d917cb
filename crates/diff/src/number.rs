//! Exact comparison of JSON number tokens: `1.0` = `1.00`, `1e3` = `1000.0`, integers of any size.

/// True when a JSON number token has no fraction and no exponent (D9: an `integer`).
pub(crate) fn token_is_integer(token: &str) -> bool {
    !token.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
}

/// A number token in canonical form: sign, significant digits without leading or trailing zeros,
/// and the decimal exponent of the first digit. Zero has no digits and is never negative.
#[derive(Debug, PartialEq, Eq)]
struct Canonical {
    negative: bool,
    digits: Vec<u8>,
    exponent: i64,
}

fn canonical(token: &str) -> Canonical {
    let bytes = token.as_bytes();
    let (negative, rest) = match bytes.first() {
        Some(b'-') => (true, &bytes[1..]),
        Some(b'+') => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    let mut digits = Vec::with_capacity(rest.len());
    // Position of the decimal point relative to the digits collected so far.
    let mut point: Option<i64> = None;
    let mut exp_part: i64 = 0;
    let mut i = 0;
    while i < rest.len() {
        let b = rest[i];
        match b {
            b'0'..=b'9' => digits.push(b),
            b'.' => point = Some(digits.len() as i64),
            b'e' | b'E' => {
                exp_part = parse_exponent(&rest[i + 1..]);
                break;
            }
            _ => {}
        }
        i += 1;
    }
    let point = point.unwrap_or(digits.len() as i64);
    // Strip leading zeros (each shifts the point left).
    let leading = digits.iter().take_while(|&&d| d == b'0').count();
    let trailing = digits[leading..]
        .iter()
        .rev()
        .take_while(|&&d| d == b'0')
        .count();
    let significant: Vec<u8> = digits[leading..digits.len() - trailing].to_vec();
    if significant.is_empty() {
        return Canonical {
            negative: false,
            digits: Vec::new(),
            exponent: 0,
        };
    }
    let exponent = (point - leading as i64).saturating_add(exp_part);
    Canonical {
        negative,
        digits: significant,
        exponent,
    }
}

fn parse_exponent(bytes: &[u8]) -> i64 {
    let (negative, digits) = match bytes.first() {
        Some(b'-') => (true, &bytes[1..]),
        Some(b'+') => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    let mut value: i64 = 0;
    for &d in digits {
        if d.is_ascii_digit() {
            value = value.saturating_mul(10).saturating_add(i64::from(d - b'0'));
        }
    }
    if negative { -value } else { value }
}

/// Numeric equality of two number tokens (exact, any size).
pub(crate) fn tokens_equal(a: &str, b: &str) -> bool {
    a == b || canonical(a) == canonical(b)
}

/// A text equal for two tokens exactly when [`tokens_equal`] says they are equal (`1.0`, `1.00`
/// and `10e-1` give the same text): a hash key for numbers.
pub(crate) fn canonical_text(token: &str) -> String {
    let c = canonical(token);
    let mut out = String::with_capacity(c.digits.len() + 8);
    if c.negative {
        out.push('-');
    }
    out.extend(c.digits.iter().map(|&d| char::from(d)));
    out.push('e');
    out.push_str(&c.exponent.to_string());
    out
}

/// Numeric ordering of two canonical numbers, used by tests.
#[cfg(test)]
fn compare(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (x, y) = (canonical(a), canonical(b));
    if x == y {
        return Ordering::Equal;
    }
    let sign = |c: &Canonical| {
        if c.digits.is_empty() {
            0
        } else if c.negative {
            -1
        } else {
            1
        }
    };
    match sign(&x).cmp(&sign(&y)) {
        Ordering::Equal => {}
        other => return other,
    }
    let magnitude = x
        .exponent
        .cmp(&y.exponent)
        .then_with(|| x.digits.cmp(&y.digits));
    if sign(&x) < 0 {
        magnitude.reverse()
    } else {
        magnitude
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn integers_and_numbers_are_told_apart_by_the_token() {
        assert!(token_is_integer("1"));
        assert!(token_is_integer("-123456789012345678901234567890"));
        assert!(!token_is_integer("1.0"));
        assert!(!token_is_integer("1e3"));
        assert!(!token_is_integer("1E3"));
    }

    #[test]
    fn equal_values_compare_equal_whatever_the_spelling() {
        assert!(tokens_equal("1.0", "1.00"));
        assert!(tokens_equal("1e3", "1000.0"));
        assert!(tokens_equal("0.5", "5e-1"));
        assert!(tokens_equal("-0", "0"));
        assert!(tokens_equal("0.0", "-0e10"));
        assert!(tokens_equal(
            "123456789012345678901234567890",
            "123456789012345678901234567890"
        ));
        assert!(!tokens_equal(
            "123456789012345678901234567890",
            "123456789012345678901234567891"
        ));
        assert!(!tokens_equal("1.5", "1.50001"));
        assert!(!tokens_equal("-1", "1"));
        assert!(!tokens_equal("1e3", "1e4"));
    }

    #[test]
    fn canonical_texts_are_equal_exactly_for_equal_numbers() {
        let same = [
            ("1", "1.0"),
            ("1.0", "1.00"),
            ("1e3", "1000.0"),
            ("0.5", "5e-1"),
            ("-0", "0"),
            ("0.0", "-0e10"),
            ("-12.50", "-1.25e1"),
        ];
        for (a, b) in same {
            assert_eq!(canonical_text(a), canonical_text(b), "{a} {b}");
        }
        let different = [("1", "-1"), ("1e3", "1e4"), ("1.5", "1.50001"), ("10", "1")];
        for (a, b) in different {
            assert_ne!(canonical_text(a), canonical_text(b), "{a} {b}");
        }
    }

    #[test]
    fn ordering_is_numeric() {
        assert_eq!(compare("2", "10"), Ordering::Less);
        assert_eq!(compare("-2", "-10"), Ordering::Greater);
        assert_eq!(compare("1e400", "1e399"), Ordering::Greater);
        assert_eq!(compare("0", "-1"), Ordering::Greater);
    }
}
