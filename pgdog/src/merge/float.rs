//! `real` / `double precision` text: parsing and printing exactly as Postgres does with the
//! default `extra_float_digits = 1` (shortest round-trip digits, `%g`-like exponent switch).

/// Parses Postgres' float text (`NaN`, `Infinity`, `-Infinity`, decimals, exponents).
pub fn parse(s: &str) -> Option<f64> {
    let t = s.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if body.eq_ignore_ascii_case("nan") {
        return Some(f64::NAN);
    }
    if body.eq_ignore_ascii_case("infinity") || body.eq_ignore_ascii_case("inf") {
        return Some(if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if !body
        .bytes()
        .all(|c| c.is_ascii_digit() || b".eE+-".contains(&c))
    {
        return None;
    }
    t.parse().ok()
}

/// `float8out`.
pub fn format_f64(v: f64) -> String {
    special(v).unwrap_or_else(|| pg_style(&format!("{v:e}"), 15))
}

/// `float4out`.
pub fn format_f32(v: f32) -> String {
    special(f64::from(v)).unwrap_or_else(|| pg_style(&format!("{v:e}"), 6))
}

/// NaN and the infinities as Postgres spells them.
fn special(v: f64) -> Option<String> {
    if v.is_nan() {
        return Some("NaN".into());
    }
    v.is_infinite()
        .then(|| if v < 0.0 { "-Infinity" } else { "Infinity" }.into())
}

/// Rewrites Rust's shortest `d.ddde[-]x` as Postgres prints it: fixed notation for decimal
/// exponents in `[-4, digits)`, else `d.ddde+XX`.
fn pg_style(rust: &str, fixed_below: i32) -> String {
    let (neg, body) = match rust.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, rust),
    };
    let (mantissa, exp) = body.split_once('e').unwrap_or((body, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::with_capacity(digits.len() + 8);
    if neg {
        out.push('-');
    }
    if (-4..fixed_below).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.abs()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_postgres() {
        assert_eq!(format_f64(0.0), "0");
        assert_eq!(format_f64(-0.0), "-0");
        assert_eq!(format_f64(1.5), "1.5");
        assert_eq!(format_f64(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(format_f64(1e15), "1e+15");
        assert_eq!(format_f64(123456789012345.0), "123456789012345");
        assert_eq!(format_f64(0.0001), "0.0001");
        assert_eq!(format_f64(0.00001234), "1.234e-05");
        assert_eq!(format_f64(-2.5e100), "-2.5e+100");
        assert_eq!(format_f64(f64::NAN), "NaN");
        assert_eq!(format_f64(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(format_f32(123456.0), "123456");
        assert_eq!(format_f32(1234567.0), "1.234567e+06");
        assert_eq!(format_f32(1.1), "1.1");
        assert_eq!(format_f32(0.3), "0.3");
    }

    #[test]
    fn parses_postgres_text() {
        assert_eq!(parse("1.5"), Some(1.5));
        assert_eq!(parse("-Infinity"), Some(f64::NEG_INFINITY));
        assert!(parse("NaN").unwrap().is_nan());
        assert_eq!(parse("1e+15"), Some(1e15));
        assert_eq!(parse("abc"), None);
        assert_eq!(parse("infinityx"), None);
    }
}
