//! Splitting a long answer for a platform limit (interim version; replaced by the fence-aware one).

use hermes_adapter::LengthUnit;

pub fn chunk_markdown(text: &str, max_len: usize, unit: LengthUnit) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut len = 0;
    for c in text.trim().chars() {
        if len + unit.char_len(c) > max_len {
            out.push(std::mem::take(&mut cur));
            len = 0;
        }
        len += unit.char_len(c);
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}
