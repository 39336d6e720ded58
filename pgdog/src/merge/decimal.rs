//! Arbitrary-precision decimals for `numeric` values: parse Postgres' text form, compare, add
//! exactly, divide by a row count with Postgres' result scale and rounding (`avg`), and print
//! the way Postgres prints (display scale kept: `1.50 + 1 = 2.50`).
use num_bigint::{BigInt, BigUint, Sign};
use num_traits::Zero;
use std::cmp::Ordering;

/// Sign words of Postgres' binary `numeric`.
const NUMERIC_POS: u16 = 0x0000;
const NUMERIC_NEG: u16 = 0x4000;
const NUMERIC_NAN: u16 = 0xC000;
const NUMERIC_PINF: u16 = 0xD000;
const NUMERIC_NINF: u16 = 0xF000;
const NUMERIC_DSCALE_MAX: u16 = 0x3FFF;
const NBASE: u16 = 10000;

/// A `numeric` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decimal {
    NaN,
    /// `Infinity` (false) or `-Infinity` (true).
    Inf(bool),
    Finite(Finite),
}

/// `mag × 10^-scale`, negative when `neg`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finite {
    neg: bool,
    /// Decimal digits, least significant first, no most-significant zeros (zero: empty).
    mag: Vec<u8>,
    /// Digits after the decimal point (Postgres' display scale).
    scale: u32,
}

