//! Text for the Bot API: HTML escaping (the three characters its HTML mode reserves) and
//! chunking at the 4,096-character limit, on line breaks where there is one.

use crate::api::MAX_TEXT_CHARS;

/// Escapes `&`, `<` and `>` for `parse_mode: HTML`.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// Splits `text` into pieces of at most `limit` characters, preferring to cut after a newline
/// in the second half of a piece. Nothing is dropped: the pieces joined give `text` back.
pub fn chunk(text: &str, limit: usize) -> Vec<String> {
    let limit = limit.clamp(1, MAX_TEXT_CHARS);
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= limit {
        return vec![text.to_owned()];
    }
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        let mut end = (start + limit).min(chars.len());
        if end < chars.len()
            && let Some(newline) = chars[start + limit / 2..end]
                .iter()
                .rposition(|&c| c == '\n')
        {
            end = start + limit / 2 + newline + 1;
        }
        pieces.push(chars[start..end].iter().collect());
        start = end;
    }
    pieces
}

/// The text an HTML message shows, for its plain-text retry: tags dropped (every `<` of the
/// text itself was escaped, so a raw `<` opens a tag), entities turned back into characters.
pub fn html_to_plain(html: &str) -> String {
    let mut shown = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match (in_tag, c) {
            (false, '<') => in_tag = true,
            (true, '>') => in_tag = false,
            (false, c) => shown.push(c),
            (true, _) => {}
        }
    }
    shown
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_keep_every_character_and_stay_under_the_limit() {
        let text: String = (0..10_000)
            .map(|i| if i % 97 == 0 { '\n' } else { 'é' })
            .collect();
        let pieces = chunk(&text, MAX_TEXT_CHARS);
        assert_eq!(pieces.len(), 3);
        assert!(pieces.iter().all(|p| p.chars().count() <= MAX_TEXT_CHARS));
        assert_eq!(pieces.concat(), text);
    }

    #[test]
    fn html_reserved_characters_are_escaped() {
        assert_eq!(escape_html("a<b> & c"), "a&lt;b&gt; &amp; c");
    }

    #[test]
    fn the_plain_retry_shows_the_text_without_tags_or_entities() {
        assert_eq!(
            html_to_plain(
                "<b>Claude</b> · ran <code>a &lt; b &amp;&amp; c</code>\n<pre>x &gt; y</pre>"
            ),
            "Claude · ran a < b && c\nx > y"
        );
        assert_eq!(html_to_plain("no markup"), "no markup");
    }
}
