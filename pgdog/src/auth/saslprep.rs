//! SASLprep (RFC 4013) as PostgreSQL's `pg_saslprep` (src/common/saslprep.c) applies it to
//! SCRAM passwords, on the server (`CREATE ROLE ... PASSWORD`) and in libpq alike.
//!
//! PostgreSQL differs from a textbook SASLprep in ways that change the hash, so they are
//! mirrored here rather than calling `stringprep::saslprep`:
//! - a pure-ASCII password is used unchanged (even with control characters);
//! - the prohibited-output and bidi checks run on the mapped input, before NFKC;
//! - a password that maps to nothing is "prohibited";
//! - when preparation fails, the raw password bytes are used instead of failing.
//!
//! The character tables come from the `stringprep` crate, NFKC from `unicode-normalization`.

use std::borrow::Cow;

use stringprep::tables;
use unicode_normalization::UnicodeNormalization;

/// The bytes PostgreSQL feeds to PBKDF2 for `password`: its SASLprep form when preparation
/// succeeds, otherwise the password unchanged.
pub fn prepare_password(password: &str) -> Cow<'_, str> {
    match pg_saslprep(password) {
        Some(prepared) => prepared,
        None => Cow::Borrowed(password),
    }
}

/// PostgreSQL's `pg_saslprep`: `None` where it returns `SASLPREP_PROHIBITED`.
fn pg_saslprep(input: &str) -> Option<Cow<'_, str>> {
    if input.is_ascii() {
        return Some(Cow::Borrowed(input));
    }
    let mapped: Vec<char> = input.chars().filter_map(map_char).collect();
    if mapped.is_empty() {
        return None; // PostgreSQL: "don't allow empty password"
    }
    if mapped.iter().any(|&c| is_prohibited(c)) || !bidi_ok(&mapped) {
        return None;
    }
    Some(Cow::Owned(mapped.into_iter().nfkc().collect()))
}

/// RFC 4013 §2.1: non-ASCII spaces become U+0020, "commonly mapped to nothing" vanish.
fn map_char(c: char) -> Option<char> {
    if tables::non_ascii_space_character(c) {
        Some(' ')
    } else if tables::commonly_mapped_to_nothing(c) {
        None
    } else {
        Some(c)
    }
}

/// RFC 4013 §2.3 prohibited output (C.1.2, C.2.1–C.9) plus unassigned code points (A.1).
fn is_prohibited(c: char) -> bool {
    tables::non_ascii_space_character(c)
        || tables::ascii_control_character(c)
        || tables::non_ascii_control_character(c)
        || tables::private_use(c)
        || tables::non_character_code_point(c)
        || tables::surrogate_code(c)
        || tables::inappropriate_for_plain_text(c)
        || tables::inappropriate_for_canonical_representation(c)
        || tables::change_display_properties_or_deprecated(c)
        || tables::tagging_character(c)
        || tables::unassigned_code_point(c)
}

/// RFC 3454 §6: a string with any RandALCat character has no LCat character and starts
/// and ends with a RandALCat character.
fn bidi_ok(chars: &[char]) -> bool {
    if !chars.iter().any(|&c| tables::bidi_r_or_al(c)) {
        return true;
    }
    let ends_ok = matches!((chars.first(), chars.last()),
        (Some(&first), Some(&last)) if tables::bidi_r_or_al(first) && tables::bidi_r_or_al(last));
    ends_ok && !chars.iter().any(|&c| tables::bidi_l(c))
}

#[cfg(test)]
mod tests {
    use super::prepare_password;

    #[test]
    fn ascii_is_unchanged_even_with_control_characters() {
        assert_eq!(prepare_password("pencil"), "pencil");
        assert_eq!(prepare_password("a\tb\x7f"), "a\tb\x7f");
    }

    #[test]
    fn maps_spaces_and_removes_mapped_to_nothing() {
        // U+00A0 NO-BREAK SPACE -> ' ', U+00AD SOFT HYPHEN -> nothing.
        assert_eq!(prepare_password("a\u{00A0}b\u{00AD}c"), "a bc");
    }

    #[test]
    fn applies_nfkc() {
        // U+2168 ROMAN NUMERAL NINE -> "IX"; U+00AA FEMININE ORDINAL -> "a".
        assert_eq!(prepare_password("\u{2168}"), "IX");
        assert_eq!(prepare_password("\u{00AA}"), "a");
    }

    #[test]
    fn prohibited_falls_back_to_raw() {
        // Private use character.
        assert_eq!(prepare_password("x\u{E000}"), "x\u{E000}");
        // Only "mapped to nothing": PostgreSQL treats the empty result as prohibited.
        assert_eq!(prepare_password("\u{00AD}"), "\u{00AD}");
        // RandALCat mixed with LCat violates the bidi rule.
        assert_eq!(prepare_password("\u{05D0}a\u{05D0}"), "\u{05D0}a\u{05D0}");
    }

    #[test]
    fn right_to_left_password_is_accepted() {
        assert_eq!(prepare_password("\u{05D0}\u{05D1}"), "\u{05D0}\u{05D1}");
    }
}