impl Decimal {
    /// Parses `[+-]digits[.digits][e[+-]n]`, `NaN`, `[+-]Infinity` / `inf`.
    pub fn parse(s: &str) -> Option<Decimal> {
        let s = s.trim();
        let (neg, body) = match s.as_bytes().first()? {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        if body.eq_ignore_ascii_case("nan") {
            return (body.len() == s.len()).then_some(Decimal::NaN);
        }
        if body.eq_ignore_ascii_case("infinity") || body.eq_ignore_ascii_case("inf") {
            return Some(Decimal::Inf(neg));
        }
        let (num, exp) = match body.find(['e', 'E']) {
            Some(i) => (&body[..i], body[i + 1..].parse::<i32>().ok()?),
            None => (body, 0),
        };
        let (int, frac) = match num.find('.') {
            Some(i) => (&num[..i], &num[i + 1..]),
            None => (num, ""),
        };
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let mut mag = Vec::with_capacity(int.len() + frac.len());
        for c in int.bytes().chain(frac.bytes()).rev() {
            if !c.is_ascii_digit() {
                return None;
            }
            mag.push(c - b'0');
        }
        let mut scale = frac.len() as i64 - exp as i64;
        if scale < 0 {
            let zeros = (-scale) as usize;
            mag.splice(0..0, std::iter::repeat_n(0, zeros));
            scale = 0;
        }
        let scale = u32::try_from(scale).ok()?;
        Some(Decimal::Finite(Finite::new(neg, mag, scale)))
    }

    pub fn from_i128(v: i128) -> Decimal {
        let mut mag = Vec::new();
        let mut u = v.unsigned_abs();
        while u > 0 {
            mag.push((u % 10) as u8);
            u /= 10;
        }
        Decimal::Finite(Finite::new(v < 0, mag, 0))
    }

    /// Postgres' ordering: `-Infinity` < finite < `Infinity` < `NaN` (NaN equals NaN).
    pub fn cmp_value(&self, other: &Decimal) -> Ordering {
        fn rank(d: &Decimal) -> i8 {
            match d {
                Decimal::Inf(true) => 0,
                Decimal::Finite(_) => 1,
                Decimal::Inf(false) => 2,
                Decimal::NaN => 3,
            }
        }
        match (self, other) {
            (Decimal::Finite(a), Decimal::Finite(b)) => a.cmp_value(b),
            _ => rank(self).cmp(&rank(other)),
        }
    }

    /// Exact sum; the scale is the larger of the two.
    pub fn add(&self, other: &Decimal) -> Decimal {
        match (self, other) {
            (Decimal::NaN, _) | (_, Decimal::NaN) => Decimal::NaN,
            (Decimal::Inf(a), Decimal::Inf(b)) if a != b => Decimal::NaN,
            (Decimal::Inf(a), _) | (_, Decimal::Inf(a)) => Decimal::Inf(*a),
            (Decimal::Finite(a), Decimal::Finite(b)) => Decimal::Finite(a.add(b)),
        }
    }

    /// `self / count` as Postgres' `numeric_div` computes it for `avg` (`count` > 0): the result
    /// scale of `select_div_scale`, rounded half away from zero.
    pub fn div_count(&self, count: i64) -> Decimal {
        let f = match self {
            Decimal::Finite(f) if count > 0 => f,
            Decimal::Finite(_) => return Decimal::NaN,
            other => return other.clone(),
        };
        let count_dec = Finite::new(false, Decimal::digits_of(count as u128), 0);
        let rscale = f.div_scale(&count_dec);
        // mag × 10^(rscale - scale) / count, rounded.
        let shift = (rscale - f.scale) as usize;
        let divisor = count as u128;
        let mut quotient = Vec::with_capacity(f.mag.len() + shift);
        let mut rem: u128 = 0;
        let digits = f
            .mag
            .iter()
            .rev()
            .copied()
            .chain(std::iter::repeat_n(0u8, shift));
        for d in digits {
            rem = rem * 10 + d as u128;
            quotient.push((rem / divisor) as u8);
            rem %= divisor;
        }
        quotient.reverse();
        let mut q = Finite::new(f.neg, quotient, rscale);
        if rem * 2 >= divisor {
            q.mag = add_mag(&q.mag, &[1]);
        }
        q.normalize();
        Decimal::Finite(q)
    }

    /// A finite value as `(v, scale)` with `self = v × 10^-scale` (`None`: NaN, ±Infinity).
    pub fn to_scaled(&self) -> Option<(BigInt, u32)> {
        let Decimal::Finite(f) = self else {
            return None;
        };
        let mag = BigUint::from_radix_le(&f.mag, 10).unwrap_or_default();
        let sign = if f.neg { Sign::Minus } else { Sign::Plus };
        Some((BigInt::from_biguint(sign, mag), f.scale))
    }

    /// `v × 10^-scale`, printed with `scale` digits after the point.
    pub fn from_scaled(v: &BigInt, scale: u32) -> Decimal {
        let (sign, mag) = v.clone().into_parts();
        let digits = if mag.is_zero() {
            Vec::new()
        } else {
            mag.to_radix_le(10)
        };
        Decimal::Finite(Finite::new(sign == Sign::Minus, digits, scale))
    }

    /// Postgres' `select_div_scale(self, divisor)` for two finite values (else 0).
    pub fn div_scale(&self, divisor: &Decimal) -> u32 {
        match (self, divisor) {
            (Decimal::Finite(a), Decimal::Finite(b)) => a.div_scale(b),
            _ => 0,
        }
    }

    /// Reads Postgres' binary `numeric` (what `numeric_send` writes): `ndigits`, `weight`,
    /// sign (`NUMERIC_POS` 0x0000, `NUMERIC_NEG` 0x4000, `NUMERIC_NAN` 0xC000, and since
    /// PostgreSQL 14 `NUMERIC_PINF` 0xD000 / `NUMERIC_NINF` 0xF000), `dscale`, then `ndigits`
    /// base-10000 digits, most significant first, the first of weight `weight`.
    pub fn from_binary(v: &[u8]) -> Option<Decimal> {
        let word = |i: usize| -> Option<u16> {
            Some(u16::from_be_bytes(
                v.get(i * 2..i * 2 + 2)?.try_into().ok()?,
            ))
        };
        let ndigits = word(0)? as i16;
        let weight = word(1)? as i16 as i64;
        let sign = word(2)?;
        let dscale = word(3)?;
        match sign {
            NUMERIC_NAN => return Some(Decimal::NaN),
            NUMERIC_PINF => return Some(Decimal::Inf(false)),
            NUMERIC_NINF => return Some(Decimal::Inf(true)),
            NUMERIC_POS | NUMERIC_NEG => {}
            _ => return None,
        }
        if ndigits < 0 || dscale > NUMERIC_DSCALE_MAX || v.len() != 8 + ndigits as usize * 2 {
            return None;
        }
        // The digits as one integer D (decimal, least significant first): the value is
        // D × 10000^(weight - ndigits + 1), and mag = value × 10^dscale.
        let mut digits = Vec::with_capacity(ndigits as usize * 4);
        for i in (0..ndigits as usize).rev() {
            let mut g = word(4 + i)?;
            if g >= NBASE {
                return None;
            }
            for _ in 0..4 {
                digits.push((g % 10) as u8);
                g /= 10;
            }
        }
        let exp = 4 * (weight - ndigits as i64 + 1) + dscale as i64;
        let mag = if exp >= 0 {
            let mut m = vec![0; exp as usize];
            m.extend_from_slice(&digits);
            m
        } else {
            // Digits below the display scale (Postgres never sends non-zero ones): dropped.
            digits.split_off(((-exp) as usize).min(digits.len()))
        };
        Some(Decimal::Finite(Finite::new(
            sign == NUMERIC_NEG,
            mag,
            dscale as u32,
        )))
    }

    /// Writes Postgres' binary `numeric` exactly as `numeric_send` would for this value:
    /// leading and trailing zero base-10000 digits stripped, zero as no digits with weight 0
    /// and a positive sign, the display scale kept; `NaN` and the infinities as their sign
    /// word with the header bits Postgres sends for them (dscale 0 for NaN, 32 for infinities).
    pub fn to_binary(&self) -> Vec<u8> {
        let words: Vec<u16> = match self {
            Decimal::NaN => vec![0, 0, NUMERIC_NAN, 0],
            // numeric_send reads a special value's short header as a dscale: 0xD000/0xF000
            // carry 0x1000 in NUMERIC_SHORT_DSCALE_MASK, i.e. 32.
            Decimal::Inf(false) => vec![0, 0, NUMERIC_PINF, 32],
            Decimal::Inf(true) => vec![0, 0, NUMERIC_NINF, 32],
            Decimal::Finite(f) => {
                let dscale = f.scale.min(NUMERIC_DSCALE_MAX as u32) as u16;
                // Align the decimal point on a base-10000 boundary: mag × 10^pad.
                let pad = ((4 - f.scale % 4) % 4) as usize;
                let frac_groups = (f.scale as i64 + pad as i64) / 4;
                let n = f.mag.len() + pad;
                // Base-10000 digits, least significant first.
                let mut groups: Vec<u16> = (0..n.div_ceil(4))
                    .map(|g| {
                        (g * 4..g * 4 + 4)
                            .rev()
                            .fold(0u16, |acc, i| acc * 10 + f.digit(pad, i) as u16)
                    })
                    .collect();
                while groups.last() == Some(&0) {
                    groups.pop();
                }
                let low = groups.iter().take_while(|&&g| g == 0).count();
                if groups.is_empty() {
                    vec![0, 0, NUMERIC_POS, dscale]
                } else {
                    let weight = groups.len() as i64 - 1 - frac_groups;
                    let digits = &groups[low..];
                    let mut w = vec![
                        digits.len() as u16,
                        weight as i16 as u16,
                        if f.neg { NUMERIC_NEG } else { NUMERIC_POS },
                        dscale,
                    ];
                    w.extend(digits.iter().rev());
                    w
                }
            }
        };
        words.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    fn digits_of(mut u: u128) -> Vec<u8> {
        let mut mag = Vec::new();
        while u > 0 {
            mag.push((u % 10) as u8);
            u /= 10;
        }
        mag
    }

    /// The value as a float (for comparing with float columns).
    pub fn to_f64(&self) -> f64 {
        match self {
            Decimal::NaN => f64::NAN,
            Decimal::Inf(neg) => {
                if *neg {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                }
            }
            Decimal::Finite(_) => self.to_string().parse().unwrap_or(f64::NAN),
        }
    }

    /// Text that is equal for equal values (`1.50` and `1.5` give the same key).
    pub fn key(&self) -> String {
        match self {
            Decimal::Finite(f) => {
                let mut f = f.clone();
                let strip = f
                    .mag
                    .iter()
                    .take_while(|&&d| d == 0)
                    .count()
                    .min(f.scale as usize);
                f.mag.drain(..strip);
                f.scale -= strip as u32;
                f.normalize();
                if f.mag.is_empty() {
                    f.scale = 0;
                }
                Decimal::Finite(f).to_string()
            }
            other => other.to_string(),
        }
    }
}

impl std::fmt::Display for Decimal {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let f = match self {
            Decimal::NaN => return out.write_str("NaN"),
            Decimal::Inf(true) => return out.write_str("-Infinity"),
            Decimal::Inf(false) => return out.write_str("Infinity"),
            Decimal::Finite(f) => f,
        };
        let scale = f.scale as usize;
        let mut s = String::with_capacity(f.mag.len() + 3);
        if f.neg {
            s.push('-');
        }
        let int_len = f.mag.len().saturating_sub(scale);
        if int_len == 0 {
            s.push('0');
        }
        for i in (0..f.mag.len().max(scale)).rev() {
            if i + 1 == scale {
                s.push('.');
            }
            s.push((b'0' + f.mag.get(i).copied().unwrap_or(0)) as char);
        }
        out.write_str(&s)
    }
}

impl Finite {
    fn new(neg: bool, mag: Vec<u8>, scale: u32) -> Finite {
        let mut f = Finite { neg, mag, scale };
        f.normalize();
        f
    }

