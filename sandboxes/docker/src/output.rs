//! A command's output, capped: the head and the tail are kept, the middle is counted and cut.

/// Collects output up to `limit` bytes: the first half as it comes, then a rolling tail.
#[derive(Debug)]
pub(crate) struct CappedOutput {
    limit: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
    /// Bytes dropped from the front of `tail` so far.
    cut: usize,
}

impl CappedOutput {
    pub(crate) fn new(limit: usize) -> Self {
        CappedOutput {
            limit,
            head: Vec::new(),
            tail: Vec::new(),
            cut: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        let head_room = (self.limit / 2).saturating_sub(self.head.len());
        if self.tail.is_empty() && head_room > 0 {
            let take = head_room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend_from_slice(bytes);
        let tail_limit = self.limit - self.limit / 2;
        // Trim in batches so a stream of small chunks does not shift the buffer every time.
        if self.tail.len() > tail_limit.saturating_mul(2).max(4096) {
            self.trim(tail_limit);
        }
    }

    fn trim(&mut self, tail_limit: usize) {
        if self.tail.len() > tail_limit {
            let excess = self.tail.len() - tail_limit;
            self.tail.drain(..excess);
            self.cut += excess;
        }
    }

    /// The text, with a note of how many bytes were cut between head and tail.
    pub(crate) fn finish(mut self) -> String {
        let tail_limit = self.limit - self.limit / 2;
        self.trim(tail_limit);
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.cut > 0 {
            if !text.ends_with('\n') && !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&format!(
                "[… {} bytes of output cut; the first and last {} kept …]\n",
                self.cut, tail_limit
            ));
        }
        text.push_str(&String::from_utf8_lossy(&self.tail));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut out = CappedOutput::new(100);
        out.push(b"hello ");
        out.push(b"world");
        assert_eq!(out.finish(), "hello world");
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_says_how_much_was_cut() {
        let mut out = CappedOutput::new(10);
        for chunk in ["0123", "4567", "89ab", "cdef", "ghij"] {
            out.push(chunk.as_bytes());
        }
        let text = out.finish();
        assert!(text.starts_with("01234\n"), "{text}");
        assert!(text.ends_with("fghij"), "{text}");
        assert!(text.contains("10 bytes of output cut"), "{text}");
    }

    #[test]
    fn many_small_chunks_stay_within_the_limit() {
        let mut out = CappedOutput::new(1000);
        for i in 0..100_000u32 {
            out.push(format!("{}\n", i % 10).as_bytes());
        }
        let text = out.finish();
        assert!(text.len() < 1100, "{}", text.len());
        assert!(text.ends_with("8\n9\n"));
    }
}
