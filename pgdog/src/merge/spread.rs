//! `stddev` / `variance` and their `_samp` / `_pop` forms across shards, exact. Each shard
//! returns `count(x)`, `sum(x::numeric)` and `sum(x::numeric * x::numeric)`; the merger adds
//! them up and computes from the totals what Postgres' `numeric_stddev_internal` computes from
//! its own running sums: `(n·Σx² − (Σx)²) / (n·(n−1))` (or `n²` for the population forms) at
//! the scale `select_div_scale` picks, rounded half away from zero, then the square root at
//! that scale for `stddev`. Integer and numeric inputs only (their result is `numeric`).
use super::decimal::Decimal;
use num_bigint::BigInt;
use num_traits::Signed;

/// Which of the six aggregates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    VarSamp,
    VarPop,
    StddevSamp,
    StddevPop,
}

impl Spread {
    /// The aggregate called `name` (lower case), if it is one of these.
    pub fn of(name: &str) -> Option<Spread> {
        Some(match name {
            "variance" | "var_samp" => Spread::VarSamp,
            "var_pop" => Spread::VarPop,
            "stddev" | "stddev_samp" => Spread::StddevSamp,
            "stddev_pop" => Spread::StddevPop,
            _ => return None,
        })
    }

    fn sample(self) -> bool {
        matches!(self, Spread::VarSamp | Spread::StddevSamp)
    }

    fn root(self) -> bool {
        matches!(self, Spread::StddevSamp | Spread::StddevPop)
    }

    /// The result from the totals (`None`: NULL, as for fewer than two rows with `_samp`).
    pub fn finish(
        self,
        n: i128,
        sum: Option<&Decimal>,
        sumsq: Option<&Decimal>,
    ) -> Option<Decimal> {
        if n <= 0 || (self.sample() && n <= 1) {
            return None;
        }
        let (Some(sum), Some(sumsq)) = (sum, sumsq) else {
            return None;
        };
        // NaN or an infinity among the inputs: Postgres answers NaN.
        let (Some((sx, dx)), Some((sq, dq))) = (sum.to_scaled(), sumsq.to_scaled()) else {
            return Some(Decimal::NaN);
        };
        let n_big = BigInt::from(n);
        let scale = dx * 2;
        let num = rescale(&(&n_big * sq), dq, scale) - &sx * &sx;
        if !num.is_positive() {
            // Postgres guards against a negative numerator from rounding the same way.
            return Some(Decimal::from_i128(0));
        }
        let den = if self.sample() {
            &n_big * (&n_big - 1)
        } else {
            &n_big * &n_big
        };
        let rscale = Decimal::from_scaled(&num, scale).div_scale(&Decimal::from_scaled(&den, 0));
        let quotient = divide_rounded(&num, scale, &den, rscale);
        if !self.root() {
            return Some(Decimal::from_scaled(&quotient, rscale));
        }
        // floor(√q) with one more digit, then rounded half up to rscale.
        let widened = quotient * pow10(rscale + 2);
        let root = widened.magnitude().sqrt();
        let rounded = (root + 5u32) / 10u32;
        Some(Decimal::from_scaled(&BigInt::from(rounded), rscale))
    }
}

fn pow10(e: u32) -> BigInt {
    BigInt::from(10).pow(e)
}

/// `v × 10^-from` at scale `to`, rounded half away from zero when digits are dropped.
fn rescale(v: &BigInt, from: u32, to: u32) -> BigInt {
    if to >= from {
        v * pow10(to - from)
    } else {
        divide_rounded(v, from, &BigInt::from(1), to)
    }
}

/// `(num × 10^-scale) / den` at scale `rscale`, rounded half away from zero (`den` > 0).
fn divide_rounded(num: &BigInt, scale: u32, den: &BigInt, rscale: u32) -> BigInt {
    let (n, d) = if rscale >= scale {
        (num * pow10(rscale - scale), den.clone())
    } else {
        (num.clone(), den * pow10(scale - rscale))
    };
    let q = n.abs() / &d;
    let r = n.abs() % &d;
    let q = if r * 2 >= d { q + 1 } else { q };
    if n.is_negative() {
        -q
    } else {
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    fn run(kind: Spread, values: &[&str]) -> Option<String> {
        let n = values.len() as i128;
        let mut sum: Option<Decimal> = None;
        let mut sumsq: Option<Decimal> = None;
        for v in values {
            let (x, s) = d(v).to_scaled().unwrap();
            let sq = Decimal::from_scaled(&(&x * &x), s * 2);
            sum = Some(sum.map_or(d(v), |t| t.add(&d(v))));
            sumsq = Some(sumsq.map_or(sq.clone(), |t| t.add(&sq)));
        }
        kind.finish(n, sum.as_ref(), sumsq.as_ref())
            .map(|v| v.to_string())
    }

    // Expected values printed by PostgreSQL 18 for the same inputs.
    #[test]
    fn matches_postgres() {
        let v = ["1", "2", "3", "4"];
        assert_eq!(run(Spread::VarSamp, &v).unwrap(), "1.6666666666666667");
        assert_eq!(run(Spread::VarPop, &v).unwrap(), "1.2500000000000000");
        assert_eq!(run(Spread::StddevSamp, &v).unwrap(), "1.2909944487358056");
        assert_eq!(run(Spread::StddevPop, &v).unwrap(), "1.1180339887498948");
        let w = ["1.5", "2.25", "10"];
        assert_eq!(run(Spread::VarSamp, &w).unwrap(), "22.1458333333333333");
        assert_eq!(run(Spread::StddevSamp, &w).unwrap(), "4.7059359678318333");
    }

    #[test]
    fn edges() {
        assert_eq!(run(Spread::VarSamp, &["5"]), None);
        assert_eq!(run(Spread::VarPop, &["5"]).unwrap(), "0");
        assert_eq!(run(Spread::StddevSamp, &["7", "7", "7"]).unwrap(), "0");
        assert_eq!(run(Spread::VarPop, &[]), None);
        assert_eq!(
            Spread::VarSamp
                .finish(3, Some(&Decimal::NaN), Some(&d("1")))
                .unwrap()
                .to_string(),
            "NaN"
        );
    }
}
