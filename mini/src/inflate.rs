//! Inflate (RFC 1951) for what the binary stores compressed (`mini/build.rs`): the UI
//! files, gzipped (a browser takes them as they are; a client that does not accept gzip
//! — curl without `--compressed`, a script — gets them restored by this), and the
//! Chinese dictionary, deflated. A few hundred
//! bytes of code instead of a compression library; the input is our own build's
//! output, but a damaged one is an error, never a panic.

/// Why a stream could not be inflated.
#[derive(Debug, PartialEq, Eq)]
pub struct Corrupt;

/// The original bytes of a gzip member written by `build.rs` (fixed ten-byte header,
/// no optional fields).
pub fn gunzip(gz: &[u8]) -> Result<Vec<u8>, Corrupt> {
    let body = gz
        .get(10..gz.len().checked_sub(8).ok_or(Corrupt)?)
        .ok_or(Corrupt)?;
    if gz[..4] != [0x1f, 0x8b, 8, 0] {
        return Err(Corrupt);
    }
    let size = u32::from_le_bytes(gz[gz.len() - 4..].try_into().map_err(|_| Corrupt)?);
    let out = inflate(body, size as usize)?;
    (out.len() == size as usize).then_some(out).ok_or(Corrupt)
}

/// The bits of the stream, least significant first.
struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
    buf: u32,
    count: u32,
}

impl Bits<'_> {
    fn take(&mut self, n: u32) -> Result<u32, Corrupt> {
        while self.count < n {
            let byte = *self.data.get(self.pos).ok_or(Corrupt)?;
            self.buf |= u32::from(byte) << self.count;
            self.pos += 1;
            self.count += 8;
        }
        let v = self.buf & ((1u32 << n) - 1);
        self.buf = self.buf.checked_shr(n).unwrap_or(0);
        self.count -= n;
        Ok(v)
    }
}

/// A canonical Huffman code: how many codes of each length, and the symbols in code
/// order.
struct Code {
    count: [u16; 16],
    symbol: Vec<u16>,
}

impl Code {
    fn new(lengths: &[u8]) -> Code {
        let mut count = [0u16; 16];
        for &l in lengths {
            count[usize::from(l & 15)] += 1;
        }
        count[0] = 0;
        let mut offset = [0u16; 16];
        for l in 1..15 {
            offset[l + 1] = offset[l] + count[l];
        }
        let mut symbol = vec![0u16; lengths.len()];
        for (s, &l) in lengths.iter().enumerate() {
            if l != 0 {
                let o = &mut offset[usize::from(l & 15)];
                symbol[usize::from(*o)] = s as u16;
                *o += 1;
            }
        }
        Code { count, symbol }
    }

    fn decode(&self, bits: &mut Bits) -> Result<u16, Corrupt> {
        let (mut code, mut first, mut index) = (0u32, 0u32, 0u32);
        for len in 1..16 {
            code |= bits.take(1)?;
            let count = u32::from(self.count[len]);
            if code < first + count {
                return self
                    .symbol
                    .get((index + code - first) as usize)
                    .copied()
                    .ok_or(Corrupt);
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        Err(Corrupt)
    }
}

const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];
/// The order code-length code lengths come in (RFC 1951 3.2.7).
const ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// Raw deflate data to its bytes; `hint` is the expected size.
pub fn inflate(data: &[u8], hint: usize) -> Result<Vec<u8>, Corrupt> {
    let mut bits = Bits {
        data,
        pos: 0,
        buf: 0,
        count: 0,
    };
    let mut out = Vec::with_capacity(hint.min(1 << 24));
    loop {
        let last = bits.take(1)? == 1;
        match bits.take(2)? {
            0 => {
                bits.buf = 0;
                bits.count = 0;
                let head = data.get(bits.pos..bits.pos + 4).ok_or(Corrupt)?;
                let len = usize::from(u16::from_le_bytes([head[0], head[1]]));
                if u16::from_le_bytes([head[2], head[3]]) != !(len as u16) {
                    return Err(Corrupt);
                }
                bits.pos += 4;
                out.extend_from_slice(data.get(bits.pos..bits.pos + len).ok_or(Corrupt)?);
                bits.pos += len;
            }
            1 => {
                let mut lengths = [8u8; 288];
                lengths[144..256].fill(9);
                lengths[256..280].fill(7);
                codes(
                    &mut bits,
                    &mut out,
                    &Code::new(&lengths),
                    &Code::new(&[5; 30]),
                )?;
            }
            2 => {
                let (lit, dist) = dynamic(&mut bits)?;
                codes(&mut bits, &mut out, &lit, &dist)?;
            }
            _ => return Err(Corrupt),
        }
        if last {
            return Ok(out);
        }
    }
}

/// The two codes of a dynamic block.
fn dynamic(bits: &mut Bits) -> Result<(Code, Code), Corrupt> {
    let nlen = bits.take(5)? as usize + 257;
    let ndist = bits.take(5)? as usize + 1;
    let ncode = bits.take(4)? as usize + 4;
    if nlen > 286 || ndist > 30 {
        return Err(Corrupt);
    }
    let mut lengths = [0u8; 19];
    for &i in &ORDER[..ncode] {
        lengths[i] = bits.take(3)? as u8;
    }
    let lencode = Code::new(&lengths);
    let mut lengths = vec![0u8; nlen + ndist];
    let mut i = 0;
    while i < nlen + ndist {
        let sym = lencode.decode(bits)?;
        let (value, times) = match sym {
            0..=15 => (sym as u8, 1),
            16 => (*lengths[..i].last().ok_or(Corrupt)?, 3 + bits.take(2)?),
            17 => (0, 3 + bits.take(3)?),
            _ => (0, 11 + bits.take(7)?),
        };
        let end = i + times as usize;
        lengths.get_mut(i..end).ok_or(Corrupt)?.fill(value);
        i = end;
    }
    Ok((Code::new(&lengths[..nlen]), Code::new(&lengths[nlen..])))
}

/// The literals and copies of one block, up to its end code.
fn codes(bits: &mut Bits, out: &mut Vec<u8>, lit: &Code, dist: &Code) -> Result<(), Corrupt> {
    loop {
        let sym = usize::from(lit.decode(bits)?);
        match sym {
            0..=255 => out.push(sym as u8),
            256 => return Ok(()),
            _ => {
                let i = sym - 257;
                let len = usize::from(*LEN_BASE.get(i).ok_or(Corrupt)?)
                    + bits.take(u32::from(LEN_EXTRA[i]))? as usize;
                let d = usize::from(dist.decode(bits)?);
                let back = usize::from(*DIST_BASE.get(d).ok_or(Corrupt)?)
                    + bits.take(u32::from(DIST_EXTRA[d]))? as usize;
                let from = out.len().checked_sub(back).ok_or(Corrupt)?;
                for k in 0..len {
                    out.push(out[from + k]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    // (Compiled into bench/recall too, which runs no tests.)
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn stored_and_fixed_blocks_inflate() {
        // A stored block "hi" (final), and "a" with the fixed code (from zlib).
        assert_eq!(
            inflate(&[1, 2, 0, 0xfd, 0xff, b'h', b'i'], 2),
            Ok(b"hi".to_vec())
        );
        assert_eq!(inflate(&[0x4b, 0x04, 0x00], 1), Ok(b"a".to_vec()));
        // Repeats through a distance: "abcabcabcabc".
        assert_eq!(
            inflate(&[0x4b, 0x4c, 0x4a, 0x4e, 0x84, 0x21, 0x00], 12),
            Ok(b"abcabcabcabc".to_vec())
        );
    }
}
