//! Zone files (TZif, RFC 8536, versions 1–4) read from their bytes.
//!
//! Decides what a zone file says: the 64-bit section is used when the file has one
//! (version 2+), so transitions after 2038 are right. Before the first transition the
//! first local time type applies (RFC 8536 §3.2). After the last transition the footer's
//! POSIX TZ string (`CET-1CEST,M3.5.0,M10.5.0/3`, see [`PosixTz`]) gives the offsets, so
//! a "slim" file without precomputed future transitions still knows next year's DST; a
//! footer that cannot be read falls back to the last transition's offset. A short or
//! damaged file is a [`TzifError`], never a panic. Finding and reading the file is the
//! shell's work.

use alloc::vec::Vec;

use super::error::TzifError;
use super::posix_tz::PosixTz;
use super::zone::Zone;

/// The offsets of a zone read from a TZif file (or from a POSIX TZ string alone).
#[derive(Debug, Clone, PartialEq)]
pub struct Tzif {
    /// Transition instants, ascending.
    transitions: Vec<i64>,
    /// The offset in force from each transition on.
    offsets_after: Vec<i32>,
    /// The offset before the first transition (local time type 0).
    initial: i32,
    /// The footer's rule for instants after the last transition.
    rule: Option<PosixTz>,
}

impl Tzif {
    /// Reads a TZif file (RFC 8536): the version-1 block, and for version 2+ the 64-bit
    /// block and the footer.
    pub fn parse(bytes: &[u8]) -> Result<Tzif, TzifError> {
        let mut r = Reader { bytes, at: 0 };
        let v1 = Header::read(&mut r)?;
        if v1.version == 0 {
            return v1.read_block(&mut r, 4, None);
        }
        r.skip(v1.block_len(4))?;
        let v2 = Header::read(&mut r)?;
        let start = r.at.saturating_add(v2.block_len(8));
        let footer = bytes
            .get(start..)
            .and_then(|rest| rest.strip_prefix(b"\n"))
            .and_then(|rest| {
                rest.iter()
                    .position(|&b| b == b'\n')
                    .map(|end| &rest[..end])
            })
            .and_then(|tz| core::str::from_utf8(tz).ok())
            .and_then(PosixTz::parse);
        v2.read_block(&mut r, 8, footer)
    }
}

/// A zone without transitions: the rule from the first instant on (`TZ` set to a POSIX
/// TZ string that names no zone file).
impl From<PosixTz> for Tzif {
    fn from(rule: PosixTz) -> Tzif {
        Tzif {
            transitions: Vec::new(),
            offsets_after: Vec::new(),
            initial: rule.std_offset(),
            rule: Some(rule),
        }
    }
}

impl Zone for Tzif {
    fn offset_at_utc(&self, utc: i64) -> i32 {
        let after = self.transitions.partition_point(|&t| t <= utc);
        if after == self.transitions.len() {
            if let Some(rule) = &self.rule {
                return rule.offset_at_utc(utc);
            }
        }
        match after.checked_sub(1) {
            Some(i) => self.offsets_after[i],
            None => self.initial,
        }
    }
}

/// A byte cursor that fails instead of panicking on a short file.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], TzifError> {
        let end = self.at.checked_add(n).ok_or(TzifError::CutShort)?;
        let s = self.bytes.get(self.at..end).ok_or(TzifError::CutShort)?;
        self.at = end;
        Ok(s)
    }

    fn skip(&mut self, n: usize) -> Result<(), TzifError> {
        self.take(n).map(|_| ())
    }

    /// How many items of `size` bytes the rest of the file can hold at most: a bound for
    /// allocations, so a header that claims four billion transitions costs nothing.
    fn room(&self, size: usize) -> usize {
        self.bytes.len().saturating_sub(self.at) / size
    }

    fn u32(&mut self) -> Result<u32, TzifError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn time(&mut self, size: usize) -> Result<i64, TzifError> {
        let b = self.take(size)?;
        Ok(if size == 8 {
            i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
        } else {
            i64::from(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        })
    }
}

/// The counts of a TZif header.
struct Header {
    version: u8,
    isutcnt: usize,
    isstdcnt: usize,
    leapcnt: usize,
    timecnt: usize,
    typecnt: usize,
    charcnt: usize,
}

impl Header {
    fn read(r: &mut Reader) -> Result<Header, TzifError> {
        if r.take(4)? != b"TZif" {
            return Err(TzifError::NotTzif);
        }
        let version = match r.take(1)?[0] {
            0 => 0,
            v @ b'2'..=b'4' => v - b'0',
            _ => return Err(TzifError::UnknownVersion),
        };
        r.skip(15)?;
        let mut n = [0usize; 6];
        for slot in &mut n {
            *slot = r.u32()? as usize;
        }
        let [isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt] = n;
        if typecnt == 0 {
            return Err(TzifError::NoLocalTimeTypes);
        }
        Ok(Header {
            version,
            isutcnt,
            isstdcnt,
            leapcnt,
            timecnt,
            typecnt,
            charcnt,
        })
    }

    /// Bytes of the data block after this header, with `size`-byte times (saturating:
    /// a length past the end of any file is as good as the exact one).
    fn block_len(&self, size: usize) -> usize {
        [
            self.timecnt.saturating_mul(size),
            self.timecnt,
            self.typecnt.saturating_mul(6),
            self.charcnt,
            self.leapcnt.saturating_mul(size + 4),
            self.isstdcnt,
            self.isutcnt,
        ]
        .into_iter()
        .fold(0, usize::saturating_add)
    }

    fn read_block(
        &self,
        r: &mut Reader,
        size: usize,
        rule: Option<PosixTz>,
    ) -> Result<Tzif, TzifError> {
        let mut transitions = Vec::with_capacity(self.timecnt.min(r.room(size)));
        for _ in 0..self.timecnt {
            transitions.push(r.time(size)?);
        }
        if transitions.windows(2).any(|w| w[0] >= w[1]) {
            return Err(TzifError::TransitionsOutOfOrder);
        }
        let indices = r.take(self.timecnt)?;
        let mut offsets = Vec::with_capacity(self.typecnt.min(r.room(6)));
        for _ in 0..self.typecnt {
            let utoff = r.u32()? as i32;
            r.skip(2)?; // isdst, desigidx
            if utoff == i32::MIN || utoff.abs() > 26 * 3600 {
                return Err(TzifError::OffsetOutOfRange);
            }
            offsets.push(utoff);
        }
        let mut offsets_after = Vec::with_capacity(self.timecnt);
        for &i in indices {
            offsets_after.push(
                *offsets
                    .get(usize::from(i))
                    .ok_or(TzifError::MissingLocalTimeType)?,
            );
        }
        Ok(Tzif {
            transitions,
            offsets_after,
            initial: offsets[0],
            rule,
        })
    }
}
