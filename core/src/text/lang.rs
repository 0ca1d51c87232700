//! The language a user-facing text is written in.

use serde::{Deserialize, Serialize};

use super::is_cjk;

/// The language of the text the core writes for the model or the user (memory
/// prefixes, the skills block, permission questions). The UI offers English and 中文.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// English.
    #[default]
    En,
    /// Chinese (simplified).
    Zh,
}

impl Lang {
    /// Chinese when the text contains a CJK character, English otherwise: the
    /// conversation's language decides.
    pub fn guess(text: &str) -> Lang {
        if text.chars().any(is_cjk) {
            Lang::Zh
        } else {
            Lang::En
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guess_follows_the_script() {
        assert_eq!(Lang::guess("what tea?"), Lang::En);
        assert_eq!(Lang::guess("用户喜欢什么茶"), Lang::Zh);
        assert_eq!(Lang::guess("use Rust 写代码"), Lang::Zh);
        assert_eq!(Lang::guess(""), Lang::En);
    }
}
