//! HTML to readable text for `http_get`: the page's words without markup, scripts or
//! styles, one block element per line, entities decoded. Not a parser: a small scanner
//! that is good enough for articles and documentation pages, and never fails (malformed
//! markup just comes out as text).

/// Elements whose content is never text for a reader.
const SKIPPED: [&str; 7] = [
    "script", "style", "noscript", "template", "svg", "iframe", "object",
];

/// Elements that start a new line.
const BLOCKS: [&str; 36] = [
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "thead",
    "tr",
    "ul",
    "option",
];

/// The readable text of an HTML document, with `Title: …` first when it has a title.
pub fn html_to_text(html: &str) -> String {
    let lower = html.to_ascii_lowercase(); // same byte offsets as `html`
    let mut out = String::with_capacity(html.len() / 3);
    let mut title = None;
    let mut pre_depth = 0usize;
    let mut i = 0;
    while i < html.len() {
        let rest = &html[i..];
        if rest.starts_with('<') {
            let lrest = &lower[i..];
            if lrest.starts_with("<!--") {
                i += lrest.find("-->").map_or(rest.len(), |e| e + 3);
                continue;
            }
            if lrest.starts_with("<!") || lrest.starts_with("<?") {
                i += lrest.find('>').map_or(rest.len(), |e| e + 1);
                continue;
            }
            if let Some(tag) = read_tag(lrest) {
                let after = i + tag.len;
                if !tag.closing && SKIPPED.contains(&tag.name) {
                    i = skip_element(&lower, after, tag.name);
                    continue;
                }
                if !tag.closing && tag.name == "title" {
                    let end = lower[after..]
                        .find("</title")
                        .map_or(html.len(), |e| after + e);
                    let text = decode_entities(&html[after..end]);
                    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
                    if !text.is_empty() && title.is_none() {
                        title = Some(text);
                    }
                    i = skip_element(&lower, after, "title");
                    continue;
                }
                match tag.name {
                    "li" if !tag.closing => out.push_str("\n- "),
                    "td" | "th" if !tag.closing => out.push_str(" | "),
                    "pre" => {
                        pre_depth = if tag.closing {
                            pre_depth.saturating_sub(1)
                        } else {
                            pre_depth + 1
                        };
                        out.push('\n');
                    }
                    name if BLOCKS.contains(&name) => out.push('\n'),
                    _ => {}
                }
                i = after;
                continue;
            }
            // A `<` that opens no tag (`a < b`) is text.
            out.push('<');
            i += 1;
            continue;
        }
        if rest.starts_with('&') {
            let (text, used) = decode_one_entity(rest);
            out.push_str(&text);
            i += used;
            continue;
        }
        let Some(c) = rest.chars().next() else { break };
        if pre_depth == 0 && c.is_whitespace() {
            out.push(' ');
        } else {
            out.push(c);
        }
        i += c.len_utf8();
    }
    let mut text = String::new();
    if let Some(t) = title {
        text.push_str("Title: ");
        text.push_str(&t);
        text.push_str("\n\n");
    }
    text.push_str(&tidy(&out));
    text
}

/// An opening or closing tag at the start of `lower` (lower-cased text).
struct Tag<'a> {
    name: &'a str,
    closing: bool,
    /// Bytes from `<` to just after `>`.
    len: usize,
}

fn read_tag(lower: &str) -> Option<Tag<'_>> {
    let bytes = lower.as_bytes();
    let mut j = 1;
    let closing = bytes.get(1) == Some(&b'/');
    if closing {
        j += 1;
    }
    let name_start = j;
    while bytes.get(j).is_some_and(|b| b.is_ascii_alphanumeric()) {
        j += 1;
    }
    if j == name_start || !bytes[name_start].is_ascii_alphabetic() {
        return None;
    }
    let name = &lower[name_start..j];
    // Up to the `>` that is not inside a quoted attribute value.
    let mut quote = None;
    while let Some(&b) = bytes.get(j) {
        match (quote, b) {
            (None, b'"' | b'\'') => quote = Some(b),
            (Some(q), _) if q == b => quote = None,
            (None, b'>') => {
                return Some(Tag {
                    name,
                    closing,
                    len: j + 1,
                })
            }
            _ => {}
        }
        j += 1;
    }
    Some(Tag {
        name,
        closing,
        len: lower.len(),
    })
}