    fn normalize(&mut self) {
        while self.mag.last() == Some(&0) {
            self.mag.pop();
        }
        if self.mag.is_empty() {
            self.neg = false;
        }
    }

    /// Digit of `mag × 10^shift` at position `i` (least significant first).
    fn digit(&self, shift: usize, i: usize) -> u8 {
        if i < shift {
            0
        } else {
            self.mag.get(i - shift).copied().unwrap_or(0)
        }
    }

    fn cmp_mag(&self, other: &Finite) -> Ordering {
        let scale = self.scale.max(other.scale);
        let (sa, sb) = (
            (scale - self.scale) as usize,
            (scale - other.scale) as usize,
        );
        let (la, lb) = (
            if self.mag.is_empty() {
                0
            } else {
                self.mag.len() + sa
            },
            if other.mag.is_empty() {
                0
            } else {
                other.mag.len() + sb
            },
        );
        if la != lb {
            return la.cmp(&lb);
        }
        for i in (0..la).rev() {
            match self.digit(sa, i).cmp(&other.digit(sb, i)) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        Ordering::Equal
    }

    fn cmp_value(&self, other: &Finite) -> Ordering {
        match (self.neg, other.neg) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.cmp_mag(other),
            (true, true) => other.cmp_mag(self),
        }
    }

