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
    /// One pass over `sql`. Where the CPU has AVX2 (`wide::starts`), 32 bytes at a time
    /// leave a candidate only where a word's first two bytes are: `pgbench -S`'s query takes
    /// about 150 instructions (callgrind) instead of the byte loop's 760.
    pub fn of(sql: &str) -> Mentions {
        #[cfg(target_arch = "x86_64")]
        if wide::available() {
            // Safety: the CPU has AVX2 (checked just above).
            return Mentions(unsafe { wide::of(sql.as_bytes()) });
        }
        Mentions::bytewise(sql.as_bytes())
    }

    /// The portable pass: at each byte, three table lookups (the words that may start two
    /// bytes back, given their second byte and this one as their third) leave a candidate only
    /// where a word may start, compared then once (`confirm`).
    fn bytewise(bytes: &[u8]) -> Mentions {
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

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
/// The words found from the positions `starts` flags (bit i: a word may start at `base + i`).
fn confirm_starts(bytes: &[u8], base: usize, mut starts: u64, mut found: u32) -> u32 {
    while starts != 0 {
        let at = base + starts.trailing_zeros() as usize;
        starts &= starts - 1;
        let byte = |i: usize| bytes.get(at + i).map_or(0, |&b| b as usize);
        let candidates =
            BY_FIRST[byte(0)] & BY_SECOND[byte(1)] & BY_THIRD[byte(2)] & !found & !PAREN;
        if candidates != 0 {
            found |= confirm(bytes, at, candidates);
        }
    }
    found
}

/// AVX2: 32 positions at a time, each compared with the words' first two bytes (case folded).
#[cfg(target_arch = "x86_64")]
mod wide {
    use super::{confirm_starts, PAREN, WORDS};
    use std::arch::x86_64::*;

    /// Whether the CPU has AVX2 (cached by the standard library after the first call).
    #[inline]
    pub fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
    }

    /// The words' first two bytes, each once.
    const PAIRS: [(u8, u8); WORDS.len()] = {
        let mut p = [(0u8, 0u8); WORDS.len()];
        let mut i = 0;
        while i < WORDS.len() {
            p[i] = (WORDS[i][0], WORDS[i][1]);
            i += 1;
        }
        p
    };

    /// Bit i: a word's first two bytes (either case) are at `at + i` and `at + i + 1`; bit 32
    /// and up: an opening parenthesis among the 32 bytes. Reads `at .. at + 33`.
    #[target_feature(enable = "avx2")]
    unsafe fn chunk(bytes: &[u8], at: usize) -> (u32, bool) {
        debug_assert!(at + 33 <= bytes.len());
        let here = _mm256_loadu_si256(bytes.as_ptr().add(at) as *const __m256i);
        let next = _mm256_loadu_si256(bytes.as_ptr().add(at + 1) as *const __m256i);
        // Lowercase letters are 0x61..=0x7A: OR 0x20 folds only the uppercase ones onto them.
        let fold = _mm256_set1_epi8(0x20);
        let (here_l, next_l) = (_mm256_or_si256(here, fold), _mm256_or_si256(next, fold));
        let mut hits = _mm256_setzero_si256();
        for &(a, b) in PAIRS.iter() {
            let first = _mm256_cmpeq_epi8(here_l, _mm256_set1_epi8(a as i8));
            let second = _mm256_cmpeq_epi8(next_l, _mm256_set1_epi8(b as i8));
            hits = _mm256_or_si256(hits, _mm256_and_si256(first, second));
        }
        let paren = _mm256_cmpeq_epi8(here, _mm256_set1_epi8(b'(' as i8));
        (
            _mm256_movemask_epi8(hits) as u32,
            _mm256_movemask_epi8(paren) != 0,
        )
    }

    /// What `bytes` mentions (`Mentions::of`'s bits).
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn of(bytes: &[u8]) -> u32 {
        let mut found = 0u32;
        let mut at = 0;
        while at + 33 <= bytes.len() {
            let (starts, paren) = chunk(bytes, at);
            if paren {
                found |= PAREN;
            }
            if starts != 0 {
                found = confirm_starts(bytes, at, starts as u64, found);
            }
            at += 32;
        }
        if at + 1 >= bytes.len() {
            // No pair starts at the last byte: only a parenthesis there is left to see.
        } else if bytes.len() >= 33 {
            // The rest: the last 33 bytes, the positions already seen masked off.
            let last = bytes.len() - 33;
            let (starts, paren) = chunk(bytes, last);
            if paren {
                found |= PAREN;
            }
            let starts = starts >> (at - last);
            if starts != 0 {
                found = confirm_starts(bytes, at, u64::from(starts), found);
            }
        } else {
            // A short text, zero-padded: a zero byte starts and continues no word.
            let mut padded = [0u8; 64];
            padded[..bytes.len()].copy_from_slice(bytes);
            let (starts, paren) = chunk(&padded, 0);
            if paren {
                found |= PAREN;
            }
            if starts != 0 {
                found = confirm_starts(bytes, 0, u64::from(starts), found);
            }
        }
        // (No chunk's parenthesis test reaches the last byte.)
        if bytes.last() == Some(&b'(') {
            found |= PAREN;
        }
        found
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
            assert_eq!(Mentions::bytewise(sql.as_bytes()), naive(sql), "{sql}");
        }
    }

    #[test]
    fn finds_what_the_naive_search_finds_in_generated_text() {
        // Texts of the words' own letters, cases and parentheses, so words, their prefixes and
        // overlaps meet at every position (first byte, last byte, back to back).
        let alphabet = b"setrSETRmpliadvoyhcgnbuxk_( ;@\x08";
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        // (Past 66 bytes: two whole AVX2 chunks and a rest.)
        for len in 0..80 {
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
                assert_eq!(
                    Mentions::bytewise(text.as_bytes()),
                    naive(&text),
                    "{text:?}"
                );
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
