//! The token-count estimate (tea-agent's heuristic; no tokenizer files needed).

use super::is_cjk;

/// Structural overhead of one chat message (role, separators), in tokens.
pub const MESSAGE_OVERHEAD_TOKENS: usize = 4;

/// Fixed cost of one image part, in tokens.
pub const IMAGE_TOKENS: usize = 85;

/// Estimated tokens of a text: ≈ 4 ASCII characters per token, ≈ 1.5 CJK characters
/// per token, and (our choice; neither source says) ≈ 2 other characters per token.
/// Rounded up, so a non-empty text costs at least one token.
pub fn estimate_text_tokens(text: &str) -> usize {
    // Work in twelfths to stay in integers: ASCII 3/12, CJK 8/12, other 6/12.
    if text.is_ascii() {
        return (text.len() * 3).div_ceil(12);
    }
    let mut twelfths = 0usize;
    for c in text.chars() {
        twelfths += if c.is_ascii() {
            3
        } else if is_cjk(c) {
            8
        } else {
            6
        };
    }
    twelfths.div_ceil(12)
}

/// Estimated tokens of one message: its texts, its images and the per-message overhead.
pub fn estimate_message_tokens<'a>(
    texts: impl IntoIterator<Item = &'a str>,
    images: usize,
) -> usize {
    MESSAGE_OVERHEAD_TOKENS
        + images * IMAGE_TOKENS
        + texts.into_iter().map(estimate_text_tokens).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_cjk_and_other_rates() {
        assert_eq!(estimate_text_tokens(""), 0);
        assert_eq!(estimate_text_tokens("abcd"), 1);
        assert_eq!(estimate_text_tokens("abcdefgh"), 2);
        assert_eq!(estimate_text_tokens("abcde"), 2); // rounded up
        assert_eq!(estimate_text_tokens("中文"), 2); // 2 / 1.5 = 1.33 → 2
        assert_eq!(estimate_text_tokens("中文中"), 2); // 3 / 1.5 = 2
        assert_eq!(estimate_text_tokens("ééé"), 2); // 3 / 2 = 1.5 → 2
        assert_eq!(estimate_text_tokens(&"x".repeat(4000)), 1000);
    }

    #[test]
    fn message_adds_overhead_and_images() {
        assert_eq!(estimate_message_tokens(["abcd"], 0), 5);
        assert_eq!(estimate_message_tokens(["abcd", "abcd"], 2), 4 + 2 + 170);
        assert_eq!(estimate_message_tokens([], 0), 4);
    }
}