    fn aligned(&self, scale: u32) -> Vec<u8> {
        let shift = (scale - self.scale) as usize;
        if self.mag.is_empty() {
            return Vec::new();
        }
        let mut v = vec![0; shift];
        v.extend_from_slice(&self.mag);
        v
    }

    fn add(&self, other: &Finite) -> Finite {
        let scale = self.scale.max(other.scale);
        let (a, b) = (self.aligned(scale), other.aligned(scale));
        if self.neg == other.neg {
            return Finite::new(self.neg, add_mag(&a, &b), scale);
        }
        match self.cmp_mag(other) {
            Ordering::Equal => Finite::new(false, Vec::new(), scale),
            Ordering::Greater => Finite::new(self.neg, sub_mag(&a, &b), scale),
            Ordering::Less => Finite::new(other.neg, sub_mag(&b, &a), scale),
        }
    }

    /// The result scale Postgres' `select_div_scale` picks for `self / divisor`: at least 16
    /// significant digits (NUMERIC_MIN_SIG_DIGITS, DEC_DIGITS 4), not below either display
    /// scale, within [0, 1000].
    fn div_scale(&self, divisor: &Finite) -> u32 {
        let (w1, d1) = self.nbase_head();
        let (w2, d2) = divisor.nbase_head();
        let mut qweight = w1 - w2;
        if d1 <= d2 {
            qweight -= 1;
        }
        (16 - qweight * 4)
            .max(self.scale as i64)
            .max(divisor.scale as i64)
            .clamp(0, 1000) as u32
    }

