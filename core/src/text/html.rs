//! Text put into HTML: every character HTML reads as markup written as an entity, so
//! nothing a model, a page or a person wrote can open a tag or an attribute. One rule for
//! the transcript export, chat platforms' HTML and the OAuth callback page.

use alloc::string::String;

/// `text` with `&`, `<`, `>`, `"` and `'` as entities (safe in element text and in a
/// quoted attribute).
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_become_entities_and_the_rest_stays() {
        let cases = [
            ("plain 中文", "plain 中文"),
            ("<b>x</b>", "&lt;b&gt;x&lt;/b&gt;"),
            ("a & b", "a &amp; b"),
            ("&amp;", "&amp;amp;"),
            ("\"q\" 'r'", "&quot;q&quot; &#39;r&#39;"),
            ("", ""),
        ];
        for (text, want) in cases {
            assert_eq!(escape_html(text), want, "{text}");
        }
    }
}
