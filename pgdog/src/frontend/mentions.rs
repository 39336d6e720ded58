//! The words a statement's text mentions, found in one pass: the pooler's cheap filters
//! (whether a query may SET, pin, begin a transaction, change the catalog, deallocate or set
//! `pgdog.role`) all read this one summary instead of scanning the text each. A word counts
//! wherever it appears, also inside another word, a literal or a comment: a filter that errs
//! only toward a closer look (a parse) never misses a statement that matters.

/// A word the filters look for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Word {
    Set,
    Reset,
    Temp,
    Listen,
    Advisory,
    Prepare,
    Hold,
    Discard,
    Do,
    Into,
    Characteristics,
    PgTemp,
    Begin,
    Start,
    Create,
    Alter,
    Drop,
    Deallocate,
}

/// The words, lowercase, in `Word` order.
const WORDS: [&[u8]; 18] = [
    b"set",
    b"reset",
    b"temp",
    b"listen",
    b"advisory",
    b"prepare",
    b"hold",
    b"discard",
    b"do",
    b"into",
    b"characteristics",
    b"pg_temp",
    b"begin",
    b"start",
    b"create",
    b"alter",
    b"drop",
    b"deallocate",
];

/// The words that make a statement matter for session state (`statements::classify`).
const SESSION_WORDS: u32 = (1 << (Word::PgTemp as u32 + 1)) - 1;

/// Bit of an opening parenthesis (a function call may follow).
const PAREN: u32 = 1 << 31;

/// For each byte (either case), the words starting with it.
const BY_FIRST: [u32; 256] = by_byte(0);

/// For each byte (either case), the words whose second byte it is (every byte for `(`).
const BY_SECOND: [u32; 256] = {
    let mut t = by_byte(1);
    let mut i = 0;
    while i < 256 {
        t[i] |= PAREN;
        i += 1;
    }
    t
};

/// For each byte (either case), the words whose third byte it is; every byte for the words of
/// two bytes (`do`) and for `(`.
const BY_THIRD: [u32; 256] = {
    let mut t = by_byte(2);
    let mut short = PAREN;
    let mut w = 0;
    while w < WORDS.len() {
        if WORDS[w].len() < 3 {
            short |= 1 << w;
        }
        w += 1;
    }
    let mut i = 0;
    while i < 256 {
        t[i] |= short;
        i += 1;
    }
    t
};

/// For each byte (either case), the words with that byte at `at`; `(` at 0 for `PAREN`.
const fn by_byte(at: usize) -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < WORDS.len() {
        if at < WORDS[i].len() {
            let b = WORDS[i][at];
            t[b as usize] |= 1 << i;
            t[b.to_ascii_uppercase() as usize] |= 1 << i;
        }
        i += 1;
    }
    if at == 0 {
        t[b'(' as usize] |= PAREN;
    }
    t
}

/// The candidates (`BY_FIRST` and `BY_SECOND` bits) that `bytes` holds at `at`.
#[inline(never)]
fn confirm(bytes: &[u8], at: usize, mut candidates: u32) -> u32 {
    let mut found = 0;
    while candidates != 0 {
        let bit = candidates & candidates.wrapping_neg();
        candidates &= candidates - 1;
        if bit == PAREN {
            found |= PAREN;
            continue;
        }
        let word = WORDS[bit.trailing_zeros() as usize];
        if bytes
            .get(at..at + word.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(word))
        {
            found |= bit;
        }
    }
    found
}

/// What one text mentions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mentions(u32);

impl Mentions {
    /// One pass over `sql`: at each byte, three table lookups (the words that may start two
    /// bytes back, given their second byte and this one as their third) leave a candidate only
    /// where a word may start, compared then once (`confirm`). `pgbench -S`'s query: about
    /// 600 instructions (callgrind), one comparison; a loop on two bytes that looked ahead with
    /// bounds checks took 1,500, the former keyword scan alone four times that.
    pub fn of(sql: &str) -> Mentions {
        let bytes = sql.as_bytes();
        let mut found = 0u32;
        // The words that may start at the previous byte, and at the one before it.
        let (mut one_back, mut two_back) = (0u32, 0u32);
        for (i, &b) in bytes.iter().enumerate() {
            let candidates = two_back & BY_THIRD[b as usize] & !found;
            two_back = one_back & BY_SECOND[b as usize];
            one_back = BY_FIRST[b as usize];
            if candidates != 0 {
                // (A candidate needs two bytes before this one: i >= 2.)
                found |= confirm(bytes, i.wrapping_sub(2), candidates);
            }
        }
        // The end: a two-byte word (or a parenthesis) two bytes back, a parenthesis last.
        let n = bytes.len();
        let tail = (two_back & BY_THIRD[0] & !found, one_back & PAREN);
        if tail.0 != 0 {
            found |= confirm(bytes, n.wrapping_sub(2), tail.0);
        }
        Mentions(found | tail.1)
    }

