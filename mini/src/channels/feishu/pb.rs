//! The few fields of the connection's protobuf `Frame` (field numbers of the public
//! `pbbp2.proto`): 1 SeqID, 2 LogID, 3 service, 4 method, 5 headers (key 1, value 2),
//! 6 payload_encoding, 7 payload_type, 8 payload, 9 LogIDNew. Unknown fields are
//! skipped on reading; everything read is written back, so a reply echoes its frame.

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frame {
    pub seq_id: u64,
    pub log_id: u64,
    pub service: i64,
    pub method: i64,
    pub headers: Vec<(String, String)>,
    pub payload_encoding: String,
    pub payload_type: String,
    pub payload: Vec<u8>,
    pub log_id_new: String,
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    put_varint(out, field << 3 | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn get_varint(data: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// A field's value: a varint (`Ok`) or bytes (`Err`).
type Field<'a> = Result<u64, &'a [u8]>;

/// The fields of a message: `(number, value)`.
fn fields(data: &[u8]) -> Option<Vec<(u64, Field<'_>)>> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < data.len() {
        let tag = get_varint(data, &mut at)?;
        let value = match tag & 7 {
            0 => Ok(get_varint(data, &mut at)?),
            1 => {
                at = at.checked_add(8).filter(|&e| e <= data.len())?;
                continue;
            }
            2 => {
                let len = usize::try_from(get_varint(data, &mut at)?).ok()?;
                let end = at.checked_add(len).filter(|&e| e <= data.len())?;
                let bytes = &data[at..end];
                at = end;
                Err(bytes)
            }
            5 => {
                at = at.checked_add(4).filter(|&e| e <= data.len())?;
                continue;
            }
            _ => return None,
        };
        out.push((tag >> 3, value));
    }
    Some(out)
}

fn text(b: &[u8]) -> Option<String> {
    String::from_utf8(b.to_vec()).ok()
}

impl Frame {
    pub fn header(&self, key: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.payload.len() + 64);
        for (field, v) in [(1, self.seq_id), (2, self.log_id)] {
            put_varint(&mut out, field << 3);
            put_varint(&mut out, v);
        }
        // int32 fields: a negative one is ten bytes of two's complement.
        for (field, v) in [(3, self.service), (4, self.method)] {
            put_varint(&mut out, field << 3);
            put_varint(&mut out, v as u64);
        }
        for (k, v) in &self.headers {
            let mut h = Vec::new();
            put_bytes(&mut h, 1, k.as_bytes());
            put_bytes(&mut h, 2, v.as_bytes());
            put_bytes(&mut out, 5, &h);
        }
        for (field, s) in [(6, &self.payload_encoding), (7, &self.payload_type)] {
            if !s.is_empty() {
                put_bytes(&mut out, field, s.as_bytes());
            }
        }
        if !self.payload.is_empty() {
            put_bytes(&mut out, 8, &self.payload);
        }
        if !self.log_id_new.is_empty() {
            put_bytes(&mut out, 9, self.log_id_new.as_bytes());
        }
        out
    }

    /// `None` for bytes that are not a frame.
    pub fn decode(data: &[u8]) -> Option<Frame> {
        let mut f = Frame::default();
        for (field, value) in fields(data)? {
            match (field, value) {
                (1, Ok(v)) => f.seq_id = v,
                (2, Ok(v)) => f.log_id = v,
                (3, Ok(v)) => f.service = v as i32 as i64,
                (4, Ok(v)) => f.method = v as i32 as i64,
                (5, Err(b)) => {
                    let (mut k, mut v) = (String::new(), String::new());
                    for (n, x) in fields(b)? {
                        match (n, x) {
                            (1, Err(s)) => k = text(s)?,
                            (2, Err(s)) => v = text(s)?,
                            _ => {}
                        }
                    }
                    f.headers.push((k, v));
                }
                (6, Err(b)) => f.payload_encoding = text(b)?,
                (7, Err(b)) => f.payload_type = text(b)?,
                (8, Err(b)) => f.payload = b.to_vec(),
                (9, Err(b)) => f.log_id_new = text(b)?,
                // A known field of the wrong wire type: not a frame.
                (1..=9, _) => return None,
                _ => {}
            }
        }
        Some(f)
    }
}
