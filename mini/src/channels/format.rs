//! The model's Markdown as chat platforms render it, and long answers cut to fit.
//!
//! [`telegram_html`] turns Markdown into the small HTML subset of Telegram's
//! `parse_mode: HTML` (`b`, `i`, `s`, `code`, `pre`, `a`): every `&`, `<` and `>` of the
//! text is escaped first, so nothing the model (or a page it read) writes can become
//! markup; only the constructs recognised here add tags, always balanced. What it does
//! not recognise stays as the characters it was.
//!
//! [`split`] cuts a long answer into pieces that each fit one message, between lines
//! where it can, and closes a code fence at a cut and opens it again in the next piece,
//! so every piece renders on its own.

use evolve_core::text::escape_html as escape;

/// `text` as Telegram HTML (see the module docs).
pub fn telegram_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut fence: Option<String> = None;
    let mut code = String::new();
    for line in text.split('\n') {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("```") {
            match fence.take() {
                None => {
                    fence = Some(rest.trim().to_string());
                    code.clear();
                }
                Some(lang) => {
                    push_pre(&mut out, &lang, &code);
                    out.push('\n');
                }
            }
            continue;
        }
        if fence.is_some() {
            if !code.is_empty() {
                code.push('\n');
            }
            code.push_str(line);
            continue;
        }
        out.push_str(&block_line(line));
        out.push('\n');
    }
    // A fence still open (an answer cut mid-stream) is shown as code all the same.
    if let Some(lang) = fence {
        push_pre(&mut out, &lang, &code);
    }
    while out.ends_with('\n') {
        out.pop();
    }
    out
}

fn push_pre(out: &mut String, lang: &str, code: &str) {
    let lang: String = lang
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+'))
        .collect();
    if lang.is_empty() {
        out.push_str("<pre>");
    } else {
        out.push_str(&format!("<pre><code class=\"language-{lang}\">"));
    }
    out.push_str(&escape(code));
    out.push_str(if lang.is_empty() {
        "</pre>"
    } else {
        "</code></pre>"
    });
}

/// One line outside code: headings bold, list bullets as •, the rest inline.
fn block_line(line: &str) -> String {
    let trimmed = line.trim_start();
    let indent = &line[..line.len() - trimmed.len()];
    let hashes = trimmed.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        return format!("<b>{}</b>", inline(trimmed[hashes..].trim()));
    }
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = trimmed.strip_prefix(bullet) {
            return format!("{indent}• {}", inline(rest));
        }
    }
    format!("{indent}{}", inline(trimmed))
}

/// Inline Markdown of one line: `code`, **bold**, __bold__, *italic*, ~~strike~~,
/// [text](http…).
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some((html, used)) = span(rest) {
            out.push_str(&html);
            rest = &rest[used..];
            continue;
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push_str(&escape(c.encode_utf8(&mut [0; 4])));
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The construct that starts `text`, as HTML, and how many bytes it took.
fn span(text: &str) -> Option<(String, usize)> {
    if let Some(body) = text.strip_prefix('`') {
        let end = body.find('`')?;
        if end == 0 {
            return None;
        }
        return Some((format!("<code>{}</code>", escape(&body[..end])), end + 2));
    }
    for (mark, tag) in [("**", "b"), ("__", "b"), ("~~", "s")] {
        if let Some(found) = delimited(text, mark) {
            return Some((format!("<{tag}>{}</{tag}>", inline(found)), found.len() + 4));
        }
    }
    if text.starts_with('*') && !text.starts_with("**") {
        if let Some(found) = delimited(text, "*") {
            return Some((format!("<i>{}</i>", inline(found)), found.len() + 2));
        }
    }
    if let Some(body) = text.strip_prefix('[') {
        let close = body.find("](")?;
        let label = &body[..close];
        let after = &body[close + 2..];
        let end = after.find(')')?;
        let url = &after[..end];
        let web = url.starts_with("http://") || url.starts_with("https://");
        if label.is_empty() || !web || url.contains(char::is_whitespace) {
            return None;
        }
        return Some((
            format!("<a href=\"{}\">{}</a>", escape(url), inline(label)),
            1 + close + 2 + end + 1,
        ));
    }
    None
}

/// The text between `mark` at the start of `text` and its next `mark`, when it is not
/// empty and does not start or end with a space (`2 * 3 * 4` is no emphasis).
fn delimited<'t>(text: &'t str, mark: &str) -> Option<&'t str> {
    let body = text.strip_prefix(mark)?;
    let end = body.find(mark)?;
    let found = &body[..end];
    let spaced = found.starts_with(char::is_whitespace) || found.ends_with(char::is_whitespace);
    (!found.is_empty() && !spaced).then_some(found)
}

/// Length as Telegram counts it (UTF-16 code units).
fn units(text: &str) -> usize {
    text.encode_utf16().count()
}