    pub fn has(self, w: Word) -> bool {
        self.0 & (1 << w as u32) != 0
    }

    /// A word that may make the statement matter for session state (SET, temporary objects,
    /// LISTEN, advisory locks, PREPARE, WITH HOLD, DISCARD, DO, SELECT INTO, pg_temp...).
    pub fn session_word(self) -> bool {
        self.0 & SESSION_WORDS != 0
    }

    /// An opening parenthesis: the text may call a function.
    pub fn paren(self) -> bool {
        self.0 & PAREN != 0
    }

    /// BEGIN or START: the text may open a transaction block.
    pub fn may_begin(self) -> bool {
        self.has(Word::Begin) || self.has(Word::Start)
    }

    /// CREATE, ALTER or DROP somewhere (the catalog check looks closer).
    pub fn ddl_word(self) -> bool {
        self.has(Word::Create) || self.has(Word::Alter) || self.has(Word::Drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slow, obvious definition: each word searched on its own.
    fn naive(sql: &str) -> Mentions {
        let lower = sql.to_ascii_lowercase();
        let mut found = 0;
        for (i, w) in WORDS.iter().enumerate() {
            if lower.contains(std::str::from_utf8(w).unwrap()) {
                found |= 1 << i;
            }
        }
        if sql.contains('(') {
            found |= PAREN;
        }
        Mentions(found)
    }

    #[test]
    fn finds_what_a_search_for_each_word_finds() {
        for sql in [
            "SELECT abalance FROM pgbench_accounts WHERE aid = 1;",
            "select pg_advisory_lock(1)",
            "SET search_path TO x",
            "reset all",
            "CREATE TEMPORARY TABLE t (a int)",
            "select * into temp t from x",
            "BEGIN; UPDATE a SET b = 1; COMMIT",
            "start transaction",
            "DEALLOCATE ALL",
            "deallocate prepare p1",
            "DO $$ begin end $$",
            "DISCARD ALL",
            "declare c cursor with hold for select 1",
            "set session characteristics as transaction read only",
            "select * from pg_temp.t",
            "drop table x; alter table y add z int",
            "LISTEN ch",
            "sssetresetSETtemptemp",
            "é set ü",
            "",
            "s",
            "(",
        ] {
            assert_eq!(Mentions::of(sql), naive(sql), "{sql}");
        }
    }

    #[test]
    fn finds_what_the_naive_search_finds_in_generated_text() {
        // Texts of the words' own letters, cases and parentheses, so words, their prefixes and
        // overlaps meet at every position (first byte, last byte, back to back).
        let alphabet = b"setrSETRmpliadvoyhcgnbuxk_( ;";
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for len in 0..40 {
            for _ in 0..300 {
                let text: String = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        alphabet[(seed % alphabet.len() as u64) as usize] as char
                    })
                    .collect();
                assert_eq!(Mentions::of(&text), naive(&text), "{text:?}");
            }
        }
    }

    #[test]
    fn pgbench_select_mentions_nothing_that_matters() {
        let m = Mentions::of("SELECT abalance FROM pgbench_accounts WHERE aid = 1;");
        assert!(!m.session_word() && !m.paren() && !m.may_begin() && !m.ddl_word());
        assert!(!m.has(Word::Deallocate) && !m.has(Word::Set) && !m.has(Word::Reset));
    }

    #[test]
    fn every_word_is_found_in_either_case() {
        for (i, w) in WORDS.iter().enumerate() {
            let lower = std::str::from_utf8(w).unwrap();
            for text in [
                format!("x {lower} y"),
                lower.to_ascii_uppercase(),
                format!("a{lower}"),
            ] {
                assert!(Mentions::of(&text).0 & (1 << i) != 0, "{text}");
            }
        }
    }
}
