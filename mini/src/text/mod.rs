//! Chinese word segmentation for the core's [`Tokenizer`]: jieba-rs with an embedded
//! trimmed dictionary (or a full one from config), loaded lazily on the first text that
//! contains CJK characters. Text without CJK never loads it: it goes through the core's
//! fallback tokenizer, so an English-only user pays nothing.

use std::path::PathBuf;

use evolve_core::text::Tokenizer;

/// The shell's tokenizer: jieba for CJK runs, the core's fallback rules for the rest
/// (same ASCII words and stop lists, so keywords of English text are identical).
pub struct ShellTokenizer {
    dict_path: Option<PathBuf>,
}

impl ShellTokenizer {
    /// No I/O: the dictionary loads on the first CJK text. `dict_path`: a full jieba
    /// dictionary file (`word freq [tag]` lines) instead of the embedded one; if it
    /// cannot be read, a warning is logged and the embedded one is used.
    pub fn new(dict_path: Option<PathBuf>) -> Self {
        ShellTokenizer { dict_path }
    }

    /// Whether the dictionary has been loaded (for tests and RSS figures).
    pub fn is_loaded(&self) -> bool {
        let _ = &self.dict_path;
        todo!()
    }
}

impl Tokenizer for ShellTokenizer {
    fn for_each_keyword(&self, text: &str, emit: &mut dyn FnMut(&str)) {
        let _ = (text, emit);
        todo!()
    }
}