    /// Weight and first digit in Postgres' base-10000 representation (zero: `(0, 0)`).
    fn nbase_head(&self) -> (i64, u32) {
        if self.mag.is_empty() {
            return (0, 0);
        }
        let pad = ((4 - self.scale % 4) % 4) as usize;
        let frac_groups = (self.scale as i64 + pad as i64) / 4;
        let n = self.mag.len() + pad;
        let groups = n.div_ceil(4);
        let top = groups - 1;
        let mut first = 0u32;
        for i in (top * 4..top * 4 + 4).rev() {
            first = first * 10 + self.digit(pad, i) as u32;
        }
        (top as i64 - frac_groups, first)
    }
}

fn add_mag(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(a.len().max(b.len()) + 1);
    let mut carry = 0u8;
    for i in 0..a.len().max(b.len()) {
        let s = a.get(i).copied().unwrap_or(0) + b.get(i).copied().unwrap_or(0) + carry;
        out.push(s % 10);
        carry = s / 10;
    }
    if carry > 0 {
        out.push(carry);
    }
    out
}

/// `a - b` with `a >= b`.
fn sub_mag(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0i8;
    for (i, &d) in a.iter().enumerate() {
        let mut s = d as i8 - b.get(i).copied().unwrap_or(0) as i8 - borrow;
        borrow = 0;
        if s < 0 {
            s += 10;
            borrow = 1;
        }
        out.push(s as u8);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    #[test]
    fn parse_and_print_keep_the_scale() {
        for s in [
            "0",
            "1.50",
            "-0.001",
            "123456789012345678901234567890.5",
            "NaN",
        ] {
            assert_eq!(d(s).to_string(), s);
        }
        assert_eq!(d("-0").to_string(), "0");
        assert_eq!(d("0.000").to_string(), "0.000");
        assert_eq!(d(".5").to_string(), "0.5");
        assert_eq!(d("1e3").to_string(), "1000");
        assert_eq!(d("1.5e-2").to_string(), "0.015");
        assert_eq!(d("-inf").to_string(), "-Infinity");
        assert!(Decimal::parse("1.2.3").is_none());
        assert!(Decimal::parse("abc").is_none());
        assert!(Decimal::parse("").is_none());
    }

    #[test]
    fn adds_exactly() {
        assert_eq!(d("1.50").add(&d("1")).to_string(), "2.50");
        assert_eq!(d("0.1").add(&d("0.2")).to_string(), "0.3");
        assert_eq!(d("-5").add(&d("3.25")).to_string(), "-1.75");
        assert_eq!(d("5").add(&d("-5.00")).to_string(), "0.00");
        assert_eq!(
            d("99999999999999999999").add(&d("1")).to_string(),
            "100000000000000000000"
        );
        assert_eq!(d("Infinity").add(&d("1")).to_string(), "Infinity");
        assert_eq!(d("Infinity").add(&d("-Infinity")).to_string(), "NaN");
    }

    #[test]
    fn compares_like_postgres() {
        assert_eq!(d("1.5").cmp_value(&d("1.50")), Ordering::Equal);
        assert_eq!(d("-2").cmp_value(&d("1")), Ordering::Less);
        assert_eq!(d("-2").cmp_value(&d("-10")), Ordering::Greater);
        assert_eq!(d("10").cmp_value(&d("9.99")), Ordering::Greater);
        assert_eq!(d("0.01").cmp_value(&d("0.1")), Ordering::Less);
        assert_eq!(d("NaN").cmp_value(&d("Infinity")), Ordering::Greater);
        assert_eq!(d("-Infinity").cmp_value(&d("-1e100")), Ordering::Less);
        assert_eq!(d("1.50").key(), d("1.5").key());
        assert_eq!(d("0.00").key(), "0");
        assert_eq!(d("100").key(), "100");
    }

    #[test]
    fn divides_like_numeric_div() {
        // Checked against PostgreSQL 18: avg of integers and numerics.
        assert_eq!(d("10").div_count(4).to_string(), "2.5000000000000000");
        assert_eq!(d("6").div_count(3).to_string(), "2.0000000000000000");
        assert_eq!(d("0").div_count(2).to_string(), "0.00000000000000000000");
        assert_eq!(d("1").div_count(3).to_string(), "0.33333333333333333333");
        assert_eq!(d("2").div_count(3).to_string(), "0.66666666666666666667");
        assert_eq!(d("-2").div_count(3).to_string(), "-0.66666666666666666667");
        assert_eq!(d("1.50").div_count(1).to_string(), "1.50000000000000000000");
        assert_eq!(d("100000").div_count(3).to_string(), "33333.333333333333");
        assert_eq!(d("3.75").div_count(2).to_string(), "1.8750000000000000");
        assert_eq!(
            d("12345679.9").div_count(2).to_string(),
            "6172839.950000000000"
        );
        assert_eq!(
            d("0.0031").div_count(3).to_string(),
            "0.00103333333333333333"
        );
        assert_eq!(d("NaN").div_count(3).to_string(), "NaN");
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// `numeric_send` output of PostgreSQL 18 (`COPY (SELECT v) TO STDOUT (FORMAT binary)`).
    const PG_BINARY: &[(&str, &str)] = &[
        ("0", "0000000000000000"),
        ("0.000", "0000000000000003"),
        ("-0.5", "0001ffff400000011388"),
        (
            "123456789.123456789",
            "0006000200000009000109291a8504d2162e2328",
        ),
        (
            "-123456789.123456789",
            "0006000240000009000109291a8504d2162e2328",
        ),
        ("0.00000000000000000001", "0001fffb000000140001"),
        (
            "99999999999999999999",
            "0005000400000000270f270f270f270f270f",
        ),
        ("10000", "00010001000000000001"),
        ("1.50", "000200000000000200011388"),
        ("0.00010000", "0001ffff000000080001"),
        ("3", "00010000000000000003"),
        ("NaN", "00000000c0000000"),
        ("Infinity", "00000000d0000020"),
        ("-Infinity", "00000000f0000020"),
        // avg results: (1, 2, 4), (1.50, 2.25, -7.125), (100000, 0, 0), (0.0031).
        ("2.3333333333333333", "000500000000001000020d050d050d050d05"),
        ("-1.12500000000000000000", "0002000040000014000104e2"),
        ("33333.333333333333", "000500010000000c00030d050d050d050d05"),
        ("0.00310000000000000000", "0001ffff00000014001f"),
        ("0.0", "0000000000000001"),
    ];

    #[test]
    fn binary_matches_postgres() {
        for (text, bin) in PG_BINARY {
            let bin = hex(bin);
            assert_eq!(d(text).to_binary(), bin, "{text} to binary");
            let back = Decimal::from_binary(&bin).unwrap();
            assert_eq!(back.to_string(), *text, "{text} from binary");
            assert_eq!(back.to_binary(), bin, "{text} round trip");
        }
        assert_eq!(d("1e-20").to_string(), "0.00000000000000000001");
        // Merged results in binary: what Postgres sends for the whole table.
        assert_eq!(
            d("1").add(&d("2")).add(&d("4")).div_count(3).to_binary(),
            hex("000500000000001000020d050d050d050d05")
        );
        assert_eq!(
            d("1.50")
                .add(&d("2.25"))
                .div_count(2)
                .add(&d("0"))
                .to_string(),
            "1.8750000000000000"
        );
        assert_eq!(
            d("-0.5").add(&d("0.5")).to_binary(),
            hex("0000000000000001")
        );
        assert_eq!(
            d("Infinity").add(&d("1")).div_count(2).to_binary(),
            hex("00000000d0000020")
        );
        // Invalid: short, bad sign, digit out of range, length mismatch.
        for bad in [
            "000000",
            "0000000012340000",
            "00010000000000002710",
            "0001000000000000",
        ] {
            assert!(Decimal::from_binary(&hex(bad)).is_none(), "{bad}");
        }
    }

    #[test]
    fn text_binary_round_trips() {
        for s in [
            "0",
            "0.00",
            "1",
            "-1",
            "0.1",
            "0.0001",
            "0.00001",
            "12345.6789",
            "-12345.67890",
            "1000000000000",
            "100000000000000000000000000000000000.000000000000000000000000001",
            "9999.9999",
            "10000.00001",
        ] {
            let b = d(s).to_binary();
            assert_eq!(Decimal::from_binary(&b).unwrap().to_string(), s);
            assert_eq!(Decimal::from_binary(&b).unwrap(), d(s));
        }
    }
}
