//! Verdicts, one bit a record, in u64 words: the form the GPU writes and the host confirms 64 at a time.

/// Bit `i % 64` of word `i / 64` is the verdict of record `i` (1 = valid). Bits past `len` are zero.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bitmap {
    words: Vec<u64>,
    len: usize,
}

impl Bitmap {
    /// `len` verdicts, all invalid.
    pub fn new(len: usize) -> Self {
        Bitmap {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// Takes words produced elsewhere (a GPU kernel); clears any bits past `len`.
    ///
    /// # Panics
    /// When `words` is shorter than `len` needs: a backend bug, not user input.
    pub fn from_words(mut words: Vec<u64>, len: usize) -> Self {
        let needed = len.div_ceil(64);
        assert!(
            words.len() >= needed,
            "bitmap of {len} needs {needed} words, got {}",
            words.len()
        );
        words.truncate(needed);
        if len % 64 != 0 {
            if let Some(last) = words.last_mut() {
                *last &= (1u64 << (len % 64)) - 1;
            }
        }
        Bitmap { words, len }
    }

    /// Builds a bitmap from one verdict per record.
    pub fn from_bools(verdicts: impl IntoIterator<Item = bool>) -> Self {
        let mut map = Bitmap::default();
        for v in verdicts {
            if map.len % 64 == 0 {
                map.words.push(0);
            }
            if v {
                map.words[map.len / 64] |= 1 << (map.len % 64);
            }
            map.len += 1;
        }
        map
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// # Panics
    /// When `i >= len`.
    pub fn get(&self, i: usize) -> bool {
        assert!(i < self.len, "verdict {i} of {}", self.len);
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// # Panics
    /// When `i >= len`.
    pub fn set(&mut self, i: usize, valid: bool) {
        assert!(i < self.len, "verdict {i} of {}", self.len);
        let bit = 1u64 << (i % 64);
        if valid {
            self.words[i / 64] |= bit;
        } else {
            self.words[i / 64] &= !bit;
        }
    }

    /// True when every record is valid: whole words compare against all ones, 64 records at a time.
    pub fn all_valid(&self) -> bool {
        let full = self.len / 64;
        self.words[..full].iter().all(|&w| w == u64::MAX)
            && (self.len % 64 == 0 || self.words[full] == (1u64 << (self.len % 64)) - 1)
    }

    pub fn count_valid(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len).map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_and_all_valid() {
        for len in [0usize, 1, 63, 64, 65, 128, 200] {
            let mut map = Bitmap::new(len);
            assert_eq!(map.all_valid(), len == 0);
            for i in 0..len {
                map.set(i, true);
            }
            assert!(map.all_valid(), "len {len}");
            assert_eq!(map.count_valid(), len);
            if len > 0 {
                map.set(len - 1, false);
                assert!(!map.all_valid());
                assert!(!map.get(len - 1));
                assert_eq!(map.count_valid(), len - 1);
            }
        }
    }

    #[test]
    fn from_words_masks_the_tail_and_matches_from_bools() {
        let map = Bitmap::from_words(vec![u64::MAX, u64::MAX], 70);
        assert!(map.all_valid());
        assert_eq!(map.count_valid(), 70);
        let bools: Vec<bool> = (0..130).map(|i| i % 3 != 0).collect();
        let a = Bitmap::from_bools(bools.iter().copied());
        assert_eq!(a.iter().collect::<Vec<_>>(), bools);
        assert_eq!(Bitmap::from_words(a.words().to_vec(), 130), a);
    }
}