/// The position after `</name …>` at or after `from`, or the end.
fn skip_element(lower: &str, from: usize, name: &str) -> usize {
    let close = format!("</{name}");
    let mut at = from;
    while let Some(rel) = lower[at..].find(&close) {
        let start = at + rel;
        let after_name = start + close.len();
        // `</scripts>` is not `</script>`.
        let next = lower.as_bytes().get(after_name).copied();
        if next.is_none_or(|b| !b.is_ascii_alphanumeric()) {
            return lower[after_name..]
                .find('>')
                .map_or(lower.len(), |e| after_name + e + 1);
        }
        at = after_name;
    }
    lower.len()
}

/// Every entity in `text` decoded.
pub fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if rest.starts_with('&') {
            let (t, used) = decode_one_entity(rest);
            out.push_str(&t);
            i += used;
        } else if let Some(c) = rest.chars().next() {
            out.push(c);
            i += c.len_utf8();
        } else {
            break;
        }
    }
    out
}

/// The entity at the start of `text` (which starts with `&`) and the bytes it used; an
/// unknown or malformed entity is the `&` itself.
fn decode_one_entity(text: &str) -> (String, usize) {
    let end = text
        .char_indices()
        .take(12)
        .find(|&(_, c)| c == ';')
        .map(|(i, _)| i);
    let Some(end) = end else {
        return ("&".into(), 1);
    };
    let body = &text[1..end];
    let decoded = if let Some(num) = body.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok(),
            None => num.parse::<u32>().ok(),
        };
        code.and_then(char::from_u32).map(String::from)
    } else {
        named_entity(body).map(String::from)
    };
    match decoded {
        Some(s) => (s, end + 1),
        None => ("&".into(), 1),
    }
}

fn named_entity(name: &str) -> Option<&'static str> {
    Some(match name {
        "amp" => "&",
        "lt" => "<",
        "gt" => ">",
        "quot" => "\"",
        "apos" => "'",
        "nbsp" => " ",
        "mdash" => "—",
        "ndash" => "–",
        "hellip" => "…",
        "copy" => "©",
        "reg" => "®",
        "trade" => "™",
        "laquo" => "«",
        "raquo" => "»",
        "ldquo" => "“",
        "rdquo" => "”",
        "lsquo" => "‘",
        "rsquo" => "’",
        "bull" => "•",
        "middot" => "·",
        "times" => "×",
        "euro" => "€",
        "deg" => "°",
        _ => return None,
    })
}

/// Spaces collapsed inside lines, lines trimmed, empty lines dropped (HTML's own line
/// breaks are only white space; the lines here come from block elements).
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let line = line
            .split([' ', '\t'])
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if line.is_empty() || line == "|" {
            continue;
        }
        out.push_str(&line);
        out.push('\n');
    }
    if out.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_become_readable_text() {
        let cases: &[(&str, &str)] = &[
            ("<p>Hello <b>world</b></p>", "Hello world\n"),
            (
                "<html><head><title> My  Page </title><style>p{color:red}</style></head>\
                 <body><script>var x = '<p>no</p>';</script><h1>Head</h1><p>Text &amp; more</p></body></html>",
                "Title: My Page\n\nHead\nText & more\n",
            ),
            ("<ul><li>one</li><li>two</li></ul>", "- one\n- two\n"),
            ("a &lt; b &#62; c &#x41; &unknown; & d", "a < b > c A &unknown; & d\n"),
            ("x < y and <3", "x < y and <3\n"),
            ("<!-- hidden --><p>shown</p><!DOCTYPE x>", "shown\n"),
            ("<a href=\"x>y\">link</a> text", "link text\n"),
            ("<pre>  a\n    b</pre>", "a\nb\n"),
            ("<p>one</p>\n\n\n<p>two</p>", "one\ntwo\n"),
            ("<script>unclosed", "\n"),
            ("<SCRIPT>alert(1)</SCRIPT >ok", "ok\n"),
            ("<div>a<br>b<br/>c</div>", "a\nb\nc\n"),
            ("<table><tr><td>1</td><td>2</td></tr></table>", "| 1 | 2\n"),
            ("héllo <i>wörld</i> 中文", "héllo wörld 中文\n"),
        ];
        for (html, text) in cases {
            assert_eq!(html_to_text(html), *text, "{html}");
        }
    }
}
