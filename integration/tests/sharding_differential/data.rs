//! The users/orders/countries data set.
use super::*;

#[derive(Debug, Clone)]
pub(crate) struct User {
    pub(crate) id: i64,
    pub(crate) name: Option<String>,
    pub(crate) email: Option<String>,
    pub(crate) age: Option<i32>,
    pub(crate) score: Option<String>,
    pub(crate) created_at: String,
    pub(crate) active: Option<bool>,
    pub(crate) tenant: Option<String>,
    pub(crate) country: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct OrderRow {
    pub(crate) id: i64,
    pub(crate) user_id: i64,
    pub(crate) amount: Option<String>,
    pub(crate) status: Option<String>,
    pub(crate) created_at: Option<String>,
}

pub(crate) struct Data {
    pub(crate) users: Vec<User>,
    pub(crate) orders: Vec<OrderRow>,
    pub(crate) countries: Vec<(&'static str, &'static str, Option<&'static str>)>,
}

pub(crate) fn cents(c: i64) -> String {
    let sign = if c < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", c.abs() / 100, c.abs() % 100)
}

pub(crate) fn timestamp(r: &mut Rng) -> String {
    format!(
        "{}-{:02}-{:02} {:02}:{:02}:{:02}+00",
        2023 + r.below(2),
        1 + r.below(12),
        1 + r.below(28),
        r.below(24),
        r.below(60),
        r.below(60)
    )
}

pub(crate) fn generate() -> Data {
    let mut r = Rng(0x0005_eed0_fd06);
    const NAMES: &[&str] = &[
        "alice", "Bob", "carol", "dave", "Eve", "frank", "grace", "heidi", "ivan", "judy",
        "mallory", "oscar", "peggy", "trent", "victor", "walter", "bob", "ALICE",
    ];
    const ODD_NAMES: &[&str] = &[
        "Zoë",
        "Ängel",
        "o'brien",
        "Smith, \"Jr\"",
        "tab\there",
        "back\\slash",
        "multi\nline",
        "",
        " padded ",
        "\\N",
    ];
    const TENANTS: &[&str] = &["acme", "globex", "initech", "umbrella"];
    const CODES: &[&str] = &[
        "FR", "DE", "US", "JP", "BR", "IN", "NG", "AU", "CA", "MX", "ES", "IT", "ZZ",
    ];
    let shared_times: Vec<String> = (0..5).map(|_| timestamp(&mut r)).collect();
    let mut users = Vec::with_capacity(USERS);
    for i in 0..USERS {
        let id = match i {
            0 => i64::MIN,
            1 => i64::MAX,
            2 => 0,
            _ if i % 10 == 3 => -(i as i64) * 13,
            _ => i as i64 * 7 + 1,
        };
        let name = if r.chance(6) {
            None
        } else if r.chance(3) {
            Some(r.pick(ODD_NAMES).to_string())
        } else {
            Some(r.pick(NAMES).to_string())
        };
        let email = if r.chance(8) {
            None
        } else if r.chance(5) {
            Some("shared@example.com".to_string())
        } else {
            Some(format!("u{i}@example.com"))
        };
        let age = (!r.chance(10)).then(|| 18 + r.below(73) as i32);
        let score = (!r.chance(8)).then(|| cents(r.below(10_100_000) as i64 - 100_000));
        let created_at = if r.chance(5) {
            r.pick(&shared_times).clone()
        } else {
            timestamp(&mut r)
        };
        let active = if r.chance(10) {
            None
        } else {
            Some(r.chance(50))
        };
        let tenant = (!r.chance(10)).then(|| r.pick(TENANTS).to_string());
        let country = (!r.chance(7)).then(|| r.pick(CODES).to_string());
        users.push(User {
            id,
            name,
            email,
            age,
            score,
            created_at,
            active,
            tenant,
            country,
        });
    }
    let statuses = ["new", "paid", "shipped", "cancelled"];
    let mut orders = Vec::with_capacity(ORDERS);
    for i in 0..ORDERS {
        let user_id = if r.chance(3) {
            10_000_000 + r.below(50) as i64
        } else {
            // Skewed: the first 100 users get many orders.
            let idx = if r.chance(30) {
                r.below(100)
            } else {
                r.below(USERS as u64)
            };
            users[idx as usize].id
        };
        let amount = if r.chance(3) {
            None
        } else if r.chance(4) {
            Some(cents(-(r.below(5000) as i64)))
        } else {
            Some(cents(r.below(100_000) as i64))
        };
        let status = (!r.chance(5)).then(|| r.pick(&statuses).to_string());
        let created_at = (!r.chance(4)).then(|| timestamp(&mut r));
        orders.push(OrderRow {
            id: i as i64 + 1,
            user_id,
            amount,
            status,
            created_at,
        });
    }
    let countries = vec![
        ("FR", "France", Some("Europe")),
        ("DE", "Germany", Some("Europe")),
        ("ES", "Spain", Some("Europe")),
        ("IT", "Italy", Some("Europe")),
        ("US", "United States", Some("Americas")),
        ("CA", "Canada", Some("Americas")),
        ("MX", "Mexico", Some("Americas")),
        ("BR", "Brazil", Some("Americas")),
        ("JP", "Japan", Some("Asia")),
        ("IN", "India", Some("Asia")),
        ("NG", "Nigeria", None),
        ("AU", "Australia", None),
    ];
    Data {
        users,
        orders,
        countries,
    }
}

impl User {
    /// Its values by column.
    pub(crate) fn row(&self) -> Row {
        vec![
            ("id", Val::I64(self.id)),
            ("name", Val::Text(self.name.clone())),
            ("email", Val::Text(self.email.clone())),
            ("age", Val::I32(self.age)),
            ("score", Val::Numeric(self.score.clone())),
            ("created_at", Val::Stamp(self.created_at.clone())),
            ("active", Val::Bool(self.active)),
            ("tenant", Val::Text(self.tenant.clone())),
            ("country", Val::Text(self.country.clone())),
        ]
    }
}

impl OrderRow {
    /// Its values by column.
    pub(crate) fn row(&self) -> Row {
        vec![
            ("id", Val::I64(self.id)),
            ("user_id", Val::I64(self.user_id)),
            ("amount", Val::Numeric(self.amount.clone())),
            ("status", Val::Text(self.status.clone())),
            ("created_at", Val::Text(self.created_at.clone())),
        ]
    }
}
