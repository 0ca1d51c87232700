//! The embedded trimmed dictionary (`mini/dict/trimmed.dict`, made by
//! `mini/dict/make-trimmed.py` from jieba-rs's MIT-licensed `dict.txt`) and its decoder.
//!
//! Format (also in `mini/dict/README.md`): the magic `EVDICT1\n`, the number of words as
//! a little-endian `u32`, then one entry per word in sorted order: a byte whose high
//! nibble is how many UTF-16 units the word shares with the previous one and whose low
//! nibble is how many new units follow, the new units (`u16` little-endian), and a
//! frequency byte `q` with `frequency = round(e^(q/16))`. Front coding over UTF-16
//! (2 bytes per Han character instead of UTF-8's 3) keeps the 40 785 words with
//! frequency ≥ 80 in 0.18 MB, stored deflated (0.14 MB; `build.rs`) and inflated by
//! [`crate::inflate`] when the first Chinese text is segmented.

use std::fmt;

/// The dictionary compiled into the binary, deflated by `build.rs`.
static DEFLATED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/trimmed.dict.deflate"));

/// Its size once inflated.
const TRIMMED_LEN: usize = include!(concat!(env!("OUT_DIR"), "/trimmed_dict_len.rs"));

/// The embedded dictionary's bytes (inflated; empty for a damaged build, which the
/// decoder then reports).
pub fn trimmed() -> Vec<u8> {
    crate::inflate::inflate(DEFLATED, TRIMMED_LEN).unwrap_or_default()
}

/// First bytes of a dictionary in this format (the version is in the name).
const MAGIC: &[u8] = b"EVDICT1\n";

/// `q` steps per unit of natural logarithm (`make-trimmed.py` FREQ_SCALE).
const FREQ_SCALE: f64 = 16.0;

/// Why bytes are not a dictionary in this format: only possible for a corrupted
/// build, since the file is embedded; reported rather than trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DictError {
    /// The file does not start with [`MAGIC`].
    BadMagic,
    /// The data ends inside an entry (byte offset).
    Truncated { at: usize },
    /// An entry shares more units than the previous word has, or adds none (offset).
    BadEntry { at: usize },
    /// The UTF-16 units of a word are not valid text (offset of its entry).
    BadText { at: usize },
}

impl fmt::Display for DictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DictError::BadMagic => write!(f, "not an evolve dictionary (bad magic bytes)"),
            DictError::Truncated { at } => write!(f, "dictionary truncated at byte {at}"),
            DictError::BadEntry { at } => write!(f, "bad dictionary entry at byte {at}"),
            DictError::BadText { at } => write!(f, "invalid UTF-16 word at byte {at}"),
        }
    }
}

/// The frequency a quantised byte stands for (at least 1, as jieba expects).
pub fn frequency(q: u8) -> usize {
    ((f64::from(q) / FREQ_SCALE).exp().round() as usize).max(1)
}

/// Calls `add(word, frequency)` for every word of `bytes`, in order; returns the number
/// of words. One reused buffer for the word, so decoding allocates nothing per word.
pub fn decode(bytes: &[u8], mut add: impl FnMut(&str, usize)) -> Result<usize, DictError> {
    let rest = bytes.strip_prefix(MAGIC).ok_or(DictError::BadMagic)?;
    let mut at = MAGIC.len();
    let count_bytes: [u8; 4] = rest
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or(DictError::Truncated { at })?;
    let count = u32::from_le_bytes(count_bytes) as usize;
    at += 4;
    let mut units: Vec<u16> = Vec::with_capacity(16);
    let mut word = String::with_capacity(64);
    for _ in 0..count {
        let entry = at;
        let head = *bytes.get(at).ok_or(DictError::Truncated { at })?;
        let (shared, new) = (usize::from(head >> 4), usize::from(head & 0x0f));
        if shared > units.len() || new == 0 {
            return Err(DictError::BadEntry { at: entry });
        }
        units.truncate(shared);
        let body = bytes
            .get(at + 1..at + 1 + 2 * new + 1)
            .ok_or(DictError::Truncated { at: entry })?;
        units.extend(
            body[..2 * new]
                .chunks_exact(2)
                .map(|u| u16::from_le_bytes([u[0], u[1]])),
        );
        let q = body[2 * new];
        at += 1 + 2 * new + 1;
        word.clear();
        for c in char::decode_utf16(units.iter().copied()) {
            word.push(c.map_err(|_| DictError::BadText { at: entry })?);
        }
        add(&word, frequency(q));
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(bytes: &[u8]) -> Result<Vec<(String, usize)>, DictError> {
        let mut out = Vec::new();
        decode(bytes, |w, f| out.push((w.to_string(), f)))?;
        Ok(out)
    }

    #[test]
    fn embedded_dictionary_decodes_to_common_words() {
        let all = words(&trimmed()).expect("the embedded dictionary decodes");
        assert!(all.len() > 40_000, "{} words", all.len());
        for common in [
            "喜欢",
            "绿茶",
            "上海",
            "浦东",
            "我们",
            "的",
            "中华人民共和国",
        ] {
            assert!(all.iter().any(|(w, _)| w == common), "{common} missing");
        }
        // Sorted, distinct, frequencies at or above the threshold (80, ±3%).
        assert!(all.windows(2).all(|p| p[0].0 < p[1].0));
        assert!(all.iter().all(|(_, f)| *f >= 77));
        let de = all.iter().find(|(w, _)| w == "的").map(|(_, f)| *f);
        assert!(
            de.is_some_and(|f| f > 100_000),
            "的 is the most frequent: {de:?}"
        );
    }

    #[test]
    fn frequency_quantisation_is_within_three_percent() {
        for f in [10usize, 57, 1000, 318_825, 883_634] {
            let q = ((f as f64).ln() * FREQ_SCALE).round() as u8;
            let back = frequency(q) as f64;
            assert!((back / f as f64 - 1.0).abs() < 0.035, "{f} → {back}");
        }
        assert_eq!(frequency(0), 1);
    }

    #[test]
    fn corrupt_data_is_an_error_not_a_panic() {
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&2u32.to_le_bytes());
        let mut one = header.clone();
        // 上 (U+4E0A), q = 40; then an entry sharing 5 units of a 1-unit word.
        one.extend_from_slice(&[0x01, 0x0a, 0x4e, 40, 0x51, 0x0a, 0x4e, 40]);
        let cases: Vec<(Vec<u8>, DictError)> = vec![
            (b"nope".to_vec(), DictError::BadMagic),
            (MAGIC.to_vec(), DictError::Truncated { at: 8 }),
            (header.clone(), DictError::Truncated { at: 12 }),
            (one, DictError::BadEntry { at: 16 }),
            (
                [header.as_slice(), &[0x01, 0x00, 0xd8, 1]].concat(),
                DictError::BadText { at: 12 },
            ),
            (
                [header.as_slice(), &[0x02, 0x0a]].concat(),
                DictError::Truncated { at: 12 },
            ),
        ];
        for (bytes, want) in cases {
            assert_eq!(words(&bytes), Err(want.clone()), "{want}");
        }
    }
}
