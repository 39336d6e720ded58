//! Text input of sharding key values, accepting exactly what Postgres' input functions accept:
//! integers as `int2in` / `int4in` / `int8in` read them (`pg_strtoint*`), uuids as `uuid_in`.
//! Knows nothing of shards.
use super::ShardingError;

/// Postgres' `isspace` in the C locale.
fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn digit(byte: u8, radix: u64) -> Option<u64> {
    let value = match byte {
        b'0'..=b'9' => byte - b'0',
        b'a'..=b'f' => byte - b'a' + 10,
        b'A'..=b'F' => byte - b'A' + 10,
        _ => return None,
    };
    let value = u64::from(value);
    (value < radix).then_some(value)
}

/// An integer of `bits` (16, 32 or 64) bits, as Postgres reads one: surrounding whitespace,
/// an optional sign, decimal or `0x` / `0o` / `0b` digits, single underscores between digits.
/// Errors carry `type_name` and the whole input, like Postgres' messages.
pub(crate) fn parse_int(
    input: &str,
    bits: u32,
    type_name: &'static str,
) -> Result<i64, ShardingError> {
    let invalid = || ShardingError::InvalidText {
        type_name,
        input: input.to_string(),
    };
    let out_of_range = || ShardingError::OutOfRange {
        type_name,
        input: input.to_string(),
    };
    let s = input.as_bytes();
    let mut pos = 0;
    while s.get(pos).is_some_and(|b| is_space(*b)) {
        pos += 1;
    }
    let mut negative = false;
    match s.get(pos) {
        Some(b'-') => {
            negative = true;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    let radix = match (s.get(pos), s.get(pos + 1)) {
        (Some(b'0'), Some(b'x' | b'X')) => 16,
        (Some(b'0'), Some(b'o' | b'O')) => 8,
        (Some(b'0'), Some(b'b' | b'B')) => 2,
        _ => 10,
    };
    if radix != 10 {
        pos += 2;
    }
    // Magnitude of the type's minimum; digits accumulate unsigned, checked before each step
    // the way Postgres does (which decides between "out of range" and "invalid syntax").
    let limit: u64 = 1 << (bits - 1);
    let first_digit = pos;
    let mut magnitude: u64 = 0;
    loop {
        let byte = s.get(pos).copied();
        if let Some(value) = byte.and_then(|b| digit(b, radix)) {
            if magnitude > limit / radix {
                return Err(out_of_range());
            }
            magnitude = magnitude * radix + value;
            pos += 1;
        } else if byte == Some(b'_') {
            // Decimal digits may not start with an underscore (after a prefix they may).
            if radix == 10 && pos == first_digit {
                return Err(invalid());
            }
            pos += 1;
            if s.get(pos).and_then(|b| digit(*b, radix)).is_none() {
                return Err(invalid());
            }
        } else {
            break;
        }
    }
    if pos == first_digit {
        return Err(invalid());
    }
    while s.get(pos).is_some_and(|b| is_space(*b)) {
        pos += 1;
    }
    if pos != s.len() {
        return Err(invalid());
    }
    if negative {
        if magnitude > limit {
            return Err(out_of_range());
        }
        // `limit` itself is the minimum, whose negation does not fit: wrap into it.
        Ok((magnitude as i64).wrapping_neg())
    } else if magnitude >= limit {
        Err(out_of_range())
    } else {
        Ok(magnitude as i64)
    }
}

/// A uuid as `uuid_in` reads one: 32 hex digits of either case, a hyphen allowed after any
/// group of four (never two in a row, never at the end), the whole optionally in braces.
pub(crate) fn parse_uuid(input: &str) -> Result<[u8; 16], ShardingError> {
    let invalid = || ShardingError::InvalidText {
        type_name: "uuid",
        input: input.to_string(),
    };
    let s = input.as_bytes();
    let braces = s.first() == Some(&b'{');
    let mut pos = usize::from(braces);
    let mut out = [0u8; 16];
    for (i, byte) in out.iter_mut().enumerate() {
        let high = s.get(pos).and_then(|b| digit(*b, 16)).ok_or_else(invalid)?;
        let low = s
            .get(pos + 1)
            .and_then(|b| digit(*b, 16))
            .ok_or_else(invalid)?;
        *byte = (high * 16 + low) as u8;
        pos += 2;
        if i % 2 == 1 && i < 15 && s.get(pos) == Some(&b'-') {
            pos += 1;
        }
    }
    if braces {
        if s.get(pos) != Some(&b'}') {
            return Err(invalid());
        }
        pos += 1;
    }
    if pos != s.len() {
        return Err(invalid());
    }
    Ok(out)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A uuid in Postgres' output form: lower case, hyphens 8-4-4-4-12.
pub(crate) fn format_uuid(bytes: &[u8; 16]) -> String {
    let mut out = String::with_capacity(36);
    for (i, byte) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int8(s: &str) -> Result<i64, ShardingError> {
        parse_int(s, 64, "bigint")
    }

    #[test]
    fn integers_like_int8in() {
        assert_eq!(int8("42"), Ok(42));
        assert_eq!(int8("  -42 \t\n"), Ok(-42));
        assert_eq!(int8("+7"), Ok(7));
        assert_eq!(int8("0x1A"), Ok(26));
        assert_eq!(int8("0X_1a"), Ok(26));
        assert_eq!(int8("-0o17"), Ok(-15));
        assert_eq!(int8("0b101"), Ok(5));
        assert_eq!(int8("1_000_000"), Ok(1_000_000));
        assert_eq!(int8("007"), Ok(7));
        assert_eq!(int8("9223372036854775807"), Ok(i64::MAX));
        assert_eq!(int8("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(int8("-0x8000000000000000"), Ok(i64::MIN));
        for bad in [
            "", " ", "abc", "-", "+-1", "1.0", "1e3", "_1", "1_", "1__0", "0x", "0b2", "1 2",
            "\u{a0}1", "١",
        ] {
            assert_eq!(
                int8(bad),
                Err(ShardingError::InvalidText {
                    type_name: "bigint",
                    input: bad.into()
                }),
                "{bad:?}"
            );
        }
        for big in [
            "9223372036854775808",
            "-9223372036854775809",
            "99999999999999999999",
            "0x8000000000000000",
        ] {
            assert_eq!(int8(big).unwrap_err().code(), "22003", "{big}");
        }
        let e = int8("abc").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid input syntax for type bigint: \"abc\""
        );
    }

    #[test]
    fn narrow_integers_check_their_range() {
        assert_eq!(parse_int("32767", 16, "smallint"), Ok(32767));
        assert_eq!(parse_int("-32768", 16, "smallint"), Ok(-32768));
        let e = parse_int("99999", 16, "smallint").unwrap_err();
        assert_eq!(
            e.to_string(),
            "value \"99999\" is out of range for type smallint"
        );
        assert_eq!(
            parse_int("32768", 16, "smallint").unwrap_err().code(),
            "22003"
        );
        // Postgres' digit guard lets 32769 through, then sees the junk: a syntax error.
        assert_eq!(
            parse_int("32769x", 16, "smallint").unwrap_err().code(),
            "22P02"
        );
        // ...but a fifth digit past 3276 overflows first.
        assert_eq!(
            parse_int("40000x", 16, "smallint").unwrap_err().code(),
            "22003"
        );
        assert_eq!(parse_int("-2147483648", 32, "integer"), Ok(i32::MIN as i64));
        assert_eq!(
            parse_int("2147483648", 32, "integer").unwrap_err().code(),
            "22003"
        );
    }

    #[test]
    fn uuids_like_uuid_in() {
        let canonical = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
        let bytes = parse_uuid(canonical).unwrap();
        assert_eq!(bytes[0], 0xa0);
        assert_eq!(bytes[15], 0x11);
        assert_eq!(format_uuid(&bytes), canonical);
        for form in [
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
            "a0eebc99-9c0b-4ef8-bb6d6bb9bd380a11",
        ] {
            assert_eq!(parse_uuid(form), Ok(bytes), "{form}");
        }
        for bad in [
            "",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
            "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0e-ebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            " a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11 ",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        ] {
            let e = parse_uuid(bad).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("invalid input syntax for type uuid: \"{bad}\""),
            );
        }
    }
}