/// `text` cut into pieces of at most `limit` UTF-16 units each (of Markdown, which
/// renders no longer), between lines where a line fits, a fence closed at a cut and
/// opened again after it. Empty text is no piece.
pub fn split(text: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(16);
    let mut pieces = Vec::new();
    let mut cur = String::new();
    let mut fence: Option<String> = None;
    for line in text.split('\n') {
        let opener = line.trim_start().strip_prefix("```").map(str::to_string);
        // Room kept for closing a fence this piece leaves open.
        let reserve = if fence.is_some() || opener.is_some() {
            4
        } else {
            0
        };
        let needed = units(line) + usize::from(!cur.is_empty());
        if !cur.is_empty() && units(&cur) + needed + reserve > limit {
            close_piece(&mut pieces, &mut cur, &fence);
        }
        let mut line = line;
        // A line longer than a piece on its own: cut between characters.
        while units(line) + reserve + units(&cur) > limit {
            let room = limit.saturating_sub(units(&cur) + reserve + 1).max(1);
            let mut at = 0;
            let mut used = 0;
            for (i, c) in line.char_indices() {
                if used + c.len_utf16() > room {
                    break;
                }
                used += c.len_utf16();
                at = i + c.len_utf8();
            }
            if at == 0 {
                at = line.chars().next().map_or(line.len(), char::len_utf8);
            }
            if !cur.is_empty() {
                cur.push('\n');
            }
            cur.push_str(&line[..at]);
            line = &line[at..];
            close_piece(&mut pieces, &mut cur, &fence);
        }
        if !cur.is_empty() {
            cur.push('\n');
        }
        cur.push_str(line);
        if let Some(lang) = opener {
            fence = match fence {
                None => Some(lang.trim().to_string()),
                Some(_) => None,
            };
        }
    }
    if !cur.trim().is_empty() {
        pieces.push(cur);
    }
    pieces
}

/// Ends the current piece (closing an open fence) and starts the next (opening it again).
fn close_piece(pieces: &mut Vec<String>, cur: &mut String, fence: &Option<String>) {
    let mut piece = std::mem::take(cur);
    if let Some(lang) = fence {
        piece.push_str("\n```");
        *cur = format!("```{lang}");
    }
    if !piece.trim().is_empty() {
        pieces.push(piece);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_the_html_telegram_renders() {
        let cases = [
            ("plain", "plain"),
            ("a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"),
            ("**bold** and *it*", "<b>bold</b> and <i>it</i>"),
            ("__bold__ ~~gone~~", "<b>bold</b> <s>gone</s>"),
            ("`x<y>`", "<code>x&lt;y&gt;</code>"),
            ("**`code` in bold**", "<b><code>code</code> in bold</b>"),
            ("2 * 3 * 4", "2 * 3 * 4"),
            ("snake_case_name", "snake_case_name"),
            ("**unclosed", "**unclosed"),
            ("# Title", "<b>Title</b>"),
            ("- one\n- two", "• one\n• two"),
            (
                "[docs](https://x.org/a?b=1&c=\"2\")",
                "<a href=\"https://x.org/a?b=1&amp;c=&quot;2&quot;\">docs</a>",
            ),
            ("[bad](javascript:alert(1))", "[bad](javascript:alert(1))"),
            (
                "```rust\nfn a() -> u8 { 1 < 2 }\n```",
                "<pre><code class=\"language-rust\">fn a() -&gt; u8 { 1 &lt; 2 }</code></pre>",
            ),
            ("```\nopen <b>", "<pre>open &lt;b&gt;</pre>"),
            ("<b>not a tag</b>", "&lt;b&gt;not a tag&lt;/b&gt;"),
            ("中文 **粗体**", "中文 <b>粗体</b>"),
        ];
        for (md, html) in cases {
            assert_eq!(telegram_html(md), html, "{md:?}");
        }
    }

    #[test]
    fn long_text_is_cut_into_pieces_that_fit_and_render_alone() {
        // Lines of 10 units: four to a piece of 45.
        let text = (0..10).map(|i| format!("line {i:04}")).collect::<Vec<_>>();
        let pieces = split(&text.join("\n"), 45);
        assert_eq!(pieces.len(), 3, "{pieces:?}");
        assert_eq!(pieces.join("\n"), text.join("\n"));
        // One line longer than a piece: cut between characters (3-byte CJK).
        let zh = "中".repeat(100);
        let pieces = split(&zh, 40);
        assert!(pieces.iter().all(|p| units(p) <= 40), "{pieces:?}");
        assert_eq!(pieces.concat().replace('\n', ""), zh);
        // An emoji is two units: never cut in half.
        let emoji = "😀".repeat(30);
        let pieces = split(&emoji, 21);
        assert!(pieces.iter().all(|p| units(p) <= 21), "{pieces:?}");
        assert_eq!(pieces.concat().replace('\n', ""), emoji);
        // A fence across a cut is closed and opened again.
        let code = format!("```py\n{}\n```", ["print(1)"; 12].join("\n"));
        let pieces = split(&code, 40);
        assert!(pieces.len() > 1);
        for p in &pieces {
            assert!(units(p) <= 40, "{p:?}");
            assert_eq!(p.matches("```").count() % 2, 0, "{p:?}");
            assert!(telegram_html(p).starts_with("<pre>"), "{p:?}");
        }
        assert!(split("", 100).is_empty());
        assert_eq!(split("short", 4096), vec!["short".to_string()]);
    }
}
